"""CUDA tensors (CuPy): devices, moving tensors, errors, and gradients on a GPU.

Without a CUDA device (CI never has one) the first part runs: CPU tensors report
their device, `.cpu()` is a no-op, and asking for CUDA raises one clear
RuntimeError. The tests marked `gpu` need a device and skip, saying why, without
one; with one they run the seed walkthrough on `.cuda()` tensors and compare the
gradients of a set of ops on the GPU with the same ops on the CPU. Nothing here
fakes a GPU.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import sourcegrad as torch
import sourcegrad.nn.functional as F
from sourcegrad.eager import devices

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _no_device_reason():
    try:
        devices.cupy()
    except RuntimeError as e:
        return str(e)
    return None


NO_DEVICE = _no_device_reason()


def gpu(test):
    """A test that needs a CUDA device: marked `gpu`, skipped (with CuPy's reason) without one."""
    skip = pytest.mark.skipif(NO_DEVICE is not None, reason=f"needs a CUDA device: {NO_DEVICE}")
    return pytest.mark.gpu(skip(test))


without_device = pytest.mark.skipif(NO_DEVICE is None, reason="a CUDA device is present")


# --- on any machine --------------------------------------------------------------------------


def test_cpu_tensors_report_the_cpu():
    x = torch.ones(2, 3)
    assert x.device == torch.device("cpu") and x.device.type == "cpu" and x.device.index is None
    assert repr(x.device) == "device(type='cpu')" and str(x.device) == "cpu"
    assert x.device == "cpu" and not x.is_cuda and x.is_cpu and x.get_device() == -1
    assert (x * 2).device == x.device and x.sum().device == x.device


def test_cpu_and_to_cpu_are_no_ops_on_the_cpu():
    w = torch.ones(3, requires_grad=True)
    assert w.cpu() is w and w.to("cpu") is w and w.to(torch.device("cpu")) is w
    assert w.to(device="cpu") is w and w.to("cpu", torch.float32) is w
    assert w.cpu().is_leaf and w.cpu().grad_fn is None
    y = w.to("cpu", torch.float64)  # a dtype change still copies, recorded as torch does
    assert y.dtype is torch.float64 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    y.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0] and w.grad.device == w.device
    assert w.to("cpu", copy=True) is not w


def test_device_objects_follow_torch():
    assert repr(torch.device("cuda")) == "device(type='cuda')"
    assert repr(torch.device("cuda:1")) == "device(type='cuda', index=1)"
    assert repr(torch.device("cuda", 0)) == "device(type='cuda', index=0)"
    assert str(torch.device("cuda", 0)) == "cuda:0" and str(torch.device("cuda")) == "cuda"
    assert torch.device("cuda", 0) == torch.device("cuda:0") == "cuda:0"
    assert torch.device("cuda") != torch.device("cuda:0")  # as in torch: no index is not 0
    assert torch.device(0) == torch.device("cuda:0")
    assert torch.device(torch.device("cuda:2")).index == 2
    assert len({torch.device("cpu"), torch.device("cpu"), torch.device("cuda:0")}) == 2
    for bad in ("tpu", "cuda:x", "cuda:-1"):
        with pytest.raises(RuntimeError):
            torch.device(bad)
    with pytest.raises(RuntimeError):
        torch.ones(2, device="tpu")


@without_device
def test_without_a_device_asking_for_cuda_says_so():
    assert not torch.cuda.is_available() and torch.cuda.device_count() == 0
    x = torch.ones(2, requires_grad=True)
    calls = [
        lambda: x.cuda(),
        lambda: x.to("cuda"),
        lambda: x.to(device="cuda:0"),
        lambda: torch.zeros(2, device="cuda"),
        lambda: torch.ones(2, device="cuda"),
        lambda: torch.randn(2, 3, device="cuda"),
        lambda: torch.arange(3, device="cuda"),
        lambda: torch.tensor([1.0], device="cuda"),
        lambda: torch.full((2,), 1.0, device="cuda"),
        lambda: torch.zeros_like(x, device="cuda"),
        lambda: x.new_zeros(2, device="cuda"),
        lambda: torch.cuda.synchronize(),
        lambda: torch.cuda.current_device(),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match=r"^no CUDA device is available \(CuPy"):
            call()
    assert x.device == torch.device("cpu") and x.grad is None  # nothing changed


@pytest.mark.long
@without_device
def test_the_gpu_script_without_a_device_prints_one_line():
    env = dict(os.environ, PYTHONPATH=ROOT)
    for args, status in (([], 0), (["--strict"], 2)):
        out = subprocess.run(
            [sys.executable, "-m", "sourcegrad.bench.gpu", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert out.returncode == status, out.stderr
        lines = out.stdout.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "sourcegrad.bench.gpu: no CUDA device is available"
        ), out.stdout
        assert "nothing measured" in lines[0] and not out.stderr


# --- on a GPU ----------------------------------------------------------------------------------


@gpu
def test_seed_walkthrough_on_cuda():
    """The four sections of examples/seed_walkthrough.py with every tensor on the GPU."""
    # 1. a dynamic graph
    w = torch.tensor([2.0], device="cuda", requires_grad=True)
    b = torch.tensor([3.0]).cuda().requires_grad_()
    x = torch.tensor([4.0]).cuda()
    y = w * x + b
    assert y.is_cuda and y.device == torch.device("cuda", 0) and y.item() == 11.0
    assert type(y.grad_fn).__name__ == "AddBackward0"
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == [
        "MulBackward0",
        "AccumulateGrad",
    ]
    y.backward()
    assert w.grad.is_cuda and (w.grad.item(), b.grad.item()) == (4.0, 1.0)
    # 2. gradients accumulate
    x = torch.tensor([3.0], device="cuda", requires_grad=True)
    seen = []
    for _ in range(3):
        y = x**2
        y.backward()
        seen.append(x.grad.item())
    assert seen == [6.0, 12.0, 18.0]
    x.grad.zero_()
    assert x.grad.item() == 0.0 and x.grad.is_cuda
    # 3. detach and inference mode
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        y.detach().numpy()
    raw = y.detach().cpu().numpy()
    assert isinstance(raw, np.ndarray) and raw.tolist() == [9.0]
    with torch.inference_mode():
        features = torch.randn(64, 512, device="cuda")
        predictions = features @ torch.randn(512, 10).cuda()
    assert predictions.is_cuda and predictions.shape == (64, 10) and predictions.is_inference()
    assert not predictions.requires_grad and predictions.grad_fn is None

    # 4. a custom Function
    class CustomReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input_tensor):
            ctx.save_for_backward(input_tensor)
            return input_tensor.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input_tensor,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input_tensor <= 0] = 0
            return grad_input

    z = torch.tensor([-2.0, 3.0, 5.0], requires_grad=True, device="cuda")
    CustomReLU.apply(z).sum().backward()
    assert z.grad.is_cuda and z.grad.tolist() == [0.0, 1.0, 1.0]
    assert repr(z) == "tensor([-2.,  3.,  5.], device='cuda:0', requires_grad=True)"
    assert repr(z.grad) == "tensor([0., 1., 1.], device='cuda:0')"


@gpu
def test_factories_and_moves():
    for t in (
        torch.zeros(2, 3, device="cuda"),
        torch.ones(2, device="cuda:0"),
        torch.empty(4, device=torch.device("cuda")),
        torch.full((2,), 7.0, device="cuda"),
        torch.eye(3, device="cuda"),
        torch.arange(5, device="cuda"),
        torch.linspace(0, 1, 5, device="cuda"),
        torch.rand(3, device="cuda"),
        torch.tensor([[1, 2], [3, 4]], device="cuda"),
        torch.randint(0, 5, (3,), device="cuda"),
    ):
        assert t.is_cuda and t.device == torch.device("cuda", 0) and t.get_device() == 0
    torch.manual_seed(3)
    a = torch.randn(3, 4)
    torch.manual_seed(3)
    b = torch.randn(3, 4, device="cuda")  # drawn from the same generator, then copied
    assert torch.equal(a, b.cpu())
    for like in (torch.zeros_like, torch.ones_like, torch.rand_like, torch.randn_like):
        assert like(b).is_cuda and like(b, device="cpu").device == torch.device("cpu")
    assert b.new_zeros(2).is_cuda and b.new_tensor([1.0]).is_cuda
    assert torch.tensor(b).is_cuda  # a copy stays on its device (with torch's warning)
    c = b.cuda()
    assert c is b and b.to("cuda") is b and b.to("cuda:0") is b
    back = b.cpu()
    assert back.device == torch.device("cpu") and np.array_equal(back.numpy(), a.numpy())
    assert b.to(torch.float64).is_cuda and b.to("cpu", torch.float64).dtype is torch.float64
    assert a.to(b).is_cuda and b.double().is_cuda and b.to(torch.int64).is_cuda
    assert np.array_equal(b.numpy(force=True), a.numpy())
    assert b.tolist() == a.tolist() and b[0, 0].item() == a[0, 0].item()
    assert float(b.sum()) == pytest.approx(float(a.sum()), rel=1e-5, abs=1e-5)


@gpu
def test_numpy_on_cuda_raises_torchs_error():
    x = torch.ones(2, device="cuda", requires_grad=True)
    message = (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
        "tensor to host memory first."
    )
    for call in (lambda: x.numpy(), lambda: x.detach().numpy(), lambda: np.asarray(x.detach())):
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == message


@gpu
def test_mixing_devices_raises_torchs_error():
    a = torch.ones(2, 2)
    b = torch.ones(2, 2, device="cuda")
    message = (
        "Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!"
    )
    for call in (
        lambda: a + b,
        lambda: b * a,
        lambda: a @ b,
        lambda: b @ a,
        lambda: torch.cat([a, b]),
        lambda: torch.where(b > 0, a, b),
        lambda: torch.stack([b, a]),
        lambda: b.gather(1, torch.zeros(2, 1).long()),
        lambda: torch.allclose(a, b),
    ):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == message
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same"):
        a[torch.tensor([0], device="cuda")]
    with pytest.raises(RuntimeError, match="expected device cuda:0 but got cpu"):
        (b.requires_grad_() * 2).sum().backward(torch.tensor(1.0))
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with device type"):
        w.grad = torch.ones(2, device="cuda")


@gpu
def test_a_0d_cpu_tensor_joins_a_gpu_op_and_gets_its_gradient_back():
    x = torch.ones(3, device="cuda", requires_grad=True)
    s = torch.tensor(2.0, requires_grad=True)  # 0-d, on the CPU
    y = (x * s + s).sum()
    assert y.is_cuda
    y.backward()
    assert x.grad.is_cuda and x.grad.tolist() == [2.0, 2.0, 2.0]
    assert s.grad.device == torch.device("cpu") and s.grad.item() == 6.0


@gpu
def test_gradients_flow_across_cuda_and_cpu():
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)  # a CPU leaf
    u = torch.tensor([0.5, 0.5, 0.5], device="cuda", requires_grad=True)
    g = w.cuda()
    assert type(g.grad_fn).__name__ == "ToCopyBackward0" and not g.is_leaf
    loss = ((g * u).cpu() ** 2).sum()
    assert loss.device == torch.device("cpu")
    loss.backward()
    assert w.grad.device == torch.device("cpu") and u.grad.is_cuda
    np.testing.assert_allclose(w.grad.numpy(), [0.5, -1.0, 1.5])
    np.testing.assert_allclose(u.grad.cpu().numpy(), [1.0, 4.0, 9.0])


def _inplace(a, b):
    c = a * 1.0
    c[0] = b[0]
    c.mul_(2.0)
    c += b
    c[:, 1:3] *= 3.0
    return c.sum() + (c * c).sum()


def _indices(a):
    return torch.tensor([[0], [2], [1]], device=a.device), torch.tensor([2, 0, 0], device=a.device)


OPS = {
    "arithmetic": lambda a, b: ((a + b) * a / (b.abs() + 1) - 2.0 * b).sum(),
    "broadcasting": lambda a, b: (a * b[0] + b[:, :1] - 1.0).sum(),
    "exp_log_tanh": lambda a, b: (a.exp() + (b * b + 1).log() + a.tanh() * b.sin()).mean(),
    "sigmoid_relu_erf": lambda a, b: (a.sigmoid() * b.relu() + a.erf() + F.gelu(b)).sum(),
    "pow_sqrt_rsqrt": lambda a, b: ((a * a + 1).sqrt() ** 1.5 + (b * b + 1).rsqrt()).sum(),
    "matmul": lambda a, b: (a @ b.T).tanh().sum() + (a[0] @ b[1]) + (a.T @ b).sum(),
    "reductions": lambda a, b: (
        (a.sum(0) * b.mean(0)).sum()
        + a.var(1).sum()
        + b.std()
        + a.max()
        + a.amax(1).sum()
        + a.min(0).values.sum()
    ),
    "softmax_logsumexp": lambda a, b: (
        (a.softmax(1) * b).sum() + a.log_softmax(0).sum() + a.logsumexp(1).sum()
    ),
    "norm": lambda a, b: a.norm() + b.norm(dim=1).sum(),
    "indexing": lambda a, b: (
        a[1:, ::2].sum() + a[[0, 2, 2]].sum() + b[b > 0].sum() + a[:, 1].sum() + a[None, 2].sum()
    ),
    "indexing_squared": lambda a, b: (
        (a[[0, 2, 2]] ** 2).sum()
        + (b[b > 0] ** 3).sum()
        + (a.gather(1, _indices(a)[0]) ** 2).sum()
        + (a[:, 1:] * b[:, :3]).pow(2).sum()
    ),
    "sort_topk": lambda a, b: a.sort(1).values[:, 0].sum() + b.topk(2, dim=1).values.sum(),
    "cat_stack_split": lambda a, b: (
        torch.cat([a, b], 0).sum(1).pow(2).sum()
        + torch.stack([a, b]).mean(0).sum()
        + sum(p.sum() ** 2 for p in a.split(2, 1))
        + sum(r.sum() ** 2 for r in b.unbind(0))
    ),
    "where_clamp": lambda a, b: (
        torch.where(a > b, a, b * 2).sum()
        + a.clamp(-0.5, 0.5).sum()
        + a.clamp(min=b).sum()
        + a.masked_fill(b > 0, 0.0).sum()
    ),
    "views": lambda a, b: (
        (a.t().reshape(-1) * b.T.flatten()).sum()
        + (a.unsqueeze(0).expand(2, 3, 4) * b).sum()
        + a.permute(1, 0).contiguous().view(-1)[::3].sum()
    ),
    "inplace": _inplace,
    "scans_flip_tri": lambda a, b: (
        a.cumsum(1).sum()
        + (a * 0.5 + 1).cumprod(0).sum()
        + (a.flip(0).roll(1, 1).tril() * b.triu()).sum()
    ),
    "gather_index_select": lambda a, b: (
        a.gather(1, _indices(a)[0]).sum()
        + (a.index_select(0, _indices(a)[1]) * b).sum()
        + a.diagonal().sum()
    ),
    "losses": lambda a, b: (
        F.mse_loss(a, b) + F.cross_entropy(a, _indices(a)[1]) + F.softplus(b).sum()
    ),
    "prod": lambda a, b: (
        (a.prod(1) * b.prod(0)[:3]).sum() + (a * 0.5).prod() + a.prod(0, keepdim=True).sum()
    ),
}


def _compare(fn, create_graph=False):
    rng = np.random.default_rng(7)
    a0, b0 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    results = []
    for dev in ("cpu", "cuda"):
        a = torch.tensor(a0, device=dev, requires_grad=True)
        b = torch.tensor(b0, device=dev, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(a, b)
            grads = torch.autograd.grad(out, (a, b), create_graph=create_graph)
            if create_graph:
                grads = torch.autograd.grad(sum((g * g).sum() for g in grads), (a, b))
        assert out.device.type == dev and all(g.device == a.device for g in grads)
        results.append([out.item()] + [g.detach().cpu().numpy() for g in grads])
    cpu, cuda = results
    for c, g in zip(cpu, cuda):
        np.testing.assert_allclose(g, c, rtol=1e-10, atol=1e-12)


@gpu
@pytest.mark.parametrize("name", sorted(OPS))
def test_gradients_on_cuda_match_the_cpu(name):
    _compare(OPS[name])


@gpu
@pytest.mark.parametrize(
    "name",
    [
        "arithmetic",
        "exp_log_tanh",
        "matmul",
        "softmax_logsumexp",
        "sigmoid_relu_erf",
        "reductions",
        "norm",
        "losses",
        "indexing_squared",
        "prod",
    ],
)
def test_second_derivatives_on_cuda_match_the_cpu(name):
    _compare(OPS[name], create_graph=True)


@gpu
def test_training_step_on_cuda():
    torch.manual_seed(0)
    w = torch.randn(4, 3, device="cuda", requires_grad=True)
    x = torch.randn(8, 4, device="cuda")
    target = torch.randint(0, 3, (8,), device="cuda")
    for opt_cls in (torch.optim.SGD, torch.optim.Adam):
        p = w.detach().clone().requires_grad_()
        opt = opt_cls([p], lr=0.1, **({"momentum": 0.9} if opt_cls is torch.optim.SGD else {}))
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = F.cross_entropy(x @ p, target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert p.is_cuda and p.grad.is_cuda and losses[-1] < losses[0]
