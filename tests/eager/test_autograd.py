"""Autograd semantics of the eager mode, checked without torch (expected values from the reference)."""

import threading
import warnings

import numpy as np
import pytest

import sourcegrad as torch
from sourcegrad.eager import messages
from sourcegrad.eager.node import RELEASED


def names(edges):
    return [(None if fn is None else fn.name(), nr) for fn, nr in edges]


# --- leaves, grad_fn and next_functions ----------------------------------------------------


def test_leaf_rules_and_node_names():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([4.0, 5.0, 6.0])
    assert (x.requires_grad, x.is_leaf, x.grad_fn) == (True, True, None)
    assert (w.requires_grad, w.is_leaf, w.grad_fn) == (False, True, None)
    y = x + w
    assert (y.requires_grad, y.is_leaf) == (True, False)
    assert y.grad_fn.name() == type(y.grad_fn).__name__ == "AddBackward0"
    assert names(y.grad_fn.next_functions) == [("torch::autograd::AccumulateGrad", 0), (None, 0)]
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
    assert acc.next_functions == ()
    assert repr(y.grad_fn).startswith("<AddBackward0 object at 0x")
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)


def test_same_accumulator_per_leaf_and_scalar_edges():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = x * x
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]
    assert names((x + 1).grad_fn.next_functions) == [
        ("torch::autograd::AccumulateGrad", 0),
        (None, 0),
    ]
    assert names((1 - x).grad_fn.next_functions) == [("torch::autograd::AccumulateGrad", 0)]
    assert (1 - x).grad_fn.name() == "RsubBackward1"
    assert (2 / x).grad_fn.name() == "MulBackward0"
    assert (2 / x).grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"
    a, b = x.unbind(0)[:2]
    assert names((a + b).grad_fn.next_functions) == [("UnbindBackward0", 0), ("UnbindBackward0", 1)]
    w = torch.ones(3)
    assert (w + w).grad_fn is None and not (w + w).requires_grad


@pytest.mark.parametrize(
    "expr, name",
    [
        ("x ** 2", "PowBackward0"),
        ("x ** y", "PowBackward1"),
        ("2 ** x", "PowBackward2"),
        ("x.sum()", "SumBackward0"),
        ("x.sum(0)", "SumBackward1"),
        ("x.mean()", "MeanBackward0"),
        ("x.mean(1)", "MeanBackward1"),
        ("x @ M", "MmBackward0"),
        ("v @ v", "DotBackward0"),
        ("x @ v", "MvBackward0"),
        ("x[None] @ M[None]", "UnsafeViewBackward0"),
        ("x.reshape(3, 2)", "ViewBackward0"),
        ("x.t().reshape(-1)", "UnsafeViewBackward0"),
        ("x.t()", "TBackward0"),
        ("x.T", "PermuteBackward0"),
        ("x.transpose(0, 1)", "TransposeBackward0"),
        ("x[0]", "SelectBackward0"),
        ("x[:, 1:]", "SliceBackward0"),
        ("x[[0, 1]]", "IndexBackward0"),
        ("x[x > 0]", "IndexBackward0"),
        ("x[None]", "UnsqueezeBackward0"),
        ("x.clamp(min=0)", "ClampBackward1"),
        ("x.clamp(min=y)", "ClampBackward0"),
        ("x.max()", "MaxBackward1"),
        ("x.max(dim=1).values", "MaxBackward0"),
        ("torch.maximum(x, y)", "MaximumBackward0"),
        ("x.amax(1)", "AmaxBackward0"),
        ("torch.cat([x, y])", "CatBackward0"),
        ("torch.stack([x, y])", "StackBackward0"),
        ("x.double()", "ToCopyBackward0"),
        ("x.softmax(1)", "SoftmaxBackward0"),
        ("x.norm()", "LinalgVectorNormBackward0"),
        ("x.var()", "VarBackward0"),
        ("x // 2", "torch::autograd::NotImplemented"),
        ("x.split(1)[0]", "SplitBackward0"),
        ("torch.where(x > 0, x, y)", "WhereBackward0"),
        ("x.repeat(2, 1)", "RepeatBackward0"),
    ],
)
def test_node_names(expr, name):
    x = torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)
    y = torch.ones(2, 3, requires_grad=True)
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    M = torch.ones(3, 2, requires_grad=True)
    assert eval(expr).grad_fn.name() == name


def test_same_object_and_no_node_for_no_ops():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert x.float() is x and x.to(torch.float32) is x and x.contiguous() is x
    assert x.cpu() is x
    assert x.detach().grad_fn is None
    assert x.argmax().grad_fn is None and (x > 0).grad_fn is None and x.long().grad_fn is None


def test_saved_values_only_what_backward_needs():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    m = x * torch.tensor([4.0, 5.0])
    assert m.grad_fn._saved_self is None
    assert m.grad_fn._saved_other.tolist() == [4.0, 5.0]
    p = x.pow(2)
    assert p.grad_fn._saved_self is x and p.grad_fn._saved_exponent == 2
    assert p.grad_fn.metadata == {}


# --- backward -----------------------------------------------------------------------------


def test_backward_rules_and_errors():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(gradient=torch.tensor([1.0, 0.1, 0.01]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.2, 0.02], rtol=1e-6)
    with pytest.raises(
        RuntimeError,
        match=r"Mismatch in shape: grad_output\[0\] has a shape of "
        r"torch.Size\(\[2\]\) and output\[0\] has a shape of "
        r"torch.Size\(\[3\]\)\.",
    ):
        (x * 2).backward(torch.ones(2))
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        (x * 2).backward([1.0, 1.0, 1.0])
    x.grad = None
    (x * 2).backward(torch.ones(3, dtype=torch.float64))
    assert x.grad.dtype is torch.float32
    with pytest.raises(RuntimeError, match=messages.NO_GRAD_FN.format(0)):
        torch.tensor([1.0, 2.0]).sum().backward()
    leaf = torch.tensor(2.0, requires_grad=True)
    assert leaf.backward() is None
    assert leaf.grad.item() == 1.0
    one = torch.tensor([2.0], requires_grad=True)
    (one * 3).backward()
    assert one.grad.tolist() == [3.0]


def test_accumulation_into_the_same_grad_object():
    x = torch.tensor(3.0, requires_grad=True)
    seen = []
    for _ in range(3):
        (x**2).backward()
        seen.append(x.grad.item())
    assert seen == [6.0, 12.0, 18.0]
    g = x.grad
    (x * 1).backward()
    assert x.grad is g and g.item() == 19.0
    assert (g.requires_grad, g.is_leaf, g.grad_fn) == (False, True, None)
    x.grad.zero_()
    assert x.grad.item() == 0.0
    x.grad = None
    assert x.grad is None


def test_retain_graph_and_the_second_backward_error():
    x = torch.tensor(3.0, requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 12.0
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time"):
        y.backward()
    assert y.grad_fn._state == RELEASED
    # a node that saved nothing can be run again
    z = x + 1
    z.backward()
    z.backward()
    # x * 2 saves the wrapped scalar
    w = x * 2
    w.backward()
    with pytest.raises(RuntimeError, match="second time"):
        w.backward()


def test_non_leaf_grad_warning_and_retain_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.tensor([1.0]).grad is None  # requires_grad=False: silent
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0] and x.grad.tolist() == [8.0, 16.0]
    x.retain_grad()
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad="):
        torch.ones(2).retain_grad()


def test_requires_grad_flags():
    a = torch.tensor([1.0, 2.0])
    assert a.requires_grad_() is a and a.requires_grad and a.is_leaf
    a.requires_grad_(False)
    assert not a.requires_grad
    y = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    assert y.requires_grad_(True) is y
    cases = [
        (lambda: torch.tensor([1, 2], requires_grad=True), messages.FLOAT_ONLY_FACTORY),
        (lambda: torch.ones(2, dtype=torch.int64, requires_grad=True), messages.FLOAT_ONLY_FACTORY),
        (lambda: torch.nn.Parameter(torch.tensor([1, 2])), messages.FLOAT_ONLY_FACTORY),
        (lambda: torch.tensor([1, 2]).requires_grad_(), messages.FLOAT_ONLY_METHOD),
        (lambda: torch.tensor([True]).requires_grad_(), messages.FLOAT_ONLY_METHOD),
        (lambda: setattr(torch.tensor([1, 2]), "requires_grad", True), messages.FLOAT_ONLY_SETTER),
    ]
    for make, message in cases:
        with pytest.raises(RuntimeError) as err:
            make()
        assert str(err.value) == message
    assert not torch.tensor([1, 2]).requires_grad_(False).requires_grad
    assert torch.tensor([1.0], dtype=torch.float16, requires_grad=True).requires_grad


def test_grad_assignment_checks():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="assign a gradient of size '\\[3\\]' to a tensor of size '\\[2\\]'"
    ):
        x.grad = torch.ones(3)
    with pytest.raises(
        TypeError, match="expected to be a Tensor or None but got grad of type list"
    ):
        x.grad = [1.0, 2.0]
    with pytest.raises(
        RuntimeError, match="with dtype 'long int' to a tensor with grad_dtype 'Float'"
    ):
        x.grad = torch.tensor([1, 2])
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    (a * b).backward(inputs=[a])
    assert a.grad.item() == 2.0 and b.grad is None


def test_backward_under_no_grad_and_several_roots():
    x = torch.tensor(2.0, requires_grad=True)
    y = x**2
    with torch.no_grad():
        y.backward()
    assert x.grad.item() == 4.0
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.autograd.backward([x * 2, x**2], grad_tensors=[torch.ones(2), torch.ones(2)])
    assert x.grad.tolist() == [4.0, 6.0]


def test_broadcast_gradients_and_dtypes():
    a = torch.ones(2, 3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    c = torch.ones(2, 1, requires_grad=True)
    s = torch.tensor(1.0, requires_grad=True)
    (a + b + c + s).sum().backward()
    assert tuple(a.grad.shape) == (2, 3) and b.grad.tolist() == [2.0, 2.0, 2.0]
    assert c.grad.flatten().tolist() == [3.0, 3.0] and s.grad.item() == 6.0
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert y.dtype is torch.float64
    y.sum().backward()
    assert x.grad.dtype is torch.float32
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * torch.tensor([1, 2, 3])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    x = torch.tensor([1.5, 2.5], requires_grad=True)
    x.floor().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


# --- edge values --------------------------------------------------------------------------


def grad_of(f, values):
    x = torch.tensor(values, requires_grad=True)
    f(x).sum().backward()
    return x.grad.tolist()


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # numpy's, for log(0)
@pytest.mark.parametrize(
    "f, values, expected",
    [
        (torch.relu, [-1.0, 0.0, 1.0], [0.0, 0.0, 1.0]),
        (torch.abs, [-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]),
        (lambda t: t.clamp(min=0), [-1.0, 0.0, 1.0], [0.0, 1.0, 1.0]),
        (lambda t: t.clamp(-1, 1), [-1.0, 0.0, 1.0, 2.0], [1.0, 1.0, 1.0, 0.0]),
        (torch.sqrt, [0.0, 4.0], [float("inf"), 0.25]),
        (torch.log, [0.0, 1.0], [float("inf"), 1.0]),
        (lambda t: t.max(), [1.0, 3.0, 3.0], [0.0, 0.5, 0.5]),
        (lambda t: t.max(dim=0).values, [1.0, 3.0, 3.0], [0.0, 1.0, 0.0]),
        (lambda t: t.min(), [1.0, 1.0, 3.0], [0.5, 0.5, 0.0]),
        (torch.sign, [-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
        (lambda t: t**0, [0.0, 2.0], [0.0, 0.0]),
        (lambda t: t.norm(), [0.0, 0.0], [0.0, 0.0]),
        (torch.prod, [0.0, 2.0, 3.0], [6.0, 0.0, 0.0]),
        (torch.nn.functional.leaky_relu, [-1.0, 0.0, 1.0], [0.01, 0.01, 1.0]),
        (lambda t: t[[0, 0, 1]], [1.0, 2.0, 3.0], [2.0, 1.0, 0.0]),
    ],
)
def test_edge_values_as_torch(f, values, expected):
    np.testing.assert_allclose(grad_of(f, values), expected, rtol=1e-6)


def test_var_is_unbiased_and_maximum_splits_ties():
    np.testing.assert_allclose(
        grad_of(torch.var, [1.0, 2.0, 3.0, 4.0]), [-1.0, -1 / 3, 1 / 3, 1.0], rtol=1e-6
    )
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.tensor([1.0, 1.0, 4.0], requires_grad=True)
    torch.maximum(x, y).sum().backward()
    assert x.grad.tolist() == [0.5, 1.0, 0.0] and y.grad.tolist() == [0.5, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        (x // 2).sum().backward()


# --- in place and versions ----------------------------------------------------------------


def test_version_counter():
    t = torch.zeros(3)
    assert t._version == 0
    t.add_(1)
    t[0] = 5
    t.mul_(2).add_(1)
    assert t._version == 4
    v = t[1:]
    assert v._version == 4
    v.zero_()
    assert t._version == v._version == 5
    assert (t + 1)._version == 0
    with torch.no_grad():
        t.add_(1)
    assert t._version == 6
    ops = [
        lambda u: u.copy_(torch.ones(3)),
        lambda u: u.fill_(2.0),
        lambda u: u.__iadd__(1),
        lambda u: u.zero_(),
        lambda u: u.__setitem__(slice(0, 2), 1.0),
        lambda u: u.clamp_(max=0.5),
    ]
    u = torch.zeros(3)
    seen = [u._version]
    for op in ops:
        op(u)
        seen.append(u._version)
    assert seen == [0, 1, 2, 3, 4, 5, 6]


def test_inplace_on_leaves():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    direct = [
        lambda: x.add_(1),
        lambda: x.zero_(),
        lambda: x.copy_(torch.zeros(3)),
        lambda: x.__iadd__(1),
        lambda: x.fill_(1.0),
    ]
    for op in direct:
        with pytest.raises(RuntimeError) as err:
            op()
        assert str(err.value) == messages.LEAF_INPLACE
    for op in (lambda: x.__setitem__(0, 5.0), lambda: x[0:2].mul_(2)):
        with pytest.raises(RuntimeError) as err:
            op()
        assert str(err.value) == messages.VIEW_OF_LEAF_INPLACE
    assert x.tolist() == [1.0, 2.0, 3.0] and x._version == 0
    with torch.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 3.0, 4.0] and x._version == 1 and x.is_leaf


def test_inplace_on_non_leaves_rewrites_grad_fn():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    assert y.add_(1) is y
    assert y.grad_fn.name() == "AddBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0, 6.0]
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[0] = 10.0
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]
    x4 = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x4 * 1
    v = y[:2]
    v.mul_(10)
    assert v.grad_fn.name() == "AsStridedBackward0"
    y.sum().backward()
    assert x4.grad.tolist() == [10.0, 10.0, 1.0, 1.0]
    t = torch.zeros(2)
    t.add_(x4[:2])
    assert not t.is_leaf and t.grad_fn.name() == "AddBackward0"
    with pytest.raises(
        RuntimeError, match="result type Float can't be cast to the desired output type Long"
    ):
        torch.tensor([1, 2]).add_(1.5)


def test_modified_saved_tensor_errors():
    def message(f):
        with pytest.raises(RuntimeError) as err:
            f()
        return str(err.value)

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y * y
    y.add_(1)
    assert (
        "[torch.FloatTensor [3]], which is output 0 of Add, is at version 1; expected "
        "version 0 instead. Hint: enable anomaly detection" in message(lambda: z.sum().backward())
    )
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    assert "which is output 0 of Sigmoid, is at version 1" in message(lambda: y.sum().backward())
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    z = x * w
    w.add_(1)
    assert "[torch.DoubleTensor [3]] is at version 1; expected version 0" in message(
        lambda: z.sum().backward()
    )
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y + 2
    y.add_(1)
    z.sum().backward()  # add saves nothing
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.detach().zero_()  # detach shares the version counter
    assert "output 0 of Exp" in message(lambda: y.sum().backward())
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.data.zero_()  # .data does not
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_detach_and_data():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.data_ptr() == y.data_ptr()
    d[0] = 100.0
    assert y.tolist() == [100.0, 4.0, 6.0] and y._version == d._version == 1
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad
    with pytest.raises(RuntimeError, match="^Can't detach views in-place"):
        x[:2].detach_()
    x.data = torch.tensor([7.0, 8.0, 9.0])
    assert x.tolist() == [7.0, 8.0, 9.0] and x.requires_grad and x.is_leaf


# --- grad modes ---------------------------------------------------------------------------


def test_grad_mode_context_decorator_and_call():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        y = x * 2
        assert (y.requires_grad, y.grad_fn, y.is_leaf) == (False, None, True)
        with torch.enable_grad():
            assert (x * 2).requires_grad
        f = torch.ones(2, requires_grad=True)
        assert f.requires_grad and not (f * 2).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    assert not torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f1(t):
        return t * 2

    @torch.no_grad
    def f2(t):
        return t * 2

    @torch.set_grad_enabled(False)
    def f3(t):
        return t * 2

    @torch.inference_mode()
    def f4(t):
        return t * 2

    @torch.no_grad()
    def gen(t):
        yield torch.is_grad_enabled()
        yield (t * 2).requires_grad

    assert not f1(x).requires_grad and not f2(x).requires_grad and not f3(x).requires_grad
    assert torch.is_grad_enabled()
    r = f4(x)
    assert not r.requires_grad and r.is_inference()
    assert list(gen(x)) == [False, False]
    assert torch.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        seen["worker"] = torch.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    with torch.no_grad():
        barrier.wait()
        t.join()
        seen["main"] = torch.is_grad_enabled()
    assert seen == {"worker": True, "main": False}
    with torch.inference_mode():
        out = []
        th = threading.Thread(target=lambda: out.append(torch.is_inference_mode_enabled()))
        th.start()
        th.join()
        assert out == [False] and torch.is_inference_mode_enabled()


def test_inference_mode_and_inference_tensors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.inference_mode():
        assert not torch.is_grad_enabled() and torch.is_inference_mode_enabled()
        i = x * 2
        assert not i.requires_grad and i.is_inference() and i.is_leaf
        k = torch.ones(2, requires_grad=True)
        assert k.requires_grad and k.is_inference() and not (k * 2).requires_grad
    with torch.inference_mode(False):
        assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
    assert not x.is_inference() and i.is_inference()
    with pytest.raises(RuntimeError, match=messages.INFERENCE_REQUIRES_GRAD):
        i.requires_grad_()
    for f in (lambda: i * x, lambda: x * i, lambda: k * x):
        with pytest.raises(RuntimeError) as err:
            f()
        assert str(err.value) == messages.INFERENCE_SAVED
    assert (i + x).grad_fn.name() == "AddBackward0"
    assert (k * 2).grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError) as err:
        i.add_(1)
    assert str(err.value) == messages.INFERENCE_INPLACE
    assert i.tolist() == [3.0, 5.0]  # torch writes the data before it raises
    assert (i.clone() * x).tolist() == [3.0, 10.0]
    with torch.no_grad():
        n = x * 2
    assert not n.is_inference()


# --- hooks --------------------------------------------------------------------------------


def test_tensor_hooks():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0, 6.0]
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g + 100)
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.sum().backward()
    assert seen == [[1.0, 1.0, 1.0], [101.0, 101.0, 101.0]] and x.grad.tolist() == [202.0] * 3
    x = torch.tensor([1.0], requires_grad=True)
    x.grad = torch.tensor([100.0])
    incoming = []
    x.register_hook(lambda g: incoming.append(g.item()))
    (x * 1).sum().backward()
    assert incoming == [1.0] and x.grad.item() == 101.0
    with pytest.raises(RuntimeError, match=messages.HOOK_NO_GRAD):
        torch.ones(2).register_hook(lambda g: g)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: torch.ones(3))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        (x * 1).sum().backward()


def test_retain_grad_sees_the_value_after_hooks():
    for retain_first in (True, False):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 10)
        if not retain_first:
            y.retain_grad()
        y.sum().backward()
        assert y.grad.tolist() == [10.0, 10.0] and x.grad.tolist() == [20.0, 20.0]


def test_post_accumulate_and_node_hooks():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.tolist())))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert seen == [(True, [2.0, 2.0]), (True, [4.0, 4.0])]
    with pytest.raises(RuntimeError, match=messages.POST_HOOK_NON_LEAF):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    p = torch.tensor([1.0, 2.0], requires_grad=True)

    def sgd_step(t):
        with torch.no_grad():
            t.sub_(0.1 * t.grad)
        t.grad = None

    p.register_post_accumulate_grad_hook(sgd_step)
    (p * p).sum().backward()
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert p.grad is None

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    log = []
    y.grad_fn.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi[0].tolist(), gi[1])))
    y.sum().backward()
    assert log == [("pre", [1.0, 1.0]), ("post", [3.0, 3.0], None)]
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, gi[1]))
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    acc = y.grad_fn.next_functions[0][0]
    log = []
    acc.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
    acc.register_hook(lambda gi, go: log.append(("post", gi, go[0].tolist())))
    y.sum().backward()
    assert log == [("pre", [3.0, 3.0]), ("post", (), [3.0, 3.0])]


# --- autograd.grad and higher order -----------------------------------------------------------


def test_autograd_grad():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x * y + x**2
    assert [g.item() for g in torch.autograd.grad(z, x)] == [7.0] and x.grad is None
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(z, x)
    z = x * y + x**2
    assert [g.item() for g in torch.autograd.grad(z, [x, y])] == [7.0, 2.0]
    u = torch.tensor(5.0, requires_grad=True)
    with pytest.raises(RuntimeError, match=messages.UNUSED_INPUT.format(1)):
        torch.autograd.grad(x * y, [x, u])
    gx, gu = torch.autograd.grad(x * y, [x, u], allow_unused=True)
    assert gx.item() == 3.0 and gu is None
    gx, gu = torch.autograd.grad(x * y, [x, u], allow_unused=True, materialize_grads=True)
    assert gu.item() == 0.0
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        torch.autograd.grad(v * 2, v)
    assert torch.autograd.grad(v * 2, v, grad_outputs=torch.ones(3))[0].tolist() == [2.0, 2.0, 2.0]
    assert torch.autograd.grad([v.sum(), (v**2).sum()], v)[0].tolist() == [3.0, 5.0, 7.0]
    (batched,) = torch.autograd.grad(v * 2, v, grad_outputs=torch.eye(3), is_grads_batched=True)
    assert batched.tolist() == [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]
    with pytest.raises(RuntimeError, match=messages.INPUT_NO_GRAD):
        torch.autograd.grad(x * torch.tensor(1.0), torch.tensor(1.0))


def test_higher_order_derivatives():
    x = torch.tensor(2.0, requires_grad=True)
    y = x**3
    (dy,) = torch.autograd.grad(y, x, create_graph=True)
    assert dy.item() == 12.0 and dy.grad_fn.name() == "MulBackward0"
    (d2y,) = torch.autograd.grad(dy, x, create_graph=True)
    assert d2y.item() == 12.0
    (d3y,) = torch.autograd.grad(d2y, x)
    assert d3y.item() == 6.0 and not d3y.requires_grad
    with pytest.raises(RuntimeError, match=messages.NO_GRAD_FN.format(0)):
        torch.autograd.grad(d3y, x)
    x = torch.tensor(2.0, requires_grad=True)
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
        (x**3).backward(create_graph=True)
    assert x.grad.grad_fn.name() == "torch::autograd::CopyBackwards"
    g = x.grad
    x.grad = None
    g.backward()
    assert x.grad.item() == 12.0


def test_create_graph_runs_the_rule_lambdas_on_tensors():
    """The second derivative of tanh: the rule `g * (1 - ans * ans)` evaluated on Tensors."""
    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(x.tanh().sum(), x, create_graph=True)
    assert g.grad_fn is not None
    (h,) = torch.autograd.grad(g.sum(), x)
    t = np.tanh(np.array([0.5, -1.0]))
    np.testing.assert_allclose(h.numpy(), -2 * t * (1 - t * t), rtol=1e-12)
    assert isinstance(np.exp(x), torch.Tensor) and np.exp(x).grad_fn.name() == "ExpBackward0"


def test_gradcheck():
    from sourcegrad.autograd import Function

    inp = torch.randn(3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(torch.sin, (inp,))
    assert torch.autograd.gradgradcheck(torch.sin, (inp,))

    class BadGrad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * g

    inp = torch.tensor([1.0, 2.0], dtype=torch.double, requires_grad=True)
    with pytest.raises(torch.autograd.GradcheckError) as err:
        torch.autograd.gradcheck(BadGrad.apply, (inp,))
    assert isinstance(err.value, RuntimeError)
    assert str(err.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[2.0000, 0.0000],\n"
        "        [0.0000, 4.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[3., 0.],\n"
        "        [0., 6.]], dtype=torch.float64)\n"
    )
    assert torch.autograd.gradcheck(BadGrad.apply, (inp,), raise_exception=False) is False
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require"):
        torch.autograd.gradcheck(torch.sin, (torch.tensor([1.0, 2.0], dtype=torch.double),))
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        torch.autograd.gradcheck(
            torch.sin, (torch.tensor([0.1], requires_grad=True),), raise_exception=False
        )


def test_functional_jacobian_hessian():
    from sourcegrad.autograd.functional import hessian, jacobian, jvp, vjp

    x = torch.tensor([1.0, 2.0, 3.0])
    f = lambda t: t**2 + t.sum()  # noqa: E731
    assert jacobian(f, x).tolist() == [[3.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 7.0]]
    assert hessian(lambda t: (t**3).sum(), x).tolist() == [
        [6.0, 0.0, 0.0],
        [0.0, 12.0, 0.0],
        [0.0, 0.0, 18.0],
    ]
    out, prod = vjp(f, x, torch.tensor([1.0, 0.0, 0.0]))
    assert prod.tolist() == [3.0, 1.0, 1.0]
    out, prod = jvp(f, x, torch.tensor([1.0, 0.0, 0.0]))
    assert prod.tolist() == [3.0, 1.0, 1.0]


# --- the engine -------------------------------------------------------------------------------


@pytest.mark.long
def test_a_100000_op_chain_backpropagates_without_recursion():
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_saved_values_are_released_unless_retain_graph():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y * x
    z.sum().backward(retain_graph=True)
    assert y.grad_fn._args is not None and z.grad_fn._args is not None
    z.sum().backward()
    assert y.grad_fn._args is None and z.grad_fn._args is None


def test_diamond_graph_waits_for_all_branches():
    x = torch.tensor(2.0, requires_grad=True)
    a = x * 3
    b = a.exp()
    c = a**2
    order = []
    a.register_hook(lambda g: order.append(g.item()))
    (b + c).backward()
    expected = np.exp(6.0) + 12.0
    assert order == pytest.approx([expected], rel=1e-6)
    assert x.grad.item() == pytest.approx(3 * expected, rel=1e-6)


def test_anomaly_mode_nan_check():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with torch.autograd.detect_anomaly():
            y = x.sqrt() * 0
            with pytest.raises(
                RuntimeError,
                match="Function 'SqrtBackward0' returned nan values in its 0th output.",
            ):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    y.sum().backward()
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])
