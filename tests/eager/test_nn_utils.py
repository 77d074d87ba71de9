"""`sourcegrad.nn.utils` (gradient clipping, parameter vectors) against torch.nn.utils."""
import numpy as np
import pytest

import sourcegrad as sg


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _model_with_grads(lib):
    lin = lib.nn.Linear(3, 2)
    emb = lib.nn.Linear(2, 1, bias=False)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3) / 7))
        lin.bias.fill_(1.0)
        emb.weight.fill_(-2.0)
    emb(lin(lib.ones(4, 3))).pow(2).sum().backward()
    return [lin.weight, lin.bias, emb.weight, lib.nn.Parameter(lib.ones(2))]  # the last: no grad


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, "inf", float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    t_params, s_params = _model_with_grads(torch), _model_with_grads(sg)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type=norm_type)
    s_total = sg.nn.utils.clip_grad_norm_(s_params, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(s_total.item(), t_total.item(), rtol=1e-6)
    assert s_total.dtype == sg.float32 and s_total.shape == ()
    for a, b in zip(t_params, s_params):
        if a.grad is None:
            assert b.grad is None
        else:
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-6)


def test_clip_grad_value_and_errors(torch):
    t_params, s_params = _model_with_grads(torch), _model_with_grads(sg)
    torch.nn.utils.clip_grad_value_(t_params, 0.3)
    sg.nn.utils.clip_grad_value_(s_params, 0.3)
    for a, b in zip(t_params[:3], s_params[:3]):
        np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())
    assert sg.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
    p = sg.nn.Parameter(sg.ones(2))
    p.grad = sg.tensor([float("inf"), 1.0])
    q = torch.nn.Parameter(torch.ones(2))
    q.grad = torch.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError) as s_err:
        sg.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.utils.clip_grad_norm_(q, 1.0, error_if_nonfinite=True)
    assert str(s_err.value) == str(t_err.value)


def test_parameters_vector_round_trip(torch):
    net = sg.nn.Sequential(sg.nn.Linear(3, 2), sg.nn.Linear(2, 1))
    vec = sg.nn.utils.parameters_to_vector(net.parameters())
    assert vec.shape == (11,) and vec.grad_fn.name() == "CatBackward0"
    (vec * sg.arange(11.0)).sum().backward()
    np.testing.assert_array_equal(net[0].weight.grad.numpy(), np.arange(6.0).reshape(2, 3))
    sg.nn.utils.vector_to_parameters(sg.arange(11.0), net.parameters())
    assert net[1].bias.item() == 10.0 and net[0].weight.is_leaf
    assert isinstance(net[0].weight, sg.nn.Parameter) and net[0].weight.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        sg.nn.utils.vector_to_parameters([1.0], net.parameters())
