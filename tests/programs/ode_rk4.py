"""Fitting the parameters of an ODE's dynamics, solved by a user-written fourth-order
Runge-Kutta that takes the dynamics as a function (after autograd's examples/ode_net.py)."""

import numpy as np

NEEDS = "callbacks"


def rk4(f, y0, t, params):
    """Integrates dy/dt = f(y, t, params) over the time grid t."""
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        k1 = f(y, t[i], params)
        k2 = f(y + h / 2 * k1, t[i] + h / 2, params)
        k3 = f(y + h / 2 * k2, t[i] + h / 2, params)
        k4 = f(y + h * k3, t[i] + h, params)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return np.stack(ys)


def nn_dynamics(state, time, params):
    # A one-hidden-layer net gives the time derivative of the state.
    state_and_time = np.hstack([state, np.array([time])])
    hidden = np.tanh(np.dot(state_and_time, params[0]) + params[1])
    return np.dot(hidden, params[2]) + params[3]


def true_dynamics(state, time, A):
    return np.dot(state**3, A)


t = np.linspace(0.0, 1.0, 8)
true_y0 = np.array([2.0, 0.0])
true_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
target = rk4(true_dynamics, true_y0, t, true_A)


def ode_pred(params, y0, t):
    return rk4(nn_dynamics, y0, t, params)


def L1_loss(pred, targets):
    return np.mean(np.abs(pred - targets))


def objective(params):
    pred = ode_pred(params, true_y0, t)
    return L1_loss(pred, target)


def make_args():
    rs = np.random.RandomState(0)
    D, H = 2, 6
    return ([0.3 * rs.randn(D + 1, H), 0.3 * rs.randn(H), 0.3 * rs.randn(H, D), 0.3 * rs.randn(D)],)
