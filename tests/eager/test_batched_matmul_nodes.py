"""Batched `a @ b` against torch: the whole graph torch records (ExpandBackward0, then
ViewBackward0 / ReshapeAliasBackward0 where the fold of the batch is a view, CloneBackward0
and UnsafeViewBackward0 where it is a copy, BmmBackward0, UnsafeViewBackward0), the values,
the gradients of both operands, and the errors, for broadcast batches, vectors, and the
strided operands of an attention (q @ k.transpose(-2, -1), att @ v); and torch's choice of
one folded mm / mv over a bmm for a batch times a matrix or vector, either way round.
"""

from __future__ import annotations

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(1138)


def _graph(fn, lib):
    """Node names of fn's graph, depth first (what next_functions lists, leaves included)."""
    names = []

    def walk(node, depth):
        if node is None:
            return
        names.append((depth, node.name()))
        for child, nr in node.next_functions:
            walk(child, depth + 1)

    walk(fn, 0)
    return names


def _operand(lib, x, how):
    """A leaf x (its gradient checked), taken as `how` says: as it is, transposed in its last
    two dims, or viewed from an attention's (B, T, H * D) layout as (B, H, T, D)."""
    leaf = lib.tensor(x, requires_grad=True)
    if how == "plain":
        return leaf, leaf
    if how == "transposed":
        return leaf, leaf.transpose(-2, -1)
    b, h, t, d = x.shape
    flat = leaf.transpose(1, 2).reshape(b, t, h * d)  # (the layout c_attn's output has)
    return leaf, flat.view(b, t, h, d).transpose(1, 2)


CASES = [
    ((8, 4, 32, 16), "heads", (8, 4, 32, 16), "heads_t"),  # q @ k.transpose(-2, -1)
    ((8, 4, 32, 32), "plain", (8, 4, 32, 16), "heads"),  # att @ v
    ((2, 3, 4), "plain", (2, 4, 5), "plain"),
    ((2, 1, 3, 4), "plain", (5, 4, 2), "plain"),
    ((2, 3, 4), "plain", (2, 5, 4), "transposed_b"),
    ((2, 4, 3), "transposed", (2, 4, 5), "plain"),
    ((2, 3, 0), "plain", (2, 0, 4), "plain"),
]
# (left out: a batch times one of batch size 1, (2, 3, 4) @ (1, 4, 5), where torch 2.13
# records an mm and ours a bmm)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sa, how_a, sb, how_b", CASES)
def test_batched_matmul_records_torchs_graph(dtype, sa, how_a, sb, how_b):
    a = R.standard_normal(sa).astype(dtype)
    b = R.standard_normal(sb).astype(dtype)
    transpose_b = how_b in ("heads_t", "transposed_b")
    how_b = {"heads_t": "heads", "transposed_b": "plain"}.get(how_b, how_b)
    out, gy = {}, None
    for lib in (sg, torch):
        la, xa = _operand(lib, a, how_a)
        lb, xb = _operand(lib, b, how_b)
        if transpose_b:
            xb = xb.transpose(-2, -1)
        y = xa @ xb
        if gy is None:
            gy = R.standard_normal(tuple(y.shape)).astype(dtype)
        (y * lib.tensor(gy)).sum().backward()
        out[lib] = (y.detach().numpy(), la.grad.numpy(), lb.grad.numpy(), _graph(y.grad_fn, lib))
    ours, theirs = out[sg], out[torch]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for x, y in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(x, y, **tol)
    assert ours[3] == theirs[3]


@pytest.mark.parametrize(
    "sa, sb",
    [((2, 3, 4), (2, 5, 6)), ((2, 3, 4), (3, 4, 5)), ((2, 1, 3, 4), (3, 5, 6)), ((3,), (2, 4, 5))],
)
def test_batched_matmul_refuses_as_torch(sa, sb):
    messages = []
    for lib in (sg, torch):
        a = lib.tensor(np.ones(sa, np.float32), requires_grad=True)
        b = lib.tensor(np.ones(sb, np.float32), requires_grad=True)
        with pytest.raises(RuntimeError) as err:
            a @ b
        messages.append(str(err.value))
    assert messages[0] == messages[1]


FOLDS = [
    ((3, 4), (2, 4, 5)),
    ((4,), (2, 3, 4, 5)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 0), (0, 5)),
    ((0, 3, 4), (4, 2)),
]


@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("sa, sb", FOLDS)
def test_matmul_folds_a_batch_where_torch_does(sa, sb, grads, strided):
    """torch's should_fold: one mm / mv (b transposed where b has the batch, the result
    transposed back and copied) where the smaller operand requires grad or the batch folds
    without a copy, else the batched product (its vector squeezed back: SqueezeBackward1)."""
    a = R.standard_normal(sa)
    b = R.standard_normal(sb)
    out = {}
    for lib in (sg, torch):
        la = lib.tensor(a, requires_grad=grads[0])
        lb = lib.tensor(b, requires_grad=grads[1])
        xa, xb = la, lb
        if strided and len(sa) >= 3:  # (a batch whose dims do not fold without a copy)
            la = lib.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)), requires_grad=grads[0])
            xa = la.transpose(0, 1)
        if strided and len(sb) >= 3:
            lb = lib.tensor(np.ascontiguousarray(np.swapaxes(b, 0, 1)), requires_grad=grads[1])
            xb = lb.transpose(0, 1)
        y = xa @ xb
        y.sum().backward()
        got = [t.grad.numpy() for t in (la, lb) if t.requires_grad]
        out[lib] = (y.detach().numpy(), got, _graph(y.grad_fn, lib))
    ours, theirs = out[sg], out[torch]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-12)
    for x, y in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    assert ours[2] == theirs[2]
