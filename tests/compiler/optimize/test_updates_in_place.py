"""Writes through an index done in place where nothing can tell (`optimize.updates`): im2col's
buffer filled kernel position by kernel position, `h[:, t, :] = h_t` every step, a sliced
or masked read's adjoint added where it goes. Gradients against central differences in
float64 (first order, and the generated code differentiated again), and what the code does.
"""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_all

RNG = np.random.default_rng(11)


def im2col_sum(x, G):
    # (the kernel positions written out, as the trace front end unrolls a loop over them)
    N, C, H, W = x.shape
    out_h, out_w = H - 1, W - 1
    col = np.zeros((N, C, 2, 2, out_h, out_w))
    col[:, :, 0, 0, :, :] = x[:, :, 0:out_h, 0:out_w]
    col[:, :, 0, 1, :, :] = x[:, :, 0:out_h, 1 : 1 + out_w]
    col[:, :, 1, 0, :, :] = x[:, :, 1 : 1 + out_h, 0:out_w]
    col[:, :, 1, 1, :, :] = x[:, :, 1 : 1 + out_h, 1 : 1 + out_w]
    cols = col.transpose(0, 4, 5, 1, 2, 3).reshape(N * out_h * out_w, -1)
    return np.sum(np.tanh(cols) * G)


def steps(w, xs):
    h = np.zeros((w.shape[0], 3))
    state = np.tanh(xs[0])
    h[:, 0] = state
    state = np.tanh(w @ state + xs[1])
    h[:, 1] = state
    state = np.tanh(w @ state + xs[2])
    h[:, 2] = state
    return np.sum(h**2)


def both_masks(x):
    pos = x >= 0
    neg = x < 0
    z = np.zeros_like(x)
    z[pos] = np.exp(-x[pos])
    z[neg] = np.exp(x[neg])
    return np.sum(z * x)


def _close(ours, numeric):
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-8)


def test_im2col_fills_its_buffer_in_place_and_its_adjoint_where_it_goes():
    x = RNG.normal(size=(2, 2, 4, 4))
    G = RNG.normal(size=(2 * 3 * 3, 2 * 2 * 2))
    g = sourcegrad.grad(im2col_sum)
    _close(g(x, G), numeric_grad(im2col_sum, (x, G), 0))
    source = g._last.source
    assert "setitem(" not in source and "zero_at(" not in source
    assert "col[:, :, 0, 1, :, :] = " in source
    assert "+= " in source and source.count("unindex(") == 1  # one buffer, parts added in


def test_a_buffer_written_each_step():
    w, xs = RNG.normal(scale=0.5, size=(3, 3)), RNG.normal(size=(3, 3))
    g = sourcegrad.grad(steps, wrt=(0, 1))
    got = g(w, xs)
    for i in range(2):
        _close(got[i], numeric_grad(steps, (w, xs), i))
    assert "zero_at(" not in g._last.source


def test_exclusive_masks_and_second_order():
    x = RNG.normal(scale=2.0, size=(3, 4))
    g = sourcegrad.grad(both_masks)
    _close(g(x), numeric_grad(both_masks, (x,), 0))
    assert "zero_at(" not in g._last.source
    check_all(both_masks, x)  # forward mode and forward over reverse on the same code


def test_second_order_through_im2col():
    x = RNG.normal(size=(1, 2, 3, 3))
    G = RNG.normal(size=(4, 8))
    check_all(im2col_sum, x, G)


def test_a_view_read_before_the_write_only():
    def f(x):
        y = x * 2.0
        first = np.sum(y[0] ** 2)  # a view of y, read before the write only
        y[0] = np.sin(x[1])
        return first + np.sum(y * x)

    x = RNG.normal(size=(2, 3))
    _close(sourcegrad.grad(f)(x), numeric_grad(f, (x,), 0))


def test_a_long_generated_function_is_called_from_its_entry_not_inlined(monkeypatch):
    """Its first call parses and compiles nothing more (an unrolled loop of thousands of
    lines took 0.3-0.7 s to inline); the results are the same."""
    from sourcegrad.api import dispatch

    def f(x):
        for k in range(3):
            x = np.sin(x) * (k + 1.0)
        return np.sum(x)

    x = RNG.normal(size=4)
    want = sourcegrad.grad(f)(x)
    monkeypatch.setattr(dispatch, "INLINE_MAX_LINES", 0)
    called = []
    monkeypatch.setattr(dispatch, "_inlined", lambda *a: called.append(a))
    sourcegrad.api.clear()
    g = sourcegrad.grad(f)
    np.testing.assert_array_equal(g(x), want)
    np.testing.assert_array_equal(g(x), want)  # (through the entry)
    assert not called


def shared_adjoint(x0, x2):
    a = x2[1] + x0
    c = np.sin(a - np.cos(x0[:2, None]))
    return np.sum(c) + np.sum(np.tanh(x2))


def test_an_adjoint_two_gradients_add_is_not_changed_before_the_second_reads_it():
    """Fuzz long3-963 (a silently wrong gradient, made smaller): the adjoint of `x2[1] + x0`
    starts both dx0 and dx2[1]; dx0's part at `x0[:2, None]` was added into it in place,
    and dx2 then added the changed array (its `unindex` folded later, moving its read past
    the write)."""
    x0 = np.array([0.3, -0.5, 0.8])
    x2 = np.array([[0.1, 0.7, -0.3], [0.5, -0.9, 0.2]])
    dx0, dx2 = sourcegrad.grad(shared_adjoint, wrt=(0, 1))(x0, x2)
    np.testing.assert_allclose(dx0, numeric_grad(shared_adjoint, (x0, x2), 0), rtol=1e-7)
    np.testing.assert_allclose(dx2, numeric_grad(shared_adjoint, (x0, x2), 1), rtol=1e-7)
