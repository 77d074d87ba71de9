"""Straight-line functions across the op set, each with inputs, for finite-difference tests.

Each entry of CASES is (function, make_args(rng), wrt). Inputs keep away from
the points where a function is not differentiable (ties, bounds, zero).
"""

import math

import numpy as np


def pos(rng, *shape):
    return rng.uniform(0.5, 2.0, size=shape)


def unit(rng, *shape):
    return rng.uniform(-0.8, 0.8, size=shape)


def normal(rng, *shape):
    return rng.normal(size=shape)


def f_arith(x, y):
    return np.sum(x + y * x - y / x + 2.0 * x**3 - x**y)


def f_neg_pow(x):
    return np.sum(-(x**2.5) + 1.0 / x)


def f_python_floats(x, y):
    return math.sin(x) * y + math.exp(x * y) / (1.0 + x**2)


def f_zero_d(x, y):
    return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)


def f_exp_family(x):
    return np.sum(np.exp(x) + np.exp2(x) + np.expm1(x))


def f_log_family(x):
    return np.sum(np.log(x) + np.log1p(x) + np.log2(x) + np.log10(x))


def f_roots(x):
    return np.sum(np.sqrt(x) * np.square(x) + np.reciprocal(x))


def f_trig(x):
    return np.sum(np.sin(x) * np.cos(x) + np.tan(x))


def f_inverse_trig(x):
    return np.sum(np.arcsin(x) + np.arccos(x) * np.arctan(x))


def f_hyperbolic(x):
    return np.sum(np.sinh(x) + np.cosh(x) * np.tanh(x) + np.arctanh(x))


def f_abs_sign(x):
    return np.sum(np.abs(x) * x + np.sign(x) * x)


def f_max_min(x, y):
    return np.sum(np.maximum(x, y) * 2.0 + np.minimum(x, y) ** 2)


def f_where(x, y):
    return np.sum(np.where(x > 0, x * y, y**2))


def f_clip(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2 + x.clip(-0.3, 0.7))


def f_sum_axis(x):
    return np.sum(np.sum(x, axis=0) ** 2) + np.sum(x.sum(axis=1, keepdims=True) * x)


def f_mean(x):
    return (
        np.mean(x**2) + np.sum(x.mean(axis=0) ** 3) + np.sum(np.mean(x, axis=1, keepdims=True) * x)
    )


def f_prod(x):
    return np.prod(x) + np.sum(np.prod(x, axis=1))


def f_max_reduce(x):
    return np.max(x) + np.sum(np.min(x, axis=0)) + np.sum(x.max(axis=1, keepdims=True) * x)


def f_var_std(x):
    return np.var(x) + np.sum(np.std(x, axis=0)) + np.sum(x.var(axis=1, ddof=1))


def f_dot_vec(x, y):
    return np.dot(x, y) + x.dot(y) * 2.0


def f_matvec(A, v):
    return np.sum(np.tanh(A @ v)) + np.sum(v @ A.T)


def f_matmat(A, B):
    return np.sum(np.matmul(A, B) ** 2) + np.sum(np.dot(A, B))


def f_batched_matmul(A, B):
    return np.sum((A @ B) ** 2)


def f_outer_inner(x, y):
    return np.sum(np.outer(x, y) ** 2) + np.inner(x, y)


def f_tensordot(A, B):
    return np.sum(np.tensordot(A, B, axes=([1, 2], [0, 1])) ** 2)


def f_einsum(A, B):
    return np.sum(np.einsum("ij,jk->ik", A, B) ** 2) + np.einsum("ij,ij->", A, A)


def f_reshape(x):
    return np.sum(x.reshape(3, 4) @ np.reshape(x, (4, 3)))


def f_transpose(x):
    return (
        np.sum(np.transpose(x) * np.arange(6.0).reshape(3, 2))
        + np.sum(x.T**2)
        + np.sum(x.transpose(1, 0)[0])
    )


def f_expand_squeeze(x):
    return np.sum(np.expand_dims(x, 0) * np.squeeze(x[None, :, :]) + np.ravel(x)[0])


def f_concat_stack(x, y):
    return np.sum(np.concatenate([x, y, x], axis=0) ** 2) + np.sum(np.stack([x, y]) * 3.0)


def f_broadcast_to(x):
    return np.sum(np.broadcast_to(x, (4, 3)) ** 2)


def f_logaddexp(x, y):
    return np.sum(np.logaddexp(x, y))


def f_arctan2_hypot(x, y):
    return np.sum(np.arctan2(x, y) + np.hypot(x, y))


def f_cumsum(x):
    return np.sum(np.cumsum(x, axis=1) ** 2) + np.sum(np.cos(np.cumsum(x)))


def f_flip_roll(x):
    return np.sum(np.flip(x, 0) * x) + np.sum(np.roll(x, 2) * x) + np.sum(np.roll(x, -1, 1) ** 3)


def f_tril_triu(x):
    return np.sum(np.tril(x) ** 2 + np.triu(x, 1) * x) + np.sum(np.tril(x, -1) * 3.0)


def f_tile(x, v):
    return np.sum(np.tile(x, (2, 3)) ** 2) + np.sum(np.tile(v, 3) * np.arange(12.0))


def f_power_func(x, y):
    return np.sum(np.power(x, y) + np.power(x, 3))


def f_func_arith(x, y):
    return np.sum(np.divide(np.multiply(x, y), np.add(x, 1.0)) - np.subtract(y, x))


def f_indexing(x):
    return x[0, 0] * x[1, 2] + np.sum(x[0, :] ** 2) + np.sum(x[:, 1:3]) + np.sum(x[-1])


def f_fancy_index(x):
    return np.sum(x[[0, 2, 2]] ** 2)


def f_mask_index(x):
    return np.sum(x[x > 0.0] ** 2)


def f_shape_reads(x):
    n = x.shape[0]
    return np.sum(x) / n + x.ndim * np.sum(x**2) / x.size


def f_nondiff(x):
    k = np.argmax(x)
    return np.sum(x * np.floor(x * 10.0) + x * np.zeros_like(x) + np.ones_like(x) * x) + x[k]


def f_broadcast_bias(W, b):
    return np.sum(np.tanh(W + b) * (W - b))


def f_reassign(x):
    y = x * 2.0
    y = np.sin(y) + y
    y = y * y
    return np.sum(y)


def f_tuple_unpack(x, y):
    a, b = x * y, x + y
    a, b = b, a
    return np.sum(a * np.exp(b))


def f_square_abs_builtin(x):
    return abs(float(x)) ** 2 + abs(x) * 3.0


def f_float32(x):
    return np.sum(np.tanh(x) * x)


def f_unused_arg(x, y):
    return np.sum(x**2)


def f_constant_global(x):
    return np.sum(x * SCALE + OFFSET)


SCALE = 3.0
OFFSET = np.array([1.0, 2.0, 3.0])


def f_logreg(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def f_mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def f_mod(x):
    return np.sum((x * 3.0) % 1.7)


CASES = [
    (f_arith, lambda r: (pos(r, 3), pos(r, 3)), (0, 1)),
    (f_neg_pow, lambda r: (pos(r, 2, 3),), 0),
    (f_python_floats, lambda r: (0.3, 0.7), (0, 1)),
    (f_zero_d, lambda r: (np.array(0.3), np.array(0.7)), (0, 1)),
    (f_exp_family, lambda r: (unit(r, 4),), 0),
    (f_log_family, lambda r: (pos(r, 4),), 0),
    (f_roots, lambda r: (pos(r, 4),), 0),
    (f_trig, lambda r: (unit(r, 4),), 0),
    (f_inverse_trig, lambda r: (unit(r, 4),), 0),
    (f_hyperbolic, lambda r: (unit(r, 4),), 0),
    (f_abs_sign, lambda r: (np.array([-1.5, -0.3, 0.4, 2.0]),), 0),
    (f_max_min, lambda r: (np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.5, 4.0])), (0, 1)),
    (f_where, lambda r: (np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.7, 4.0])), (0, 1)),
    (f_clip, lambda r: (np.array([-0.9, -0.2, 0.1, 0.6, 0.9]),), 0),
    (f_sum_axis, lambda r: (normal(r, 3, 4),), 0),
    (f_mean, lambda r: (normal(r, 3, 4),), 0),
    (f_prod, lambda r: (pos(r, 2, 3),), 0),
    (f_max_reduce, lambda r: (normal(r, 3, 4),), 0),
    (f_var_std, lambda r: (normal(r, 3, 4),), 0),
    (f_dot_vec, lambda r: (normal(r, 5), normal(r, 5)), (0, 1)),
    (f_matvec, lambda r: (normal(r, 3, 4), normal(r, 4)), (0, 1)),
    (f_matmat, lambda r: (normal(r, 3, 4), normal(r, 4, 2)), (0, 1)),
    (f_batched_matmul, lambda r: (normal(r, 2, 3, 4), normal(r, 4, 2)), (0, 1)),
    (f_outer_inner, lambda r: (normal(r, 3), normal(r, 3)), (0, 1)),
    (f_tensordot, lambda r: (normal(r, 2, 3, 4), normal(r, 3, 4, 2)), (0, 1)),
    (f_einsum, lambda r: (normal(r, 2, 3), normal(r, 3, 4)), (0, 1)),
    (f_reshape, lambda r: (normal(r, 12),), 0),
    (f_transpose, lambda r: (normal(r, 2, 3),), 0),
    (f_expand_squeeze, lambda r: (normal(r, 2, 3),), 0),
    (f_concat_stack, lambda r: (normal(r, 2, 3), normal(r, 2, 3)), (0, 1)),
    (f_broadcast_to, lambda r: (normal(r, 3),), 0),
    (f_logaddexp, lambda r: (normal(r, 4), normal(r, 4)), (0, 1)),
    (f_arctan2_hypot, lambda r: (normal(r, 4), normal(r, 4)), (0, 1)),
    (f_cumsum, lambda r: (normal(r, 3, 4),), 0),
    (f_flip_roll, lambda r: (normal(r, 3, 4),), 0),
    (f_tril_triu, lambda r: (normal(r, 4, 4),), 0),
    (f_tile, lambda r: (normal(r, 2, 3), normal(r, 4)), (0, 1)),
    (f_power_func, lambda r: (pos(r, 4), pos(r, 4)), (0, 1)),
    (f_func_arith, lambda r: (pos(r, 4), pos(r, 4)), (0, 1)),
    (f_indexing, lambda r: (normal(r, 3, 4),), 0),
    (f_fancy_index, lambda r: (normal(r, 3, 2),), 0),
    (f_mask_index, lambda r: (np.array([1.0, -2.0, 3.0, -0.5]),), 0),
    (f_shape_reads, lambda r: (normal(r, 3, 4),), 0),
    (f_nondiff, lambda r: (np.array([0.13, 0.52, 0.37]),), 0),
    (f_broadcast_bias, lambda r: (normal(r, 3, 4), normal(r, 4)), (0, 1)),
    (f_reassign, lambda r: (normal(r, 4),), 0),
    (f_tuple_unpack, lambda r: (unit(r, 3), unit(r, 3)), (0, 1)),
    (f_square_abs_builtin, lambda r: (np.array(-0.7),), 0),
    (f_unused_arg, lambda r: (normal(r, 3), normal(r, 3)), (0, 1)),
    (f_constant_global, lambda r: (normal(r, 3),), 0),
    (f_logreg, lambda r: (normal(r, 3), normal(r, 6, 3), r.choice([-1.0, 1.0], size=6)), 0),
    (
        f_mlp,
        lambda r: (
            normal(r, 4, 5),
            normal(r, 5),
            normal(r, 5, 3),
            normal(r, 3),
            normal(r, 6, 4),
            np.eye(3)[[0, 1, 2, 1, 0, 2]],
        ),
        (0, 1, 2, 3),
    ),
    (f_mod, lambda r: (np.array([0.1, 0.35, 0.8]),), 0),
]
