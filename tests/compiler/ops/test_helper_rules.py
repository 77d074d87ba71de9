"""Derivatives through the runtime helpers that generated gradients call.

A first-order gradient calls helpers such as `unindex`, `max_grad` or `tensordot_grad`;
differentiating that gradient again in reverse mode needs each helper's own VJP, and in
forward mode its JVP. Each function below makes its gradient call one helper (the
comment says which); its second derivative in reverse mode is checked against central
finite differences of the compiled gradient and against forward mode.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import runtime
from sourcegrad.api import numeric_grad
from sourcegrad.runtime import einsum_grad, expand_reduced, unindex_list
from tests.compiler.cases import CASES


def numeric_jacobian(fn, args, pos, eps=1e-5):
    """Central differences of `fn` (any output shape) with respect to argument `pos`."""
    x = args[pos]
    base = np.array(x, dtype=np.float64)
    flat = base.reshape(-1)
    columns = []
    for i in range(flat.size):
        step = eps * max(1.0, abs(flat[i]))
        orig = flat[i]
        values = []
        for shift in (step, -step):
            flat[i] = orig + shift
            moved = float(base) if isinstance(x, float) else base.copy()
            values.append(
                np.asarray(
                    fn(*[moved if j == pos else a for j, a in enumerate(args)]), dtype=np.float64
                )
            )
        flat[i] = orig
        columns.append((values[0] - values[1]) / (2 * step))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + np.shape(x))


def second_derivative(fn, args, wrt, mode):
    gradient = sourcegrad.grad(fn, wrt=wrt)
    return gradient, np.asarray(sourcegrad.jacobian(gradient, wrt=wrt, mode=mode)(*args))


def normal(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


def positive(seed, *shape):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


# -- one function per helper (or per way of reaching it) -------------------------------------


def h_slice(x):  # unindex, basic slices and integers
    return np.sum(np.sin(x[1:]) ** 2) + x[0] * x[-1]


def h_index_2d(x):  # unindex, tuples of slices and integers
    return np.sum(x[:, 1:3] ** 3) + x[1, 2] * x[0, 0] + np.sum(np.cos(x[-1]))


def h_fancy(x):  # unindex with repeated integer indices (np.add.at; its transpose gathers)
    return np.sum(np.sin(x[[0, 2, 2]]) * x[[1, 1, 0]])


def h_mask(x):  # unindex with a boolean mask (a shape known only at run time)
    return np.sum(np.sin(x[x > 0.0]) ** 2)


def h_take(x):  # untake, along an axis and flattened, with repeats
    return np.sum(np.take(x, [0, 2, 2], axis=1) ** 3) + np.sum(np.sin(np.take(x, [1, 3, 3])))


def h_concat(x, y):  # take_part
    return np.sum(np.concatenate([x, y * x, x], axis=1) ** 2) + np.sum(
        np.sin(np.concatenate([x, y], axis=0))
    )


def h_expand(x):  # expand_reduced (only helpers call it; here the user does)
    return np.sum(expand_reduced(np.sum(x**2, axis=1), x, 1, False) * x) + np.sum(
        expand_reduced(np.sum(x**3, axis=0, keepdims=True), x, 0, True) * x
    )


def h_max(x):  # max_grad: along an axis, full, keepdims
    return (
        np.sum(np.max(x**2, axis=0) ** 2)
        + np.max(np.sin(x)) * np.sum(x)
        + np.sum(x * np.min(x**3, axis=1, keepdims=True))
    )


def h_setitem(x):  # zero_at (and unindex for the value)
    a = x**2
    a[1] = np.sin(x[0])
    return np.sum(a**2)


def h_select(x, y):  # select_grad: builtin max/min of numbers
    return max(x * y, x**2) ** 2 + min(x, y) * x


def h_dot(x, y):  # dot_grad (N-d dot)
    return np.sum(np.dot(x, y) ** 2)


def h_inner(x, y):  # inner_grad (N-d inner)
    return np.sum(np.inner(x, y) ** 2)


def h_tensordot(x, y):  # tensordot_grad, axes as lists and as a number
    return np.sum(np.tensordot(x, y, axes=([1, 2], [0, 1])) ** 2) + np.sum(
        np.tensordot(y, x, 1) ** 2
    )


def h_einsum(x, y):  # einsum_grad, a product and a label summed inside one operand
    return np.sum(np.einsum("ij,jk->ik", x, y) ** 2) + np.sum(np.einsum("ij->i", x * x) ** 2)


def h_list_index(x):  # unindex of a list built at run time
    xs = []
    xs.append(np.sin(x))
    xs.append(x**2)
    return np.sum(xs[1] * xs[0])


def h_list_slice(x):  # unindex of a list with a slice: its adjoint is a list
    xs = []
    xs.append(np.sin(x))
    xs.append(x**2)
    xs.append(x**3)
    part = xs[1:]
    return np.sum(part[0] * part[1])


def h_unindex_list(x):  # unindex_list, called directly
    parts = unindex_list(x**2, [x, x], 1)
    return np.sum(parts[1] * np.sin(x))


def h_stack_list(x):  # unstack_list
    xs = []
    xs.append(np.sin(x))
    xs.append(x**2)
    return np.sum(np.stack(xs, axis=1) ** 2)


def h_concat_list(x):  # unconcatenate_list
    xs = []
    xs.append(np.sin(x))
    xs.append(x**2)
    return np.sum(np.concatenate(xs, axis=0) ** 3)


def h_sum_list(x):  # sum_list_grad, items of different shapes
    return np.sum(sum([np.sin(x), x**2, x[0]]) ** 2)


def h_windows(x):  # unwindow: an im2col convolution's input gradient
    windows = np.lib.stride_tricks.sliding_window_view(x, (2, 3))
    kernel = np.array([[1.0, -2.0, 0.5], [0.25, 1.5, -1.0]])
    return np.sum(np.tanh(np.einsum("ijkl,kl->ij", windows, kernel)) ** 2)


def h_polyval(x):  # polyval_coefficients_adjoint: the coefficients and the points both x's
    return np.sum(np.polyval(x[:3], x[3:]) ** 2)


def h_mean_prod(x):  # reductions with axes and keepdims next to the helpers
    return np.sum(np.mean(x**2, axis=1) ** 2) + np.sum(np.prod(x, axis=0, keepdims=True) * x)


HELPER_CASES = [
    (h_slice, lambda: (normal(0, 5),), 0, "unindex"),
    (h_index_2d, lambda: (normal(1, 3, 4),), 0, "unindex"),
    (h_fancy, lambda: (normal(2, 4),), 0, "unindex"),
    (h_mask, lambda: (np.array([0.7, -0.4, 1.3, -1.1, 0.2, 0.9]),), 0, "unindex"),
    (h_take, lambda: (normal(3, 2, 4),), 0, "untake"),
    (h_concat, lambda: (normal(4, 2, 3), normal(5, 2, 3)), 0, "take_part"),
    (h_concat, lambda: (normal(4, 2, 3), normal(5, 2, 3)), 1, "take_part"),
    (h_expand, lambda: (normal(6, 2, 3),), 0, "expand_reduced"),
    (h_max, lambda: (normal(7, 3, 4),), 0, "max_grad"),
    (h_setitem, lambda: (normal(8, 3),), 0, "zero_at"),
    (h_select, lambda: (0.7, 1.3), 0, "select_grad"),
    (h_select, lambda: (0.7, 1.3), 1, "select_grad"),
    (h_dot, lambda: (normal(9, 2, 3, 4), normal(10, 4, 2)), 0, "dot_grad"),
    (h_dot, lambda: (normal(9, 2, 3, 4), normal(10, 4, 2)), 1, "dot_grad"),
    (h_inner, lambda: (normal(11, 2, 3), normal(12, 4, 3)), 0, "inner_grad"),
    (h_inner, lambda: (normal(11, 2, 3), normal(12, 4, 3)), 1, "inner_grad"),
    (h_tensordot, lambda: (normal(13, 2, 3, 4), normal(14, 3, 4, 2)), 0, "tensordot_grad"),
    (h_tensordot, lambda: (normal(13, 2, 3, 4), normal(14, 3, 4, 2)), 1, "tensordot_grad"),
    (h_einsum, lambda: (normal(15, 2, 3), normal(16, 3, 4)), 0, "einsum_grad"),
    (h_einsum, lambda: (normal(15, 2, 3), normal(16, 3, 4)), 1, "einsum_grad"),
    (h_list_index, lambda: (normal(17, 3),), 0, "unindex"),
    (h_list_slice, lambda: (normal(18, 3),), 0, "unindex"),
    (h_unindex_list, lambda: (normal(19, 3),), 0, "unindex_list"),
    (h_stack_list, lambda: (normal(20, 3),), 0, "unstack_list"),
    (h_concat_list, lambda: (normal(21, 3),), 0, "unconcatenate_list"),
    (h_sum_list, lambda: (normal(22, 3),), 0, "sum_list_grad"),
    (h_windows, lambda: (normal(24, 4, 5),), 0, "unwindow"),
    (h_polyval, lambda: (normal(25, 7),), 0, "polyval_coefficients_adjoint"),
    (h_mean_prod, lambda: (positive(23, 2, 3),), 0, None),
]
HELPER_IDS = [f"{c[0].__name__}-{c[2]}" for c in HELPER_CASES]


@pytest.mark.parametrize("fn, make_args, wrt, helper", HELPER_CASES, ids=HELPER_IDS)
def test_the_gradient_calls_the_helper(fn, make_args, wrt, helper):
    args = make_args()
    gradient = sourcegrad.grad(fn, wrt=wrt)
    gradient(*args)
    if helper is not None:
        assert f"{helper}(" in gradient.source


@pytest.mark.parametrize("fn, make_args, wrt, helper", HELPER_CASES, ids=HELPER_IDS)
def test_second_derivative_through_the_helper(fn, make_args, wrt, helper):
    args = make_args()
    gradient, rev = second_derivative(fn, args, wrt, "rev")
    np.testing.assert_allclose(rev, numeric_jacobian(gradient, args, wrt), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn, make_args, wrt, helper", HELPER_CASES, ids=HELPER_IDS)
def test_forward_over_the_gradient_agrees_with_reverse(fn, make_args, wrt, helper):
    args = make_args()
    _, fwd = second_derivative(fn, args, wrt, "fwd")
    _, rev = second_derivative(fn, args, wrt, "rev")
    np.testing.assert_allclose(fwd, rev, rtol=1e-9, atol=1e-10)


# -- mixed second derivatives: d/dx of a scalar gradient d/ds ----------------------------------


def m_slice(s, x):
    return np.sum(np.sin(s * x[1:]) ** 2) + s * x[0] * x[-1]


def m_fancy(s, x):
    return np.sum(np.sin(s * x[[0, 2, 2]]))


def m_mask(s, x):
    return np.sum(np.sin(s * x[x > 0.0]) ** 2)


def m_take(s, x):
    return np.sum(np.take(s * x, [0, 2, 2], axis=1) ** 3)


def m_concat(s, x):
    return np.sum(np.concatenate([x, s * x, x**2], axis=1) ** 2)


def m_max(s, x):
    return np.sum(np.max(s * x**2, axis=0) ** 2) + np.max(np.sin(s * x))


def m_setitem(s, x):
    a = s * x**2
    a[1] = np.sin(s * x[0])
    return np.sum(a**2)


def m_dot(s, x):
    return np.sum(np.dot(s * x, x[0].T) ** 2)


def m_inner(s, x):
    return np.sum(np.inner(s * x, x**2) ** 2)


def m_tensordot(s, x):
    return np.sum(np.tensordot(s * x, x**2, axes=([1, 2], [1, 2])) ** 2)


def m_einsum(s, x):
    # the second operand is a constant: through a computed one, see the sweep's _WRONG
    return np.sum(np.einsum("ijk,ljk->il", s * x, EINSUM_CONSTANT) ** 2)


EINSUM_CONSTANT = normal(41, 5, 3, 4)


def m_lists(s, x):
    xs = []
    xs.append(np.sin(s * x))
    xs.append(s * x**2)
    return (
        np.sum(np.stack(xs, axis=0) ** 2)
        + np.sum(np.concatenate(xs) ** 3)
        + np.sum(sum([xs[0], s * x[0]]) ** 2)
    )


def m_select(s, x):
    return max(s * x[0], s**2) ** 2


MIXED_CASES = [
    (m_slice, lambda: (0.7, normal(30, 5))),
    (m_fancy, lambda: (0.7, normal(31, 4))),
    (m_mask, lambda: (0.7, np.array([0.7, -0.4, 1.3, -1.1, 0.2]))),
    (m_take, lambda: (0.7, normal(32, 2, 4))),
    (m_concat, lambda: (0.7, normal(33, 2, 3))),
    (m_max, lambda: (0.7, normal(34, 3, 4))),
    (m_setitem, lambda: (0.7, normal(35, 3))),
    (m_dot, lambda: (0.7, normal(36, 2, 3, 4))),
    (m_inner, lambda: (0.7, normal(37, 2, 3))),
    (m_tensordot, lambda: (0.7, normal(38, 2, 3, 4))),
    (m_einsum, lambda: (0.7, normal(39, 2, 3, 4))),
    (m_lists, lambda: (0.7, normal(40, 3))),
    (m_select, lambda: (0.7, np.array([1.3, 0.2]))),
]


@pytest.mark.parametrize("fn, make_args", MIXED_CASES, ids=[c[0].__name__ for c in MIXED_CASES])
def test_mixed_second_derivative(fn, make_args):
    args = make_args()
    ds = sourcegrad.grad(fn, wrt=0)
    dsdx = sourcegrad.grad(ds, wrt=1)(*args)
    assert np.shape(dsdx) == np.shape(args[1])
    np.testing.assert_allclose(dsdx, numeric_jacobian(ds, args, 1), rtol=1e-6, atol=1e-6)


# not m_einsum: einsum_grad's VJP for its operands (einsum_grad_operands) has no VJP itself
THIRD_CASES = [c for c in MIXED_CASES if c[0] is not m_einsum]


@pytest.mark.parametrize("fn, make_args", THIRD_CASES, ids=[c[0].__name__ for c in THIRD_CASES])
def test_third_derivative_with_respect_to_a_number(fn, make_args):
    """grad(grad(grad(f))) in reverse mode: the helpers' VJPs are differentiated too."""
    args = make_args()
    d2 = sourcegrad.grad(sourcegrad.grad(fn, wrt=0), wrt=0)
    d3 = sourcegrad.grad(d2, wrt=0)
    np.testing.assert_allclose(d3(*args), numeric_jacobian(d2, args, 0), rtol=1e-6, atol=1e-6)


# -- einsum_grad with respect to its operands --------------------------------------------------


def e_operands(A, B, H):
    ops = (A, A)
    for _ in range(1):  # a tuple variable assigned in a loop has an adjoint (a literal has none)
        ops = (A, B)
    return np.sum(einsum_grad(H, "ij,jk->ik", ops, 0) ** 2) + np.sum(
        np.sin(einsum_grad(H, "ij,jk->ik", ops, 1))
    )


def e_summed_label(A, v, h):
    ops = (A, A)
    for _ in range(1):
        ops = (A, v)
    # an implicit output ("ij,j" is "ij,j->i"), and a label (j) that only operand 0 has
    return (
        np.sum(einsum_grad(h * (A @ v), "ij,j", ops, 0) ** 2)
        + np.sum(np.sin(einsum_grad(h * A, "ij,k->ik", ops, 0)) * A)
        + np.sum(einsum_grad(h * A, "ij,k->ik", ops, 1) ** 2)
    )


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_einsum_grad_rules_for_each_input(wrt):
    """The VJPs (reverse) and JVPs (forward) of einsum_grad for h and for the operands."""
    args = (normal(50, 2, 3), normal(51, 3, 4), normal(52, 2, 4))
    expected = numeric_grad(e_operands, args, wrt)
    got = sourcegrad.grad(e_operands, wrt=wrt)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    tangents = [None] * 3
    tangents[wrt] = normal(53, *np.shape(args[wrt]))
    _, t_out = sourcegrad.jvp(e_operands, args, tangents)
    assert float(t_out) == pytest.approx(float(np.sum(expected * tangents[wrt])), rel=1e-6)


def test_einsum_grad_rules_with_implicit_output_and_a_summed_label():
    args = (normal(54, 2, 3), normal(55, 3), 0.7)
    for wrt in (0, 1, 2):
        expected = numeric_grad(e_summed_label, args, wrt)
        np.testing.assert_allclose(
            sourcegrad.grad(e_summed_label, wrt=wrt)(*args), expected, rtol=1e-6, atol=1e-7
        )
        tangents = [None] * 3
        tangents[wrt] = 1.0 if wrt == 2 else normal(56, *np.shape(args[wrt]))
        _, t_out = sourcegrad.jvp(e_summed_label, args, tangents)
        assert float(t_out) == pytest.approx(float(np.sum(expected * tangents[wrt])), rel=1e-6)


def test_einsum_swap_trades_an_operand_for_the_output():
    assert runtime.einsum_swap("ij,jk->ik", 0) == "ik,jk->ij"
    assert runtime.einsum_swap("ij,jk", 1) == "ij,ik->jk"
    assert runtime.einsum_swap("ij,ij->", 1) == "ij,->ij"


# -- the sweep: every straight-line case, differentiated twice ----------------------------------

SWEEP = [
    pytest.param(fn, make, w, id=f"{fn.__name__}-{w}")
    for fn, make, wrt in CASES
    for w in (wrt if isinstance(wrt, tuple) else (wrt,))
]


@pytest.mark.parametrize("fn, make_args, wrt", SWEEP)
def test_every_case_twice_in_reverse_mode(fn, make_args, wrt):
    args = make_args(np.random.default_rng(0))
    gradient, rev = second_derivative(fn, args, wrt, "rev")
    _, fwd = second_derivative(fn, args, wrt, "fwd")
    np.testing.assert_allclose(rev, fwd, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(rev, numeric_jacobian(gradient, args, wrt), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_a_stacks_adjoint_gives_each_item_its_row_in_memory_of_its_own(axis):
    # (rows of one copy: a later change to the cotangent must not reach the gradients)
    g = normal(31, 3, 4)
    items = [None] * g.shape[axis]
    rows = runtime.unstack_list(g, items, axis)
    expected = [np.take(g, i, axis=axis) for i in range(g.shape[axis])]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        np.testing.assert_array_equal(row, want)
        assert not np.shares_memory(row, g)
