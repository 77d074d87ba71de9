"""Shared helpers of the convolution, pooling and batch-norm tests: run a function in both
libraries and compare values, gradients and node names."""

import numpy as np
import pytest

import sourcegrad as sg


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """torch on one thread while a module's tests run: its thread pool costs more than the
    tiny tensors here take (4x on the shared 2-core machine); restored afterwards."""
    torch = pytest.importorskip("torch")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def to_np(t):
    return t.detach().numpy()


def compare_fn(
    torch, name, arrays, kwargs=None, rtol=1e-10, atol=1e-12, grads=True, node=True, seed=0
):
    """F.<name>(*arrays, **kwargs) in torch and sourcegrad: values, gradients, grad_fn name.

    Float arrays become Tensors that require grad (other arguments pass as they are); the
    loss is sum(out * r) with a fixed random r."""
    import torch.nn.functional as TF

    import sourcegrad.nn.functional as SF

    kwargs = kwargs or {}
    t_in = [
        torch.tensor(a, requires_grad=grads and a.dtype.kind == "f")
        if isinstance(a, np.ndarray)
        else a
        for a in arrays
    ]
    s_in = [
        sg.tensor(a, requires_grad=grads and a.dtype.kind == "f")
        if isinstance(a, np.ndarray)
        else a
        for a in arrays
    ]
    yt = getattr(TF, name)(*t_in, **kwargs)
    ys = getattr(SF, name)(*s_in, **kwargs)
    if isinstance(yt, tuple):  # return_indices
        np.testing.assert_array_equal(to_np(ys[1]), to_np(yt[1]))
        assert ys[1].dtype == sg.int64
        yt, ys = yt[0], ys[0]
    assert tuple(ys.shape) == tuple(yt.shape)
    np.testing.assert_allclose(to_np(ys), to_np(yt), rtol=rtol, atol=atol)
    if node and yt.grad_fn is not None:
        assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    if grads and yt.requires_grad:
        r = np.random.default_rng(seed).standard_normal(tuple(yt.shape)).astype(to_np(yt).dtype)
        (yt * torch.tensor(r)).sum().backward()
        (ys * sg.tensor(r)).sum().backward()
        for i, (a, b) in enumerate(zip(t_in, s_in)):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                np.testing.assert_allclose(
                    to_np(b.grad),
                    to_np(a.grad),
                    rtol=rtol,
                    atol=atol,
                    err_msg=f"gradient of argument {i}",
                )
    return ys, yt


def raises_like(torch, fn_t, fn_s):
    """Both raise; the same exception type and message."""
    try:
        fn_t()
    except Exception as e:  # noqa: BLE001 - any torch error is the oracle
        expected = e
    else:
        raise AssertionError("torch did not raise")
    try:
        fn_s()
    except Exception as e:  # noqa: BLE001
        got = e
    else:
        raise AssertionError(f"sourcegrad did not raise; torch raised {expected!r}")
    assert isinstance(got, type(expected)), (got, expected)
    assert str(got) == str(expected)
