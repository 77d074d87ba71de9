"""`sourcegrad.nn.utils`: gradient clipping and parameter vectors, against torch.nn.utils."""

import math

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)
VALUES = [RNG.normal(size=(3, 4)) * 3, RNG.normal(size=(5,)), RNG.normal(size=(2, 1, 2))]


def _with_grads(lib, dtype, scale=1.0, skip=()):
    params = []
    for i, v in enumerate(VALUES):
        p = lib.nn.Parameter(lib.tensor(v.astype(dtype)))
        if i not in skip:
            p.grad = lib.tensor((v * scale + 0.5).astype(dtype))
        params.append(p)
    return params


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(dtype, norm_type, max_norm):
    ours, theirs = _with_grads(sg, dtype, skip=(1,)), _with_grads(torch, dtype, skip=(1,))
    total = sg.nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    rtol = 1e-12 if dtype == np.float64 else 2e-6
    assert isinstance(total, sg.Tensor) and total.shape == () and not total.requires_grad
    assert str(total.dtype) == str(ttotal.dtype)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=rtol)
    for p, t in zip(ours, theirs):
        assert (p.grad is None) == (t.grad is None)
        if p.grad is not None:
            assert p.grad.dtype == p.dtype
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-30)


def test_clip_grad_norm_of_one_tensor_and_of_nothing():
    p = sg.nn.Parameter(sg.tensor([3.0, 4.0]))
    p.grad = sg.tensor([3.0, 4.0])
    assert sg.nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    q = sg.nn.Parameter(sg.ones(2))
    total = sg.nn.utils.clip_grad_norm_([q], 1.0)
    assert total.item() == 0.0 and total.dtype == sg.float32 and q.grad is None
    with pytest.warns(UserWarning, match="empty generator"):
        sg.nn.utils.clip_grad_norm_((x for x in []), 1.0)


def test_non_finite_norms():
    for lib in (sg, torch):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.tensor([1.0, float("inf")])
        with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p = sg.nn.Parameter(sg.ones(2))
    p.grad = sg.tensor([1.0, float("nan")])
    assert math.isnan(sg.nn.utils.clip_grad_norm_([p], 1.0).item())


def test_clip_grad_value_matches_torch():
    ours, theirs = _with_grads(sg, np.float64, skip=(2,)), _with_grads(torch, np.float64, skip=(2,))
    grad = ours[0].grad
    assert sg.nn.utils.clip_grad_value_(ours, 0.7) is None
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    assert ours[0].grad is grad  # in place
    for p, t in zip(ours, theirs):
        if p.grad is not None:
            np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    assert np.abs(ours[0].grad.numpy()).max() == 0.7


def test_parameters_to_vector_and_back():
    ours, theirs = _with_grads(sg, np.float64), _with_grads(torch, np.float64)
    vec = sg.nn.utils.parameters_to_vector(ours)
    tvec = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vec.detach().numpy(), tvec.detach().numpy())
    for p in ours:
        p.grad = None
    (vec * sg.arange(vec.numel(), dtype=sg.float64)).sum().backward()  # differentiable
    np.testing.assert_array_equal(ours[1].grad.numpy(), np.arange(12, 17))
    new = sg.arange(vec.numel(), dtype=sg.float64) * 2
    sg.nn.utils.vector_to_parameters(new, ours)
    assert ours[2].shape == (2, 1, 2) and ours[2].detach().numpy().ravel().tolist() == [
        34.0,
        36.0,
        38.0,
        40.0,
    ]
    for lib, params in ((sg, ours), (torch, theirs)):
        with pytest.raises(TypeError, match="expected torch.Tensor, but got: numpy.ndarray"):
            lib.nn.utils.vector_to_parameters(np.zeros(21), params)


def test_clip_grad_norm_of_an_inf_gradient_warns_nothing_as_torch():
    """An inf gradient: total norm inf, the gradients scaled by 0 (nan where inf), and no
    warning (numpy's "invalid value encountered in multiply" leaked into the program's
    warnings, which a torch program does not see)."""
    import warnings

    out = {}
    for lib in (torch, sg):
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.tensor([float("inf"), 1.0, -2.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            total = lib.nn.utils.clip_grad_norm_([p], 1.0)
        out[lib.__name__] = (float(total), p.grad.numpy().tolist(), len(caught))
    assert str(out["sourcegrad"]) == str(out["torch"])
