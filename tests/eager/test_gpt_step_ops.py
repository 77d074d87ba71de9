"""The ops a small GPT's training step spends its time in, against torch: layer norm (one
NativeLayerNormBackward0 node keeping the forward's statistics), gelu (its node keeping the
forward's normal CDF), softmax / log_softmax over short rows (the attention's 32 keys, with
its -inf mask), cross_entropy, linear (addmm adding the bias into the product) and
embedding (EmbeddingBackward0, its gradient a one-hot product where that is small).

Values and first and second derivatives in float32 and float64, grad_fn names, and the
errors torch raises for wrong shapes. Central differences of the same entries are in
tests/eager/test_gradients.py; the compiled module's equality with eager in
tests/test_composites_once.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
R = np.random.default_rng(38)


def _pair(x, requires_grad=True):
    return sg.tensor(x, requires_grad=requires_grad), torch.tensor(x, requires_grad=requires_grad)


def _close(ours, theirs, dtype, scaled=False):
    """Equal to torch's at the dtype's tolerance; `scaled`: the absolute tolerance relative to
    the largest element (second derivatives in float32: sums of products that cancel)."""
    ours = ours.detach().numpy() if hasattr(ours, "detach") else ours
    theirs = theirs.detach().numpy()
    tol = dict(TOL[dtype])
    if scaled:
        tol["atol"] = tol["rtol"] * max(float(np.max(np.abs(theirs), initial=0.0)), 1.0)
    np.testing.assert_allclose(ours, theirs, **tol)


def _first_and_second(fn, arrays, dtype, second=True):
    """fn(lib, *tensors) in both libraries: values, grad_fn names, the gradients of a weighted
    sum (create_graph) and (`second`) the gradients of their squared sum."""
    ours, theirs = zip(*[_pair(a) for a in arrays])
    ys, yt = fn(sg, *ours), fn(torch, *theirs)
    _close(ys, yt, dtype)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    w = R.standard_normal(tuple(yt.shape)).astype(dtype)
    gs = sg.autograd.grad((ys * sg.tensor(w)).sum(), ours, create_graph=True)
    gt = torch.autograd.grad((yt * torch.tensor(w)).sum(), theirs, create_graph=True)
    for a, b in zip(gs, gt):
        _close(a, b, dtype, scaled=True)
    if not second:
        return ys, yt
    # (a bias's gradient is constant: ours does not require grad, torch's native backward
    # marks it as requiring grad all the same)
    used = [i for i, g in enumerate(gs) if g.requires_grad]
    assert all(gt[i].requires_grad for i in used)
    if not used:  # (linear in its inputs: no second derivative)
        return ys, yt
    hs = sg.autograd.grad(sum((gs[i] * gs[i]).sum() for i in used), ours, allow_unused=True)
    ht = torch.autograd.grad(sum((gt[i] * gt[i]).sum() for i in used), theirs, allow_unused=True)
    for a, b in zip(hs, ht):
        assert (a is None) == (b is None)
        if b is not None:
            _close(a, b, dtype, scaled=True)
    return ys, yt


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, normalized, affine",
    [((8, 32, 64), (64,), "both"), ((4, 3, 6), (3, 6), "both"), ((5, 7), (7,), "weight")]
    + [((5, 7), (7,), "none"), ((2, 3, 4), (4,), "bias")],
)
def test_layer_norm_is_one_node_with_torchs_derivatives(dtype, shape, normalized, affine):
    x = (R.standard_normal(shape) * 2 + 1).astype(dtype)
    w = R.uniform(0.5, 2, normalized).astype(dtype)
    b = R.standard_normal(normalized).astype(dtype)
    arrays = [x] + {"both": [w, b], "weight": [w], "bias": [b], "none": []}[affine]

    def fn(lib, x, *wb):
        weight = wb[0] if affine in ("both", "weight") else None
        bias = wb[-1] if affine in ("both", "bias") else None
        return lib.nn.functional.layer_norm(x, normalized, weight, bias, eps=1e-5)

    # (torch's double backward of a layer norm with a bias and no weight fails inside torch:
    # "Expected a proper Tensor but got None")
    ys, _ = _first_and_second(fn, arrays, dtype, second=affine != "bias")
    assert type(ys.grad_fn).__name__ == "NativeLayerNormBackward0"


def test_a_layer_norms_output_written_in_place_keeps_its_gradient():
    """Without weight and bias the result is the normalised array the node would keep: it
    keeps the input instead, so writing into the result changes no gradient (as torch's,
    which keeps the input, mean and rstd)."""
    x = R.standard_normal((4, 6))
    w = R.standard_normal((4, 6))
    grads = []
    for lib in (sg, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.layer_norm(t, (6,))
        y.mul_(3.0)
        (y * lib.tensor(w)).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-13)


def test_layer_norm_forward_mode_is_torchs():
    x, w, b = R.standard_normal((3, 5)), R.uniform(0.5, 2, 5), R.standard_normal(5)
    tangents = [R.standard_normal(a.shape) for a in (x, w, b)]
    out = []
    for lib in (sg, torch):
        fwd = lib.autograd.forward_ad
        with fwd.dual_level():
            duals = [
                fwd.make_dual(lib.tensor(a), lib.tensor(t)) for a, t in zip((x, w, b), tangents)
            ]
            y = lib.nn.functional.layer_norm(duals[0], (5,), duals[1], duals[2])
            out.append(fwd.unpack_dual(y).tangent.numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "shape, normalized",
    [((3, 4), (5,)), ((3, 4), (3, 4, 1)), ((4,), (2, 4))],
)
def test_layer_norm_refuses_a_shape_as_torch(shape, normalized):
    errors = []
    for lib in (sg, torch):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.layer_norm(lib.ones(shape), normalized)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_keeps_its_cdf_and_gives_torchs_derivatives(dtype):
    x = (R.standard_normal((8, 32, 16)) * 3).astype(dtype)
    ys, _ = _first_and_second(lambda lib, t: lib.nn.functional.gelu(t), [x], dtype)
    assert type(ys.grad_fn).__name__ == "GeluBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [(8, 4, 32, 32), (3, 40), (256, 65)])
def test_softmax_over_masked_short_rows_is_torchs(dtype, rows):
    """The attention's softmax: rows of 32 keys, masked with -inf above the diagonal (the
    max and sum over a short last axis take another path than numpy's reduction)."""
    x = R.standard_normal(rows).astype(dtype) * 4
    n = rows[-1]
    mask = np.triu(np.ones((min(rows[-2], n), n), bool), 1)
    mask = np.broadcast_to(np.pad(mask, ((0, rows[-2] - mask.shape[0]), (0, 0))), rows)
    for name in ("softmax", "log_softmax"):
        for lib in (sg, torch):  # the masked keys: -inf (log_softmax), 0 (softmax), exactly
            t = lib.tensor(x).masked_fill(lib.tensor(mask), float("-inf"))
            out = getattr(lib.nn.functional, name)(t, dim=-1).numpy()
            assert np.array_equal(np.isneginf(out) if name == "log_softmax" else out == 0, mask)

        def fn(lib, t, name=name):
            masked = t.masked_fill(lib.tensor(mask), float("-inf"))
            out = getattr(lib.nn.functional, name)(masked, dim=-1)
            # (log_softmax's masked entries, -inf, zeroed: a weighted sum of them is nan)
            return out.masked_fill(lib.tensor(mask), 0.0) if name == "log_softmax" else out

        _first_and_second(fn, [x], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_of_a_gpts_logits_is_torchs(dtype):
    logits = R.standard_normal((256, 65)).astype(dtype) * 3
    target = R.integers(0, 65, 256)
    target[::17] = -100
    for reduction in ("mean", "sum", "none"):

        def fn(lib, t, reduction=reduction):
            return lib.nn.functional.cross_entropy(t, lib.tensor(target), reduction=reduction)

        _first_and_second(fn, [logits], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 32, 64), (5, 64)])
def test_linear_with_a_bias_is_torchs(dtype, shape):
    x = R.standard_normal(shape).astype(dtype)
    w = R.standard_normal((48, 64)).astype(dtype)
    b = R.standard_normal(48).astype(dtype)
    _first_and_second(lambda lib, *a: lib.nn.functional.linear(*a), [x, w, b], dtype)


def test_addmm_with_a_bias_of_another_shape_or_dtype():
    """addmm's bias broadcasts into the product's array only where it changes neither the
    result's shape nor its dtype: a (1, m) or full bias, a number, and beta/alpha as torch."""
    m1, m2 = R.standard_normal((3, 4)), R.standard_normal((4, 2))
    for bias in (R.standard_normal((1, 2)), R.standard_normal((3, 2)), R.standard_normal(1)):
        ours = sg.addmm(sg.tensor(bias), sg.tensor(m1), sg.tensor(m2))
        theirs = torch.addmm(torch.tensor(bias), torch.tensor(m1), torch.tensor(m2))
        _close(ours, theirs, "float64")
    ours = sg.addmm(sg.tensor(bias), sg.tensor(m1), sg.tensor(m2), beta=0.5, alpha=2.0)
    theirs = torch.addmm(
        torch.tensor(bias), torch.tensor(m1), torch.tensor(m2), beta=0.5, alpha=2.0
    )
    _close(ours, theirs, "float64")
    with pytest.raises(RuntimeError) as ours_error:
        sg.addmm(sg.ones(2), sg.ones(3, 4), sg.ones(5, 2))
    with pytest.raises(RuntimeError) as torch_error:
        torch.addmm(torch.ones(2), torch.ones(3, 4), torch.ones(5, 2))
    assert str(ours_error.value) == str(torch_error.value)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("vocab, padding_idx", [(65, None), (65, 3), (65, -2), (20000, None)])
def test_embedding_is_torchs(dtype, vocab, padding_idx):
    """Rows repeated and a padding row (no gradient into it, as torch's); a large vocabulary
    takes the scatter-add path instead of the one-hot product."""
    weight = R.standard_normal((vocab, 16)).astype(dtype)
    idx = R.integers(0, vocab, (8, 32))
    idx[0, :5] = 3
    idx[1, :5] = vocab - 2
    ys, _ = _first_and_second(
        lambda lib, w: lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=padding_idx),
        [weight],
        dtype,
    )
    assert type(ys.grad_fn).__name__ == "EmbeddingBackward0"
