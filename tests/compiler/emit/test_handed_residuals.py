"""Stage 9 for a VJP whose backward is handed its residuals (`Mode(hands_over=True)`, a
compiled region's): the backward takes them in one list it empties and deletes each array
after its last use; the same gradients as the plain VJP's backward, whose code is printed as
before (positional residuals, no deletions below FREE_MIN_BYTES)."""

import numpy as np

from sourcegrad import compiler


def chain(w, x):
    h1 = np.tanh(x @ w)
    h2 = np.tanh(h1 @ w.T)
    h3 = np.tanh(h2 @ w)
    return np.sum(h3 * h3)


def _made(hands_over):
    w = np.random.default_rng(0).normal(size=(3, 3))
    x = np.random.default_rng(1).normal(size=(4, 3))
    mode = compiler.Mode(wrt=(0,), kind="vjp", hands_over=hands_over)
    made = compiler.compile(chain, (w, x), mode)
    _, _, (forward, backward) = compiler.load(
        made.source, made.ir.name, made.primal.free, made.names, "numpy"
    )
    return made.source, forward, backward, (w, x)


def _backward_source(source):
    return source[source.index("_backward(") :]


def test_the_handed_backward_empties_the_list_and_gives_the_plain_gradient():
    source, forward, backward, args = _made(True)
    text = _backward_source(source)
    assert "residuals.clear()" in text and "del " in text
    value, residuals = forward(*args)
    handed = list(residuals)
    got = backward(handed, 1.0)
    assert handed == []  # (the backward holds the only references)
    plain_source, plain_forward, plain_backward, _ = _made(False)
    expected = plain_backward(*plain_forward(*args)[1], 1.0)
    np.testing.assert_array_equal(got, expected)
    # central differences, float64
    w, x = args
    eps, numeric = 1e-6, np.zeros_like(w)
    for i in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[i] = eps
        numeric[i] = (chain(w + step, x) - chain(w - step, x)) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-9)


def test_the_plain_vjp_backward_is_printed_as_before():
    source, *_ = _made(False)
    text = _backward_source(source)
    assert "residuals" not in text.splitlines()[0] and "del " not in text
    assert compiler.Mode(wrt=(0,), kind="vjp", hands_over=True).handing_over
    assert not compiler.Mode(wrt=(0,), kind="vjp", hands_over=True, backend="numba").handing_over
