"""Fit a damped spring's stiffness and damping to observed positions, through a `while` loop.

The loss integrates x'' = -k x - c x' with explicit Euler until t reaches T (a loop whose
trip count the compiler does not know in advance) and compares the trajectory with
observations. sourcegrad differentiates the loop itself.

Run: python examples/spring.py
"""

import numpy as np

import sourcegrad

DT = 0.01
T = 2.0


def final_position(k, c):
    """The position at time T (the benchmark workload: 1000 steps with T = 10)."""
    x, v, t = 1.0, 0.0, 0.0
    while t < T:
        a = -k * x - c * v
        x = x + DT * v
        v = v + DT * a
        t = t + DT
    return x


def trajectory_loss(k, c, observed):
    """Squared error between the simulated and the observed positions, sampled every step."""
    x, v, t = 1.0, 0.0, 0.0
    loss = 0.0
    i = 0
    while t < T:
        a = -k * x - c * v
        x = x + DT * v
        v = v + DT * a
        t = t + DT
        loss = loss + (x - observed[i]) ** 2
        i = i + 1
    return loss / i


def simulate(k, c):
    xs = []
    x, v, t = 1.0, 0.0, 0.0
    while t < T:
        a = -k * x - c * v
        x, v, t = x + DT * v, v + DT * a, t + DT
        xs.append(x)
    return np.array(xs)


def example_args():
    return 4.0, 0.3, simulate(9.0, 0.8)


EXAMPLES = {"trajectory_loss": example_args, "final_position": lambda: (10.0, 0.5)}
GOLDEN = [("final_position", ("k", "c"))]


def fit(steps=300, lr=2.0):
    k, c, observed = example_args()
    dloss = sourcegrad.value_and_grad(trajectory_loss, wrt=("k", "c"))
    for step in range(steps):
        value, (dk, dc) = dloss(k, c, observed)
        k -= lr * 20.0 * dk
        c -= lr * dc
        if step % 50 == 0:
            print(f"step {step:4d}  loss {value:.6f}  k {k:.3f}  c {c:.3f}")
    print(f"fitted k = {k:.3f}, c = {c:.3f} (true values 9.0 and 0.8)")
    return k, c


if __name__ == "__main__":
    fit()
