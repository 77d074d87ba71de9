"""The Tensor itself: factories, dtypes and promotion, printing, conversions, indexing."""

import copy
import pickle
import warnings

import numpy as np
import pytest

import sourcegrad as torch
from sourcegrad.eager import messages


def test_factories_and_default_dtypes():
    assert torch.tensor([1.0, 2.0]).dtype is torch.float32
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.tensor([True]).dtype is torch.bool
    assert torch.tensor(np.array([1.0, 2.0])).dtype is torch.float64
    assert torch.get_default_dtype() is torch.float32
    assert torch.zeros(2, 3).shape == (2, 3) and torch.ones((2,)).tolist() == [1.0, 1.0]
    assert torch.full((2,), 3).dtype is torch.int64 and torch.full((2,), 1.5).dtype is torch.float32
    assert torch.empty(2, 0).numel() == 0
    assert torch.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert torch.arange(5).tolist() == [0, 1, 2, 3, 4] and torch.arange(5).dtype is torch.int64
    assert torch.arange(0.0, 1.0, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert torch.linspace(-1, 1, 5).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    torch.manual_seed(0)
    a = torch.randn(3, 4)
    torch.manual_seed(0)
    assert torch.equal(a, torch.randn(3, 4)) and a.dtype is torch.float32
    assert ((torch.rand(100) >= 0) & (torch.rand(100) < 1)).all()
    x = torch.ones(2, 3, dtype=torch.float64)
    for f in (
        torch.zeros_like,
        torch.ones_like,
        torch.empty_like,
        torch.rand_like,
        torch.randn_like,
    ):
        y = f(x)
        assert y.shape == x.shape and y.dtype is torch.float64
    assert torch.full_like(x, 7).tolist() == [[7.0] * 3] * 2
    n = np.arange(3.0)
    t = torch.from_numpy(n)
    n[0] = 9.0
    assert t[0].item() == 9.0 and torch.as_tensor(n).data_ptr() == t.data_ptr()


def test_tensor_of_a_tensor_copies_and_warns():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        t = torch.tensor(x)
    assert not t.requires_grad and t.data_ptr() != x.data_ptr()
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0" and not c.is_leaf
    cd = x.detach().clone()
    assert cd.is_leaf and not cd.requires_grad


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("torch.tensor([1, 2], dtype=torch.int32)", "1", "int32"),
        ("torch.tensor([1, 2], dtype=torch.int32)", "1.5", "float32"),
        ("torch.tensor([1, 2])", "torch.tensor([1., 2.], dtype=torch.float16)", "float16"),
        ("torch.tensor([1., 2.])", "torch.tensor(1., dtype=torch.float64)", "float32"),
        ("torch.tensor([1, 2])", "torch.tensor(1., dtype=torch.float64)", "float64"),
        ("torch.tensor([1., 2.])", "torch.tensor([1., 2.], dtype=torch.float64)", "float64"),
        ("torch.tensor([True])", "1", "int64"),
        ("torch.tensor([True])", "True", "bool"),
        ("torch.tensor([1., 2.], dtype=torch.float16)", "1.5", "float16"),
    ],
)
def test_promotion_follows_torch(a, b, expected):
    assert (eval(a) + eval(b)).dtype is getattr(torch, expected)


def test_division_and_reductions_of_integers():
    i = torch.tensor([1, 2])
    assert (i / 2).dtype is torch.float32 and (i // 2).dtype is torch.int64
    assert torch.tensor([1, 2], dtype=torch.int32).sum().dtype is torch.int64
    assert torch.tensor([True, True]).sum().item() == 2
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        i.mean()


@pytest.mark.parametrize(
    "make, text",
    [
        (
            lambda: torch.tensor([0.0, 1.0, 1.0], requires_grad=True),
            "tensor([0., 1., 1.], requires_grad=True)",
        ),
        (lambda: torch.tensor(5.0, requires_grad=True) + 6, "tensor(11., grad_fn=<AddBackward0>)"),
        (
            lambda: torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True).sum(0),
            "tensor([4., 6.], grad_fn=<SumBackward1>)",
        ),
        (
            lambda: torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True) * 2,
            "tensor([2., 4.], dtype=torch.float64, grad_fn=<MulBackward0>)",
        ),
        (lambda: torch.tensor(3.5, requires_grad=True), "tensor(3.5000, requires_grad=True)"),
        (
            lambda: torch.tensor([1.5, 2.25], requires_grad=True).exp(),
            "tensor([4.4817, 9.4877], grad_fn=<ExpBackward0>)",
        ),
        (
            lambda: torch.zeros(2, 3, requires_grad=True),
            "tensor([[0., 0., 0.],\n        [0., 0., 0.]], requires_grad=True)",
        ),
        (
            lambda: (
                torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
                @ torch.tensor([[1.0], [1.0]])
            ),
            "tensor([[3.],\n        [7.]], grad_fn=<MmBackward0>)",
        ),
        (lambda: torch.tensor([], requires_grad=True), "tensor([], requires_grad=True)"),
        (
            lambda: torch.nn.Parameter(torch.tensor([1.0, 2.0])),
            "Parameter containing:\ntensor([1., 2.], requires_grad=True)",
        ),
        (
            lambda: torch.tensor([1.0, 2.0], requires_grad=True).max(0),
            "torch.return_types.max(\nvalues=tensor(2., grad_fn=<MaxBackward0>),\nindices=tensor(1))",
        ),
        (lambda: torch.tensor([1e-5, 1e5]), "tensor([1.0000e-05, 1.0000e+05])"),
        (lambda: torch.tensor([100.0, 4.0, 6.0]), "tensor([100.,   4.,   6.])"),
        (lambda: torch.tensor([float("inf"), 0.25]), "tensor([   inf, 0.2500])"),
        (lambda: torch.tensor([1, 2]), "tensor([1, 2])"),
        (lambda: torch.tensor([1, 2], dtype=torch.int32), "tensor([1, 2], dtype=torch.int32)"),
        (lambda: torch.tensor([True, False]), "tensor([ True, False])"),
        (lambda: torch.zeros(0, 3), "tensor([], size=(0, 3))"),
        (
            lambda: torch.tensor([1.0, 2.0], requires_grad=True) // 2,
            "tensor([0., 1.], grad_fn=<NotImplemented>)",
        ),
    ],
)
def test_repr_as_torch(make, text):
    t = make()
    assert repr(t) == text
    if not isinstance(t, tuple):
        assert str(t) == text


def test_format_and_summaries():
    y = torch.tensor(5.0, requires_grad=True) + 6
    assert f"{y}" == "11.0" and f"{torch.tensor([1.0, 2.0])}" == "tensor([1., 2.])"
    big = repr(torch.arange(2000.0).reshape(2, 1000))
    assert big.startswith("tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02")
    assert (
        str(torch.float32) == "torch.float32" and repr(torch.Size([2, 3])) == "torch.Size([2, 3])"
    )


def test_item_tolist_numpy_float():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = (x * 2).sum()
    assert s.item() == 12.0 and isinstance(s.item(), float) and torch.tensor(3).item() == 3
    with pytest.raises(
        RuntimeError, match="a Tensor with 3 elements cannot be converted to Scalar"
    ):
        x.item()
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        float(x)
    assert int(s) == 12
    for f in (lambda: x.numpy(), lambda: (x * 2).numpy(), lambda: np.asarray(x)):
        with pytest.raises(RuntimeError) as err:
            f()
        assert str(err.value) == messages.NUMPY_REQUIRES_GRAD
    assert x.numpy(force=True).dtype == np.float32
    n = x.detach().numpy()
    n[0] = 42.0
    assert x[0].item() == 42.0
    assert x.tolist() == [42.0, 2.0, 3.0] and (x * 2).sum().tolist() == 94.0
    assert (
        x.double().dtype is torch.float64
        and x.to(torch.float64).grad_fn.name() == "ToCopyBackward0"
    )


def test_float_of_a_grad_tensor_warns_once():
    import sys

    # (the module, not the `tensor` factory that sourcegrad.eager exports under that name)
    sys.modules["sourcegrad.eager.tensor"]._warned_float[0] = False
    s = torch.tensor(2.0, requires_grad=True) * 1
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
        float(s)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        float(s)
        int(s)
        s.item()


def test_shape_api():
    x = torch.arange(6.0).reshape(2, 3)
    assert x.size() == torch.Size([2, 3]) and x.size(1) == 3 and x.size(-1) == 3
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.T.shape == (3, 2) and x.t().shape == (3, 2) and x.mT.shape == (3, 2)
    assert x.view(-1).shape == (6,) and x.flatten().shape == (6,)
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.unsqueeze(-1).squeeze().shape == (2, 3)
    assert x.permute(1, 0).shape == (3, 2) and x.expand(4, 2, 3).shape == (4, 2, 3)
    assert x.repeat(2, 1).shape == (4, 3)
    assert [t.shape for t in x.split(1)] == [(1, 3), (1, 3)]
    assert [t.shape for t in x.split([1, 2], dim=1)] == [(2, 1), (2, 2)]
    assert [t.tolist() for t in x.unbind(1)] == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert torch.cat([x, x]).shape == (4, 3) and torch.stack([x, x], 2).shape == (2, 3, 2)
    assert [r.tolist() for r in x] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(-1)
    assert x.t().reshape(-1).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


def test_indexing_and_setitem():
    x = torch.arange(12.0).reshape(3, 4)
    assert x[1, 2].item() == 6.0 and x[-1].tolist() == [8.0, 9.0, 10.0, 11.0]
    assert x[:, [0, 3]].tolist() == [[0.0, 3.0], [4.0, 7.0], [8.0, 11.0]]
    assert x[x > 9].tolist() == [10.0, 11.0] and x[None].shape == (1, 3, 4)
    assert x[..., 1].tolist() == [1.0, 5.0, 9.0] and x[1:, ::2].tolist() == [
        [4.0, 6.0],
        [8.0, 10.0],
    ]
    assert x[torch.tensor([2, 0])].shape == (2, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    y = torch.zeros(3, 4)
    y[1] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    y[:, 0] = 9
    y[[0, 2], [1, 3]] = torch.tensor([5.0, 6.0])
    y[y == 0] = -1
    y[..., -1] += 0.5
    assert y.tolist() == [[9.0, 5.0, -1.0, -0.5], [9.0, 2.0, 3.0, 4.5], [9.0, -1.0, -1.0, 6.5]]


def test_in_place_arithmetic_and_views_share_storage():
    t = torch.ones(4)
    v = t[1:3]
    v.mul_(3)
    v += 1
    assert t.tolist() == [1.0, 4.0, 4.0, 1.0] and v._base is t
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert w.is_leaf and w._version == 1 and w.grad.tolist() == [0.0, 0.0]


def test_parameter_deepcopy_and_pickle():
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert p.is_leaf and p.requires_grad and isinstance(p, torch.Tensor)
    q = copy.deepcopy(p)
    assert q is not p and isinstance(q, torch.nn.Parameter) and q.tolist() == [1.0, 2.0]
    r = pickle.loads(pickle.dumps(torch.tensor([1.0, 2.0], requires_grad=True)))
    assert r.requires_grad and r.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(p * 2)


def test_exported_names_do_not_collide_with_the_compiler():
    import sourcegrad.eager as eager

    compiler_names = {
        "grad",
        "compile",
        "show",
        "value_and_grad",
        "check_grad",
        "jvp",
        "vjp",
        "jacobian",
        "hessian",
    }
    assert compiler_names.isdisjoint(eager.__all__)
    for name in eager.__all__:
        assert hasattr(eager, name), name
