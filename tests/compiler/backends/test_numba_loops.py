"""The numba backend on the loops of layer libraries (issue 39): a list appended to in a loop
and stacked after (an RNN's hidden states), and boolean masks of two dimensions (a stable
sigmoid by masks, in an LSTM step), compiled by numba, not left to the numpy code: the
same gradients as the numpy backend and as central finite differences.

The rewrites are checked on the text without compiling; the compiled gradients are `slow`
(numba takes tens of seconds for them on a busy machine: `pytest -m slow`)."""

import ast
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.bench.layers import VanillaRNN, lstm, lstm_args, lstm_hand, stable_sigmoid
from sourcegrad.compiler.backends import (
    numba_backend,
    numba_fusion,
    numba_lists,
    numba_masks,
    numba_stacks,
)
from sourcegrad.errors import JitFallbackWarning


def rnn_list(W, xs, h0):
    hs = []
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def rnn_layer(Wx, Wh, b, x, h0, G):
    """The benchmark's append-and-stack RNN (a class: traced, its loop rolled back)."""
    return np.sum(VanillaRNN(Wx, Wh, b).forward(x, h0) * G)


def sigmoid_gates(a, c):
    """An LSTM step's gates by the stable sigmoid of course code: 2-d masks."""
    i = stable_sigmoid(a[:, 0:3])
    f = stable_sigmoid(a[:, 3:6])
    z = a[:, 6:9].copy()
    z[c < 0] = z[c < 0] * 0.3  # (a comparison inline: the masked write of the front end)
    return np.sum(f * c + i * np.tanh(z))


def _rnn_args(rng, steps=12):
    return (
        rng.normal(size=(3, 3)) * 0.5,
        rng.normal(size=(steps, 2, 3)),
        rng.normal(size=(2, 3)),
    )


def _rnn_layer_args(rng, steps=10):
    n, d, h = 3, 2, 4
    return (
        rng.normal(scale=d**-0.5, size=(d, h)),
        rng.normal(scale=h**-0.5, size=(h, h)),
        rng.normal(scale=0.1, size=h),
        rng.normal(size=(steps, n, d)),
        rng.normal(scale=0.5, size=(n, h)),
        rng.normal(size=(steps, n, h)),
    )


def _numba_text(f, args, wrt):
    g = sourcegrad.grad(f, wrt=wrt)
    g(*args)
    return g.source, numba_backend.numba_source(g.source)


# -- the text, without compiling ----------------------------------------------------------------


def test_a_list_appended_in_a_loop_is_appended_in_place_and_its_restores_go():
    numpy_text, text = _numba_text(rnn_list, _rnn_args(np.random.default_rng(0)), (0,))
    # (the optimizer drops the saves of hs already: the backward reads only its last value)
    assert "hs = list_append(hs, h)" in numpy_text and "saved.append(hs)" not in numpy_text
    assert "hs.append(h)" in text and "list_append(" not in text
    assert "stack_hs = stack_appended(hs)" in text
    assert "unstack_appended(stack_hs * 2.0, len(hs))" in text
    assert "saved_hs" not in text and "hs = saved" not in text  # (its restores were dead)


def test_the_traced_rnn_layers_list_is_appended_in_place_too():
    numpy_text, text = _numba_text(rnn_layer, _rnn_layer_args(np.random.default_rng(0)), (0, 1, 2))
    assert "hs = list_append(hs, h)" in numpy_text
    assert "hs.append(h)" in text and "unstack_appended(G, len(hs))" in text


def test_a_vjps_forward_hands_the_list_to_its_backward_as_numbas_typed_list():
    pull = sourcegrad.vjp(rnn_list, wrt=(0,))
    pull(*_rnn_args(np.random.default_rng(0)))
    text = numba_backend.numba_source(pull.source)
    forward, backward = text.split("def value_and_drnn_list_dW_backward")
    assert "hs = numba.typed.List()" in forward and "hs.append(h)" in forward
    assert "unstack_appended(" in backward and "hs = saved" not in backward


def test_a_vjps_backward_indexes_by_the_masks_its_forward_hands_it():
    rng = np.random.default_rng(1)
    pull = sourcegrad.vjp(sigmoid_gates, wrt=(0, 1))
    pull(rng.normal(size=(4, 9)), rng.normal(size=(4, 3)))
    text = numba_backend.numba_source(pull.source)
    backward = text[text.index("def value_and_dsigmoid_gates_da_dc_backward") :]
    code = "\n".join(line.split("#")[0] for line in backward.splitlines())
    # (the stable sigmoid's adjoints are selections on whole arrays, optimize/masked_adjoints.py:
    # the backward reads the forward's masks through np.where, never by indexing with them)
    assert "mask]" not in code and "np.where(stable_sigmoid_neg_mask" in code.replace("\n", "")


STACK = "    saved = []  # values the backward pass needs that the forward overwrites\n"


@pytest.mark.parametrize(
    "body",
    [
        # a restored (older) value of the list is read
        "    for i in range(3):\n        hs = saved.pop()\n        n = len(hs)\n",
        # the list's older value under another name
        "    other = hs\n",
        # the adjoint read as a list (added to another list)
        "    d = unstack_list(g, hs, 0)\n    e = d + d\n",
        # another axis than 0
        "    d = unstack_list(g, hs, 1)\n    e = d[-1]\n",
    ],
)
def test_a_list_read_otherwise_is_left_as_it_is(body):
    text = (
        "def f(x, g):\n" + STACK + "    hs = []\n    for i in range(3):\n"
        "        saved.append(hs)\n        hs = list_append(hs, x)\n" + body + "    return x\n"
    )
    assert numba_lists.appended_in_place(text, "saved") == text


def test_a_list_another_function_restores_is_left_as_it_is():
    """A VJP's backward restoring the list from pushes its forward made, the list not
    among the residuals: dropping the forward's pushes would shift every pop after them."""
    text = (
        "def f_forward(x):\n" + STACK + "    hs = []\n    for i in range(3):\n"
        "        saved.append(hs)\n        hs = list_append(hs, x)\n"
        "    return x, (x, saved)\n\n\ndef f_backward(x, saved, g):\n"
        "    for i in range(3):\n        hs = saved.pop()\n        g = g + x\n    return g\n"
    )
    assert numba_lists.appended_in_place(text, "saved") == text


def test_the_adjoint_of_the_stack_is_read_as_rows():
    text = (
        "def f(x, g):\n    hs = []\n    for i in range(3):\n        hs = list_append(hs, x)\n"
        "    d_1 = unstack_list(g, hs, 0)\n    d = d_1\n    for i in range(3):\n"
        "        p = d[-1]\n        d = d[:-1]\n        q = d[i] + len(d)\n    return p\n"
    )
    out = numba_lists.appended_in_place(text, None)
    assert "hs.append(x)" in out and "d_1 = unstack_appended(g, len(hs))" in out


def test_indexing_by_a_two_dimensional_mask_becomes_the_helpers():
    a, c = (
        np.random.default_rng(1).normal(size=(4, 9)),
        np.random.default_rng(2).normal(size=(4, 3)),
    )
    numpy_text, text = _numba_text(sigmoid_gates, (a, c), (0, 1))
    assert "pos_mask]" in numpy_text and "unindex(" in numpy_text
    gradient = text[text.index("def dsigmoid_gates") :]  # (not the helpers' docstrings)
    code = "\n".join(line.split("#")[0] for line in gradient.splitlines())
    assert "mask]" not in code  # (every read, write and update through a mask)
    for helper in ("masked_elements(", "write_masked("):
        assert helper in code
    assert "unindex(" not in code
    # (the sigmoid's adjoints are selections on whole arrays, optimize/masked_adjoints.py; a
    # chain with a division keeps its gathers, and the adjoint's scatter is the helper's)
    numpy_text, text = _numba_text(masked_reciprocal, (a, a + 1.0), (0,))
    assert "unindex(" in numpy_text
    gradient = text[text.index("def dmasked_reciprocal") :]
    code = "\n".join(line.split("#")[0] for line in gradient.splitlines())
    assert "unindex_masked(" in code and "mask]" not in code and "unindex(" not in code


def masked_reciprocal(a, G):
    z = np.zeros_like(a)
    mask = a > 0
    z[mask] = 1.0 / (1.5 + a[mask])
    return np.sum(z * G)


def test_only_names_always_assigned_a_comparison_are_masks():
    text = (
        "def f(x, i):\n    m = x < 0\n    n = x > 0\n    n = i\n"
        "    y = x[m] + x[n] + x[i]\n    x[m] += 1.0\n    return y\n"
    )
    out = numba_masks.masked_indexing(text)
    assert "masked_elements(x, m) + x[n] + x[i]" in out
    assert "write_masked(x, m, masked_elements(x, m) + (1.0))" in out


# -- compiled by numba --------------------------------------------------------------------------


def _compiled_and_checked(f, args, wrt):
    """numba's gradient (no fallback to the numpy code) against the numpy backend's and
    central finite differences."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        got = sourcegrad.grad(f, wrt=wrt, backend="numba")(*args)
    want = sourcegrad.grad(f, wrt=wrt)(*args)
    for ours, theirs, i in zip(got, want, wrt):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(ours, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_a_list_appended_in_a_loop_and_stacked_is_compiled():
    _compiled_and_checked(rnn_list, _rnn_args(np.random.default_rng(3)), (0, 2))


@pytest.mark.slow
def test_vjps_of_a_stacked_list_and_of_masks_are_compiled():
    """The forward and backward both numba's, a pullback called twice, against the numpy
    backend's VJP."""
    rng = np.random.default_rng(8)
    for f, args in [
        (rnn_list, _rnn_args(rng)),
        (sigmoid_gates, (rng.normal(size=(4, 9)), rng.normal(size=(4, 3)))),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            value, pullback = sourcegrad.vjp(f, wrt=(0, 1), backend="numba")(*args)
            got = [pullback(1.5), pullback(1.5)]
        want_value, want_pullback = sourcegrad.vjp(f, wrt=(0, 1))(*args)
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        for each in got:
            for ours, theirs in zip(each, want_pullback(1.5)):
                np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


@pytest.mark.slow
def test_the_traced_rnn_layer_is_compiled():
    _compiled_and_checked(rnn_layer, _rnn_layer_args(np.random.default_rng(4)), (0, 1, 2))


@pytest.mark.slow
def test_two_dimensional_masks_are_compiled():
    rng = np.random.default_rng(5)
    _compiled_and_checked(sigmoid_gates, (rng.normal(size=(4, 9)), rng.normal(size=(4, 3))), (0, 1))


@pytest.mark.slow
def test_the_mask_helpers_index_as_numpy_does():
    """Each helper against numpy, for C-ordered and strided arrays, a mask with no True and
    all True, a value of one element; a mask of another shape is numpy's IndexError."""
    numba = pytest.importorskip("numba")
    namespace = {"np": np, "numba": numba}
    callers = (
        "\n\n@numba.njit\ndef read(x, m):\n    return masked_elements(x, m)\n"
        "\n\n@numba.njit\ndef write(x, m, v):\n    write_masked(x, m, v)\n"
    )
    exec(numba_masks.MASKED + callers, namespace)
    read, write, unindex = (namespace[n] for n in ("read", "write", "unindex_masked"))
    rng = np.random.default_rng(6)
    base = rng.normal(size=(5, 8))
    for x in (base, base[:, 1:7], base[::2].T):
        for m in (x < 0, x < -9.0, x < 9.0):
            np.testing.assert_array_equal(read(x, m), x[m])
            for v in (rng.normal(size=int(m.sum())), rng.normal(size=1), 2.5):
                want, got = x.copy(), x.copy()
                want[m] = v
                write(got, m, v)
                np.testing.assert_array_equal(got, want)
            g = rng.normal(size=int(m.sum()))
            want = np.zeros_like(x)
            want[m] = g
            np.testing.assert_array_equal(unindex(g, x, m), want)
    with pytest.raises(IndexError):
        read(base, base[:, :3] < 0)
    assert (base < 0).sum() > 2
    with pytest.raises(ValueError):  # (numpy's error: neither one value nor one per True)
        write(base.copy(), base < 0, np.ones(2))


def test_only_straight_line_code_longer_than_numba_compiles_in_time_is_left_to_numpy():
    kinds = {"x": numba_fusion.kind_of(np.ones(3))}

    def reason(n, loop=False):
        pad = "        " if loop else "    "
        body = "".join(f"{pad}x = x + {k}.0\n" for k in range(n))
        header = "    for i in range(2):\n" if loop else ""
        text = f"def f(x):\n{header}{body}    return x\n"
        return numba_fusion.numpy_code_reason(text, "f", kinds)

    assert reason(numba_fusion.LONG_CODE - 1) is None
    assert "straight-line code of" in reason(numba_fusion.LONG_CODE + 1)
    assert reason(numba_fusion.LONG_CODE + 1, loop=True) is None  # (a loop: numba's to win)


@pytest.mark.slow
def test_long_straight_line_code_runs_as_the_numpy_code_and_says_why():
    """An LSTM whose masks select a different number of elements each step stays unrolled
    (the trace rolls only loops whose shapes agree): over 4 steps, more statements than
    numba compiles in reasonable time (it took minutes): the numpy code, a note, no
    warning."""
    args = lstm_args(np.random.default_rng(7), SimpleNamespace(params=dict(n=3, t=4, d=3, h=2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        g = sourcegrad.grad(lstm, wrt=(0, 1, 2), backend="numba")
        got = g(*args)
    assert "# numba: the numpy code runs: straight-line code of" in g.source
    assert "@numba.njit" not in g.source
    for ours, theirs in zip(got, lstm_hand(*args)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def leading_mask(x):
    m = x[:, :, 0] > 0  # (a mask of x's two leading dimensions: numpy selects rows of x)
    return np.sum(x[m] ** 2)


@pytest.mark.slow
def test_a_mask_of_fewer_dimensions_than_the_array_is_left_to_numbas_own_indexing():
    """numba refuses it (as before the helpers): one warning, and numpy's gradient."""
    x = np.random.default_rng(9).normal(size=(3, 4, 2))
    with pytest.warns(JitFallbackWarning):
        got = sourcegrad.grad(leading_mask, backend="numba")(x)
    np.testing.assert_allclose(got, sourcegrad.grad(leading_mask)(x), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(leading_mask, (x,), 0), rtol=1e-6)


def test_segment_is_asts_source_segment():
    text = (
        "def f(x, g):\r\n    y = np.sum(\n        x * 2.0,\r        axis=0)  # é\n"
        "    s = 'é' + \"\\x0c\"\n    return y[0] + g\n"
    )
    for node in ast.walk(ast.parse(text)):
        if hasattr(node, "end_col_offset") and node.end_col_offset is not None:
            assert numba_stacks.segment(text, node) == ast.get_source_segment(text, node)


# -- a variance over an axis (the normalization layers) --------------------------------------


def normalized(x, scale):
    mean, var = x.mean(axis=0), np.var(x, axis=0)
    rows = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    return np.sum(np.tanh((x - mean) / np.sqrt(var + 1e-5) * scale) + rows**2)


def test_a_variance_over_a_literal_axis_is_a_helper():
    text = numba_backend.numba_source(
        "def f(x):\n    a = np.var(x, axis=0)\n    b = x.var(axis=-1, keepdims=True)\n"
        "    c = x.var(axis=0, ddof=1)\n    return a, b, c\n"
    )
    assert "a = var_along_axis(x, 0)" in text
    assert "b = np.expand_dims(var_along_axis(x, -1), -1)" in text
    assert "c = x.var(axis=0, ddof=1)" in text  # (ddof: left to numba, which refuses it)


@pytest.mark.slow
def test_a_variance_over_an_axis_is_compiled():
    rng = np.random.default_rng(10)
    _compiled_and_checked(normalized, (rng.normal(size=(6, 5)), rng.normal(size=5)), (0, 1))


@pytest.mark.slow
def test_the_variance_helper_computes_numpys_variance():
    numba = pytest.importorskip("numba")
    namespace = {"np": np, "numba": numba}
    exec(numba_backend._HELPERS["var_along_axis"], namespace)
    x = np.random.default_rng(11).normal(size=(7, 9)) + 3.0
    for axis in (0, 1, -1, -2):
        np.testing.assert_allclose(
            namespace["var_along_axis"](x, axis), x.var(axis=axis), rtol=1e-14
        )
    with pytest.raises(ValueError):
        namespace["var_along_axis"](x, 2)
