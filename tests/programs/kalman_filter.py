"""The log likelihood of a linear-Gaussian state-space model by the Kalman filter, with
np.linalg.solve and slogdet; the gradient with respect to the dynamics matrix."""

import numpy as np

NEEDS = "linalg"


def kalman_log_likelihood(A, C, Q, R, mu0, P0, ys):
    mu, P = mu0, P0
    ll = 0.0
    for y in ys:
        # predict
        mu = A @ mu
        P = A @ P @ A.T + Q
        # update
        S = C @ P @ C.T + R
        resid = y - C @ mu
        ll = ll - 0.5 * (
            resid @ np.linalg.solve(S, resid) + np.linalg.slogdet(S)[1] + len(y) * np.log(2 * np.pi)
        )
        K = P @ C.T @ np.linalg.inv(S)
        mu = mu + K @ resid
        P = P - K @ C @ P
    return ll


rng = np.random.default_rng(0)
C = np.array([[1.0, 0.0]])
Q = 0.1 * np.eye(2)
R = np.array([[0.2]])
ys = rng.normal(size=(6, 1))


def objective(A):
    return -kalman_log_likelihood(A, C, Q, R, np.zeros(2), np.eye(2), ys)


def make_args():
    return (np.array([[0.9, 0.1], [-0.2, 0.8]]),)
