"""Functions with control flow, calls, closures and mutation, with inputs, for gradient tests.

Each entry of CONTROL_CASES is (function, make_args(rng), wrt).
"""

import math

import numpy as np

from .user_helpers import scaled, softplus

DECAY = 0.9


def c_if_else(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = np.sin(x)
    return np.sum(y * x)


def c_elif(x):
    s = np.sum(x)
    if s > 10.0:
        y = x**2
    elif s > 0.0:
        y = np.exp(x)
    else:
        y = -x
    return np.sum(y)


def c_ifexp(x, y):
    z = x * y if x > 0.0 else x - y
    return z * z


def c_and_or_not(x, y):
    if x > 0.0 and y > 0.0:
        r = x * y
    elif not (x > 0.0) or y < -1.0:
        r = x + y
    else:
        r = x - y
    return r * r


def c_for_range(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x ** (i + 1))
    return s


def c_for_range_start_step(x):
    s = 0.0
    for i in range(1, 7, 2):
        s += np.sum(np.sin(x * i))
    return s


def c_for_rows(X):
    s = 0.0
    for row in X:
        s = s + np.sum(row * row) * np.max(row)
    return s


def c_for_list(x):
    total = 0.0
    for w in [1.0, 2.0, 3.0]:
        total = total + np.sum(np.tanh(x * w))
    return total


def c_for_tuple_of_arrays(a, b):
    total = 0.0
    for v in (a, b, a * b):
        total = total + np.sum(v**2)
    return total


def c_enumerate(X):
    s = 0.0
    for i, row in enumerate(X):
        s = s + (i + 1.0) * np.sum(np.exp(row))
    return s


def c_zip(a, b):
    s = 0.0
    for u, v in zip(a, b):
        s = s + u * v + u**2
    return s


def c_while_data_dependent(x):
    y = x
    while y < 10.0:
        y = y * 1.7 + 0.1
    return y * x


def c_spring(k, c):
    x, v, t = 1.0, 0.0, 0.0
    dt, T = 0.01, 1.0
    while t < T:
        a = -k * x - c * v
        x = x + dt * v
        v = v + dt * a
        t = t + dt
    return x


def c_break_data_dependent(x):
    s = 0.0
    for i in range(10):
        s = s + x * i
        if s > 5.0:
            break
    return s


def c_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s + np.sum(x * i)
    return s


def c_early_return(x):
    if x > 0.0:
        return x * x
    return -x


def c_multiple_returns(x):
    if x > 1.0:
        return math.log(x)
    elif x > 0.0:
        return x**3
    else:
        return math.exp(x)


def c_return_in_loop(x):
    for i in range(10):
        x = x * 1.5
        if x > 4.0:
            return x * i
    return x


def c_nested_loops(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = s + A[i, j] ** 2 * (i + 1.0) * (j + 1.0)
    return s


def c_loop_in_branch(x):
    if np.sum(x) > 0.0:
        for i in range(3):
            x = np.sin(x) + x
    else:
        x = x * 3.0
    return np.sum(x)


def c_branch_in_loop(x):
    s = 0.0
    for i in range(5):
        if np.sum(x) > i * 0.5:
            s = s + np.sum(x**2)
        else:
            s = s - np.sum(x)
        x = x * 0.8
    return s


def c_rnn(W, U, b, xs, h0):
    h = h0
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h**2)


def c_module_function(x):
    return np.sum(softplus(x) + scaled(x))


def helper_square_plus(a, b=1.0):
    return a * a + b


def c_module_level_call(x):
    return np.sum(helper_square_plus(x) + helper_square_plus(x, b=x))


def c_nested_def(x):
    def inner(v, k=3.0):
        return np.sin(v) * k

    return np.sum(inner(x) + inner(x, k=0.5))


def c_closure(x):
    scale = np.sum(x)

    def f(v):
        return v * scale

    return np.sum(f(x) ** 2)


def c_lambda(x):
    sq = lambda v: v * v  # noqa: E731
    return np.sum(sq(x) + sq(np.cos(x))) + np.sum((lambda v, k=2.0: v * k)(x))


def c_global(x):
    return np.sum(x * DECAY) + DECAY


def power_chain(x, n):
    if n == 0:
        return x
    return power_chain(np.sin(x), n - 1) * 1.5


def c_recursion(x):
    return np.sum(power_chain(x, 4))


def c_keyword_and_star_args(x, y):
    args = (x, y)
    return np.sum(helper_square_plus(*args)) + np.sum(helper_square_plus(b=y, a=x))


def c_augmented(x):
    s = x * 1.0
    s += x**2
    s *= 3.0
    s -= np.sin(x)
    s /= 2.0
    return np.sum(s)


def c_setitem_loop(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = x[i] * x[(i + 1) % 3]
    return np.sum(out**2)


def c_slice_augassign(x):
    y = x * 1.0
    y[1:3] *= 2.0
    y[0] = y[3] * y[1]
    return np.sum(y**2)


def c_append_stack(x):
    hs = []
    h = x
    for i in range(4):
        h = np.tanh(h * 1.1)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def c_append_array_sum(x):
    parts = []
    for i in range(3):
        parts.append(x * (i + 1.0))
    return np.sum(np.array(parts)) + np.sum(sum(parts) ** 2)


def c_tuple_pack_unpack(x, y):
    pair = (x * y, x + y)
    a, b = pair
    return np.sum(a * b)


def c_swap(x, y):
    a, b = x, y * 2.0
    for i in range(3):
        a, b = b, a * 0.5
    return np.sum(a * b + a)


def c_builtins(x, y):
    m = min(x, y) + max(x, y * 2.0)
    return abs(m) * float(len([1, 2, 3])) + int(2.7) * x


def c_print(x):
    print("value:", x)
    return x * 2.0


def c_while_with_break(x):
    y = x
    n = 0
    while True:
        y = y * 1.3
        n = n + 1
        if y > 5.0 or n > 20:
            break
    return y


def c_copy_of_a_loop_variable(x):
    y = x
    for i in range(2):
        y = y * 1.5
    z = y
    y = np.sin(y)
    return np.sum(z * y)


def c_variable_read_by_its_own_rule(x):
    y = x
    for i in range(3):
        y = np.sin(y)
        y = y * y + 0.1
    return np.sum(y)


def c_accumulator_from_zeros(x):
    s = np.zeros_like(x)
    for i in range(3):
        s = s + x * i
    if np.sum(x) > 0:
        t = np.ones_like(x)
    else:
        t = x * 2.0
    return np.sum(s * t)


def c_parameter_doubled_then_looped(x0):
    x0 += x0
    for i in range(2):
        x0 = np.tanh(x0) * 1.5
    return x0


def c_seed_times_mask(x):
    return np.clip(np.cos(x), -0.3, None)


CONTROL_CASES = [
    (c_if_else, lambda r: (r.normal(size=3),), 0),
    (c_if_else, lambda r: (-np.abs(r.normal(size=3)),), 0),
    (c_elif, lambda r: (r.uniform(0.1, 1.0, size=3),), 0),
    (c_elif, lambda r: (-r.uniform(0.1, 1.0, size=3),), 0),
    (c_ifexp, lambda r: (0.5, 0.3), (0, 1)),
    (c_ifexp, lambda r: (-0.5, 0.3), (0, 1)),
    (c_and_or_not, lambda r: (0.5, 0.4), (0, 1)),
    (c_and_or_not, lambda r: (-0.5, 0.4), (0, 1)),
    (c_and_or_not, lambda r: (0.5, -0.4), (0, 1)),
    (c_for_range, lambda r: (r.uniform(0.5, 1.0, size=3),), 0),
    (c_for_range_start_step, lambda r: (r.normal(size=3),), 0),
    (c_for_rows, lambda r: (r.normal(size=(4, 3)),), 0),
    (c_for_list, lambda r: (r.normal(size=3),), 0),
    (c_for_tuple_of_arrays, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    (c_enumerate, lambda r: (r.normal(size=(3, 2)),), 0),
    (c_zip, lambda r: (r.normal(size=4), r.normal(size=4)), (0, 1)),
    (c_while_data_dependent, lambda r: (0.8,), 0),
    (c_while_data_dependent, lambda r: (3.0,), 0),
    (c_spring, lambda r: (10.0, 0.5), (0, 1)),
    (c_break_data_dependent, lambda r: (0.7,), 0),
    (c_break_data_dependent, lambda r: (0.2,), 0),
    (c_continue, lambda r: (r.normal(size=3),), 0),
    (c_early_return, lambda r: (0.7,), 0),
    (c_early_return, lambda r: (-0.7,), 0),
    (c_multiple_returns, lambda r: (2.5,), 0),
    (c_multiple_returns, lambda r: (0.5,), 0),
    (c_multiple_returns, lambda r: (-0.5,), 0),
    (c_return_in_loop, lambda r: (0.9,), 0),
    (c_nested_loops, lambda r: (r.normal(size=(2, 3)),), 0),
    (c_loop_in_branch, lambda r: (np.abs(r.normal(size=3)),), 0),
    (c_loop_in_branch, lambda r: (-np.abs(r.normal(size=3)),), 0),
    (c_branch_in_loop, lambda r: (r.uniform(0.2, 0.6, size=3),), 0),
    (
        c_rnn,
        lambda r: (
            0.5 * r.normal(size=(4, 4)),
            r.normal(size=(4, 3)),
            r.normal(size=4),
            r.normal(size=(6, 3)),
            r.normal(size=4),
        ),
        (0, 1, 2, 3, 4),
    ),
    (c_module_function, lambda r: (r.normal(size=3),), 0),
    (c_module_level_call, lambda r: (r.normal(size=3),), 0),
    (c_nested_def, lambda r: (r.normal(size=3),), 0),
    (c_closure, lambda r: (r.normal(size=3),), 0),
    (c_lambda, lambda r: (r.normal(size=3),), 0),
    (c_global, lambda r: (r.normal(size=3),), 0),
    (c_recursion, lambda r: (r.normal(size=3),), 0),
    (c_keyword_and_star_args, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    (c_augmented, lambda r: (r.normal(size=3),), 0),
    (c_setitem_loop, lambda r: (r.normal(size=3),), 0),
    (c_slice_augassign, lambda r: (r.normal(size=5),), 0),
    (c_append_stack, lambda r: (r.normal(size=3),), 0),
    (c_append_array_sum, lambda r: (r.normal(size=3),), 0),
    (c_tuple_pack_unpack, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    (c_swap, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    (c_builtins, lambda r: (0.3, 0.7), (0, 1)),
    (c_builtins, lambda r: (-0.9, 0.2), (0, 1)),
    (c_print, lambda r: (1.5,), 0),
    (c_while_with_break, lambda r: (0.9,), 0),
    (c_copy_of_a_loop_variable, lambda r: (r.normal(size=3),), 0),
    (c_variable_read_by_its_own_rule, lambda r: (r.normal(size=3),), 0),
    (c_accumulator_from_zeros, lambda r: (np.abs(r.normal(size=3)),), 0),
    (c_accumulator_from_zeros, lambda r: (-np.abs(r.normal(size=3)),), 0),
    (c_parameter_doubled_then_looped, lambda r: (-0.7,), 0),
    (c_seed_times_mask, lambda r: (0.5,), 0),
]
