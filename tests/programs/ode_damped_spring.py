"""A damped spring integrated with a user-written RK4 that takes the dynamics as a function;
the gradient of the final energy with respect to the stiffness and damping parameters."""

import numpy as np

NEEDS = "callbacks"


def rk4_step(f, y, t, dt, theta):
    k1 = f(y, t, theta)
    k2 = f(y + 0.5 * dt * k1, t + 0.5 * dt, theta)
    k3 = f(y + 0.5 * dt * k2, t + 0.5 * dt, theta)
    k4 = f(y + dt * k3, t + dt, theta)
    return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def odeint(f, y0, ts, theta):
    y = y0
    for t0, t1 in zip(ts[:-1], ts[1:]):
        y = rk4_step(f, y, t0, t1 - t0, theta)
    return y


def spring(y, t, theta):
    x, v = y[0], y[1]
    k, c = theta[0], theta[1]
    return np.array([v, -k * x - c * v])


ts = np.linspace(0.0, 2.0, 11)


def objective(theta):
    y_final = odeint(spring, np.array([1.0, 0.0]), ts, theta)
    return 0.5 * y_final[1] ** 2 + 0.5 * theta[0] * y_final[0] ** 2


def make_args():
    return (np.array([4.0, 0.3]),)
