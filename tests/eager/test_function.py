"""Custom `autograd.Function`: apply, ctx, node naming, gradient checks, once_differentiable."""

import warnings

import pytest

import sourcegrad as torch
from sourcegrad.autograd import Function
from sourcegrad.autograd.function import once_differentiable
from sourcegrad.eager import messages


class CustomReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input <= 0] = 0
        return grad_input


def test_custom_relu_node_and_gradient():
    z = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    out = CustomReLU.apply(z)
    assert repr(out) == "tensor([0., 2., 3.], grad_fn=<CustomReLUBackward>)"
    assert repr(out.grad_fn).startswith("<torch.autograd.function.CustomReLUBackward object at")
    assert out.grad_fn.name() == type(out.grad_fn).__name__ == "CustomReLUBackward"
    assert out.grad_fn._forward_cls is CustomReLU
    assert [fn.name() for fn, _ in out.grad_fn.next_functions] == [
        "torch::autograd::AccumulateGrad"
    ]
    out.sum().backward()
    assert z.grad.tolist() == [0.0, 1.0, 1.0]
    assert CustomReLU.apply(torch.tensor([1.0, -1.0])).grad_fn is None
    with torch.no_grad():
        assert not CustomReLU.apply(z).requires_grad


def test_instantiating_is_deprecated_then_an_error():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fn = CustomReLU()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward"):
        fn(torch.ones(1, requires_grad=True))


def test_ctx_grad_modes_and_needs_input_grad():
    seen = {}

    class MulConst(Function):
        @staticmethod
        def forward(ctx, x, y, k, flag):
            seen["forward"] = (torch.is_grad_enabled(), ctx.needs_input_grad)
            ctx.k = k
            ctx.save_for_backward(x, y)
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            seen["backward"] = (torch.is_grad_enabled(), ctx.needs_input_grad)
            return g * y * ctx.k if ctx.needs_input_grad[0] else None, None, None, None

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0])
    r = MulConst.apply(a, b, 2.0, True)
    assert [fn is None for fn, _ in r.grad_fn.next_functions] == [False, True]
    r.sum().backward()
    assert seen["forward"] == (False, (True, False, False, False))
    assert seen["backward"] == (False, (True, False, False, False))
    assert a.grad.tolist() == [6.0, 8.0] and b.grad is None


def _make(name, forward, backward):
    return type(
        name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    )


@pytest.mark.parametrize(
    "name, fwd, bwd, args, error",
    [
        (
            "TooFew",
            lambda ctx, a, b: a * b,
            lambda ctx, g: g,
            2,
            "function TooFewBackward returned an incorrect number of gradients (expected 2, got 1)",
        ),
        (
            "TooMany",
            lambda ctx, a: a * 2,
            lambda ctx, g: (g, g),
            1,
            "function TooManyBackward returned an incorrect number of gradients (expected 1, got 2)",
        ),
        (
            "WrongShape",
            lambda ctx, a: a * 2,
            lambda ctx, g: torch.ones(5),
            1,
            "Function WrongShapeBackward returned an invalid gradient at index 0 - got [5] but "
            "expected shape compatible with [2]",
        ),
        (
            "GradForNonTensor",
            lambda ctx, a, k: a * k,
            lambda ctx, g: (g, torch.ones(1)),
            "k",
            "function GradForNonTensorBackward returned a gradient different than None at position "
            "2, but the corresponding forward input was not a Variable",
        ),
        (
            "ReturnsFloat",
            lambda ctx, a: a * 2,
            lambda ctx, g: 1.0,
            1,
            "expected Variable or None (got float)",
        ),
    ],
)
def test_backward_result_errors(name, fwd, bwd, args, error):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([1.0, 2.0], requires_grad=True)
    F = _make(name, fwd, bwd)
    inputs = {1: (x,), 2: (x, y), "k": (x, 2.0)}[args]
    with pytest.raises(RuntimeError) as err:
        F.apply(*inputs).sum().backward()
    assert str(err.value) == error


def test_extra_nones_missing_backward_and_bad_save():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    _make("ExtraNones", lambda ctx, a: a * 2, lambda ctx, g: (g * 2, None, None)).apply(
        x
    ).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

    with pytest.raises(NotImplementedError, match=messages.FUNCTION_NO_BACKWARD):
        NoBackward.apply(x).sum().backward()

    class BadSave(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):
        BadSave.apply(x)


def test_mark_dirty_and_leaf_error():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    r = AddOneInplace.apply(y)
    assert r is y and y.tolist() == [2.0, 3.0] and y._version == 2
    assert y.grad_fn.name() == "AddOneInplaceBackward"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError) as err:
        AddOneInplace.apply(x)
    assert str(err.value) == messages.LEAF_DIRTY


def test_non_differentiable_outputs_and_materialized_grads():
    got = {}

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            got["gb"] = gb.tolist()
            return ga * 2

    x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    a, b = TwoOut.apply(x)
    assert not b.requires_grad and b.grad_fn is None
    a.sum().backward()
    assert got["gb"] == [0.0, 0.0, 0.0] and x.grad.tolist() == [2.0, 2.0, 2.0]

    class TwoOutMat(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got["materialized"] = gb is not None
            return ga * 2 + (gb * 3 if gb is not None else 0), None

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    TwoOutMat.apply(x, True)[0].sum().backward()
    assert got["materialized"] is True
    TwoOutMat.apply(x, False)[0].sum().backward()
    assert got["materialized"] is False


def test_setup_context_identity_and_non_tensor_outputs():
    class MyMul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    r = MyMul.apply(a, b)
    assert r.grad_fn.name() == "MyMulBackward"
    r.sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]
    k = _make(
        "Keep", lambda ctx, x: (ctx.save_for_backward(x), x * 2)[1], lambda ctx, g: g * 2
    ).apply(a)
    assert k.grad_fn.saved_tensors[0] is a
    k.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        k.grad_fn.saved_tensors
    ident = _make("Ident", lambda ctx, x: x, lambda ctx, g: g).apply(a)
    assert ident is not a and not ident.is_leaf and ident.grad_fn.name() == "IdentBackward"
    out = _make("NonT", lambda ctx, x: (x * 2, 5), lambda ctx, g, g2: g * 2).apply(a)
    assert out[1] == 5 and out[0].grad_fn.name() == "NonTBackward"


def test_once_differentiable():
    seen = []

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            seen.append(torch.is_grad_enabled())
            return 2 * x * g

    x = torch.tensor(3.0, requires_grad=True)
    (gx,) = torch.autograd.grad(Sq.apply(x), x, create_graph=True)
    assert gx.item() == 6.0 and not gx.requires_grad and seen == [False]
    go = torch.tensor(1.0, requires_grad=True)
    (gx,) = torch.autograd.grad(Sq.apply(x), x, grad_outputs=go, create_graph=True)
    assert gx.grad_fn.name() == "torch::autograd::Error"
    with pytest.raises(RuntimeError, match=messages.ONCE_DIFFERENTIABLE):
        gx.backward()


def test_double_backward_through_a_plain_function():
    class Sq2(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.tensor(3.0, requires_grad=True)
    (gx,) = torch.autograd.grad(Sq2.apply(x), x, create_graph=True)
    assert gx.grad_fn.name() == "MulBackward0"
    assert torch.autograd.grad(gx, x)[0].item() == 2.0


def test_multiple_outputs_share_one_node():
    class Two(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b, a * b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga + gb, ga - gb

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    p, q = Two.apply(a, torch.tensor([3.0, 4.0]))
    assert p.grad_fn is q.grad_fn and (p.output_nr, q.output_nr) == (0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (p + q).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
