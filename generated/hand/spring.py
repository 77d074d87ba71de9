# The damped spring's gradient (sourcegrad/bench/workloads.py:spring) in reverse mode,
# as a person writes it: tests/compiler/emit/test_hand_written.py checks it against the
# compiled gradient and prints the ratio of backward statements (those after `#
# backward`).


def dspring_dk_dc(k, c, x0, v0, dt, T):
    x, v, t = x0, v0, 0.0
    saved = []
    while t < T:
        a = -k * x - c * v
        saved.append((x, v))
        x = x + dt * v
        v = v + dt * a
        t = t + dt
    # backward
    d_x = 2.0 * x
    d_v = 2.0 * v
    dk, dc = 0.0, 0.0
    for _ in range(len(saved)):
        x, v = saved.pop()
        d_a = dt * d_v
        d_v += dt * d_x
        dk -= d_a * x
        dc -= d_a * v
        d_x -= k * d_a
        d_v -= c * d_a
    return dk, dc
