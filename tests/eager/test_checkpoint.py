"""sourcegrad.utils.checkpoint against torch.utils.checkpoint (torch is the oracle)."""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.utils.checkpoint as sg_checkpoint

torch = pytest.importorskip("torch")
import torch.utils.checkpoint as torch_checkpoint  # noqa: E402


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=3)


def _mlp_block(lib, ck, use_grad_api):
    X, W, b = _data()
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    bias = lib.tensor(b, requires_grad=True)  # read from the closure, not an argument

    def block(h, w):
        return lib.tanh(h @ w + bias).sin()

    y = ck.checkpoint(block, x * 2.0, w, use_reentrant=False)
    loss = (y**2).sum() + y.mean()
    if use_grad_api:
        return [g.numpy() for g in lib.autograd.grad(loss, [x, w, bias])]
    loss.backward()
    return [x.grad.numpy(), w.grad.numpy(), bias.grad.numpy()]


@pytest.mark.parametrize("use_grad_api", [False, True])
def test_gradients_match_torch_arguments_and_closure_leaves(use_grad_api):
    expected = _mlp_block(torch, torch_checkpoint, use_grad_api)
    got = _mlp_block(sg, sg_checkpoint, use_grad_api)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13)


def test_the_region_runs_again_in_the_backward_and_keeps_nothing():
    calls = []
    X, W, _ = _data()

    def block(h, w):
        calls.append(1)
        return sg.exp(h @ w)

    x = sg.tensor(X, requires_grad=True)
    y = sg_checkpoint.checkpoint(block, x, sg.tensor(W), use_reentrant=False)
    assert len(calls) == 1
    assert type(y.grad_fn).__name__ == "_CheckpointBackward"
    # the node's only inputs are the region's inputs: the exp's saved result is not held
    nodes = [n for n, _ in y.grad_fn.next_functions]
    assert len(nodes) == 2 and type(nodes[0]).__name__ == "AccumulateGrad" and nodes[1] is None
    y.sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X @ W) @ W.T, rtol=1e-12)


def test_module_parameters_and_dropout_rng_match_torch():
    X = np.random.default_rng(1).normal(size=(6, 4))

    def run(lib, ck):
        lib.manual_seed(0)
        layer = lib.nn.Linear(4, 4).double()
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(np.arange(16.0).reshape(4, 4) / 10.0))
            layer.bias.fill_(0.1)
        x = lib.tensor(X, requires_grad=True)
        drop = lib.nn.Dropout(0.5)

        def block(h):
            return drop(lib.tanh(layer(h)))

        lib.manual_seed(3)
        y = ck.checkpoint(block, x, use_reentrant=False)
        keep = (y != 0).numpy()
        y.pow(2).sum().backward()
        return keep, x.grad.numpy(), layer.weight.grad.numpy(), layer.bias.grad.numpy()

    # the dropout masks come from each library's own generator: compare against the mask
    # the region drew, and check the recomputation drew the same one
    got = run(sg, sg_checkpoint)
    keep = got[0]
    Wt = np.arange(16.0).reshape(4, 4) / 10.0
    h = np.tanh(X @ Wt.T + 0.1)
    y = h * keep * 2.0
    dh = 2.0 * y * keep * 2.0 * (1.0 - h * h)
    np.testing.assert_allclose(got[1], dh @ Wt, rtol=1e-12)
    np.testing.assert_allclose(got[2], dh.T @ X, rtol=1e-12)
    np.testing.assert_allclose(got[3], dh.sum(0), rtol=1e-12)
    expected = run(torch, torch_checkpoint)
    assert expected[1].shape == got[1].shape


def test_a_non_leaf_read_from_the_closure_is_refused():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    outside = x * 3.0
    with pytest.raises(RuntimeError, match="pass it as an argument"):
        sg_checkpoint.checkpoint(lambda h: h * outside, sg.tensor([1.0, 1.0]), use_reentrant=False)


def test_keyword_arguments_as_torch():
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        sg_checkpoint.checkpoint(
            lambda h, scale: h * scale, sg.tensor([1.0]), use_reentrant=True, scale=2.0
        )
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    sg_checkpoint.checkpoint(
        lambda h, scale: (h * scale).sum(), x, use_reentrant=False, scale=3.0
    ).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_under_no_grad_it_is_a_plain_call():
    with sg.no_grad():
        y = sg_checkpoint.checkpoint(
            lambda h: h * 2.0, sg.tensor([1.0], requires_grad=True), use_reentrant=False
        )
    assert y.grad_fn is None and not y.requires_grad
