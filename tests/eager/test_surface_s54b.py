"""Eager torch surface added in s54b, against torch (CPU) as the oracle: fill_diagonal_,
addcmul_/addcdiv_/lerp_/atan2_, masked_scatter(_), put(_), sum_to_size, set_, and out= on
torch.maximum/minimum/mm/bmm/logsumexp/logcumsumexp/argmax/argmin/all/any: values, dtypes,
gradients (through the in-place ops, on a non-leaf), and torch's errors for misuse."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad import errors

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(54)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
C = RNG.uniform(0.5, 2.0, (3, 4))


def _close(s, t, rtol=1e-6, atol=1e-9):
    assert str(s.dtype) == str(t.dtype), (s.dtype, t.dtype)
    assert tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(
        np.asarray(s.detach().numpy()), t.detach().numpy(), rtol=rtol, atol=atol
    )


def _inplace_grads(op_s, op_t, arrays):
    """`op(x, *others)` applied in place to x = leaf0 * 1 (a non-leaf), weighted into a
    scalar: its values and every leaf's gradient, sourcegrad against torch."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ss = [sg.tensor(a, requires_grad=True) for a in arrays]
    xt, xs = ts[0] * 1, ss[0] * 1
    rt, rs = op_t(xt, *ts[1:]), op_s(xs, *ss[1:])
    assert rt is xt and rs is xs  # in-place ops return self
    _close(xs, xt)
    assert xs._version == xt._version
    w = RNG.standard_normal(tuple(xt.shape))
    (xt * torch.tensor(w)).sum().backward()
    (xs * sg.tensor(w)).sum().backward()
    for s, t in zip(ss, ts):
        if t.grad is None:
            assert s.grad is None or not np.any(s.grad.numpy())
        else:
            _close(s.grad, t.grad)


@pytest.mark.parametrize(
    "name, arrays, call",
    [
        ("addcmul_", (A, B, C), lambda x, a, b: x.addcmul_(a, b, value=0.5)),
        ("addcmul_", (A, B, C), lambda x, a, b: x.addcmul_(a, b)),
        ("addcdiv_", (A, B, C), lambda x, a, b: x.addcdiv_(a, b, value=-2)),
        ("lerp_", (A, B), lambda x, e: x.lerp_(e, 0.3)),
        ("lerp_", (A, B, C / 3), lambda x, e, w: x.lerp_(e, w)),
        ("atan2_", (A, B), lambda x, o: x.atan2_(o)),
        ("arctan2_", (A, B), lambda x, o: x.arctan2_(o)),
        ("atan2_ bcast", (A, B[0]), lambda x, o: x.atan2_(o)),
    ],
)
def test_arithmetic_inplace(name, arrays, call):
    _inplace_grads(call, call, arrays)


def test_torch_lerp_with_tensor_weight():
    ts = [torch.tensor(a, requires_grad=True) for a in (A, B, C / 3)]
    ss = [sg.tensor(a, requires_grad=True) for a in (A, B, C / 3)]
    rt, rs = torch.lerp(*ts), sg.lerp(*ss)
    _close(rs, rt)
    rt.sum().backward()
    rs.sum().backward()
    for s, t in zip(ss, ts):
        _close(s.grad, t.grad)


@pytest.mark.parametrize(
    "shape, wrap, value",
    [((3, 3), False, 2.5), ((7, 3), True, 1.0), ((7, 3), False, -1.0), ((2, 5), True, 3.0)],
)
def test_fill_diagonal_(shape, wrap, value):
    a = RNG.standard_normal(shape)
    call = lambda x: x.fill_diagonal_(value, wrap=wrap)  # noqa: E731
    _inplace_grads(call, call, (a,))


def test_fill_diagonal_cube_and_errors():
    a = RNG.standard_normal((3, 3, 3))
    call = lambda x: x.fill_diagonal_(7.0)  # noqa: E731
    _inplace_grads(call, call, (a,))
    for shape, text in (((3,), "dimensions must larger than 1"), ((3, 3, 2), "equal length")):
        with pytest.raises(RuntimeError, match=text):
            torch.zeros(shape).fill_diagonal_(1)
        with pytest.raises(RuntimeError, match=text):
            sg.zeros(shape).fill_diagonal_(1)


def test_masked_scatter_inplace_and_out_of_place():
    mask = RNG.random((3, 4)) > 0.4
    src = RNG.standard_normal((4, 4))

    def call_t(x, s):
        return x.masked_scatter_(torch.tensor(mask), s)

    def call_s(x, s):
        return x.masked_scatter_(sg.tensor(mask), s)

    _inplace_grads(call_s, call_t, (A, src))
    # broadcast mask, out of place (input broadcasts too), function and method
    m = RNG.random((2, 1, 4)) > 0.5
    for fn in (lambda mod, x, s: mod.masked_scatter(x, mod.tensor(m), s),
               lambda mod, x, s: x.masked_scatter(mod.tensor(m), s)):  # fmt: skip
        xt, st = torch.tensor(A, requires_grad=True), torch.tensor(src, requires_grad=True)
        xs, ss = sg.tensor(A, requires_grad=True), sg.tensor(src, requires_grad=True)
        rt, rs = fn(torch, xt, st), fn(sg, xs, ss)
        _close(rs, rt)
        w = RNG.standard_normal(tuple(rt.shape))
        (rt * torch.tensor(w)).sum().backward()
        (rs * sg.tensor(w)).sum().backward()
        _close(xs.grad, xt.grad)
        _close(ss.grad, st.grad)


def test_masked_scatter_errors():
    cases = [
        (lambda m: m.zeros(3).masked_scatter_(m.ones(3), m.ones(3)), "only supports boolean"),
        (
            lambda m: m.zeros(3).masked_scatter_(m.ones(3) > 0, m.ones(3, dtype=m.float64)),
            "expected self and source to have same dtypes but gotFloat and Double",
        ),
        (lambda m: m.zeros(3).masked_scatter_(m.ones(3) > 0, m.ones(2)), "Number of elements"),
    ]
    for make, text in cases:
        with pytest.raises(RuntimeError, match=text):
            make(torch)
        with pytest.raises(RuntimeError, match=text):
            make(sg)
    with pytest.raises(RuntimeError):
        torch.zeros(3).masked_scatter_(torch.ones(2, 3) > 0, torch.ones(6))
    with pytest.raises(RuntimeError):
        sg.zeros(3).masked_scatter_(sg.ones(2, 3) > 0, sg.ones(6))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_(accumulate):
    index = [5, -1, 0, 7] if not accumulate else [5, -1, 5, 0, 11]
    src = RNG.standard_normal(len(index))

    def call_t(x, s):
        return x.put_(torch.tensor(index), s, accumulate=accumulate)

    def call_s(x, s):
        return x.put_(sg.tensor(index), s, accumulate=accumulate)

    _inplace_grads(call_s, call_t, (A, src))
    # on a non-contiguous tensor (row-major order of its elements, not of its memory)
    rt = torch.tensor(A).t().put_(torch.tensor(index), torch.tensor(src), accumulate)
    rs = sg.tensor(A).t().put_(sg.tensor(index), sg.tensor(src), accumulate)
    _close(rs, rt)
    # the out-of-place function and method leave input as it was
    xt, xs = torch.tensor(A), sg.tensor(A)
    _close(sg.put(xs, sg.tensor(index), sg.tensor(src), accumulate=accumulate),
           torch.put(xt, torch.tensor(index), torch.tensor(src), accumulate=accumulate))  # fmt: skip
    _close(xs.put(sg.tensor(index), sg.tensor(src)), xt.put(torch.tensor(index), torch.tensor(src)))
    _close(xs, xt)
    _close(sg.zeros(()).put_(sg.tensor([0]), sg.ones(1)),
           torch.zeros(()).put_(torch.tensor([0]), torch.ones(1)))  # fmt: skip


def test_put_errors():
    cases = [
        (lambda m: m.zeros(3).put_(m.tensor([0], dtype=m.int32), m.ones(1)), RuntimeError,
         "Expected a long tensor for index, but got Int"),
        (lambda m: m.zeros(3).put_(m.tensor([0, 1]), m.ones(3)), IndexError,
         "source.numel\\(\\) = 3, index.numel\\(\\) = 2"),
        (lambda m: m.zeros(3).put_(m.tensor([5]), m.ones(1)), IndexError,
         "tried to access index 5 on a tensor of 3 elements"),
        (lambda m: m.zeros(3).put_(m.tensor([1]), m.ones(1, dtype=m.float64)), RuntimeError,
         "self.dtype = Float and source.dtype = Double"),
    ]  # fmt: skip
    for make, kind, text in cases:
        with pytest.raises(kind, match=text):
            make(torch)
        with pytest.raises(kind, match=text):
            make(sg)


@pytest.mark.parametrize("size", [(4,), (1, 4), (3, 1), (3, 4), ((1, 4),), ([3, 1],)])
def test_sum_to_size(size):
    xt, xs = torch.tensor(A, requires_grad=True), sg.tensor(A, requires_grad=True)
    rt, rs = xt.sum_to_size(*size), xs.sum_to_size(*size)
    _close(rs, rt)
    w = RNG.standard_normal(tuple(rt.shape))
    (rt * torch.tensor(w)).sum().backward()
    (rs * sg.tensor(w)).sum().backward()
    _close(xs.grad, xt.grad)


def test_sum_to_size_error():
    for m in (torch, sg):
        with pytest.raises(
            RuntimeError, match=r"size \{\[3\]\} is not expandable to size \{\[3, 4\]\}\."
        ):
            m.tensor(A).sum_to_size(3)


def test_set_shares_memory():
    for m in (torch, sg):
        a, b = m.zeros(3, dtype=m.float64), m.tensor(A)
        assert a.set_(b) is a
        assert tuple(a.shape) == (3, 4) and a._version == 1
        # (torch keeps b's version 0; here a and b share one counter: below)
        b.add_(1)  # a write through b is seen by a
        a[0, 0] = 100.0  # and one through a by b
        np.testing.assert_allclose(a.numpy(), b.numpy())
        assert b[0, 0].item() == 100.0 and a[1, 1].item() == pytest.approx(A[1, 1] + 1)


def test_set_write_through_alias_refuses_backward_that_saved_source():
    """torch keeps a's version counter apart from b's, so a write through a changes what a
    node that saved b reads without notice: x.grad is b's new value 3, where the gradient at
    the values the forward used is 2. Here a and b share one counter: backward refuses."""
    xt = torch.ones(3, requires_grad=True)
    bt = torch.full((3,), 2.0)
    ct = (xt * bt).sum()
    torch.zeros(3).set_(bt).add_(1)
    ct.backward()
    assert xt.grad.tolist() == [3.0, 3.0, 3.0]  # torch's silently stale gradient
    xs = sg.ones(3, requires_grad=True)
    bs = sg.full((3,), 2.0)
    cs = (xs * bs).sum()
    a = sg.zeros(3).set_(bs)
    assert a._version == bs._version == 1
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        cs.backward()


def test_set_misuse():
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            m.zeros(3, requires_grad=True).set_(m.ones(3))
        with pytest.raises(RuntimeError, match="Could not set tensor of type double"):
            m.zeros(3).set_(m.zeros(3, dtype=m.float64))
    # torch records a node with no derivative (grad_fn=<NotImplemented>): refused here
    with pytest.raises(errors.UnsupportedAPIError, match="requires grad"):
        sg.zeros(3).set_(sg.ones(3, requires_grad=True))
    with pytest.raises(errors.UnsupportedAPIError, match="a.set_\\(b\\)"):
        sg.zeros(3).set_()


@pytest.mark.parametrize(
    "name", ["addcmul_", "addcdiv_", "lerp_", "atan2_", "fill_diagonal_", "masked_scatter_", "put_"]
)
def test_inplace_on_leaf_requiring_grad_is_refused(name):
    args = {
        "addcmul_": lambda m: (m.ones(3, 4), m.ones(3, 4)),
        "addcdiv_": lambda m: (m.ones(3, 4), m.ones(3, 4)),
        "lerp_": lambda m: (m.ones(3, 4), 0.5),
        "atan2_": lambda m: (m.ones(3, 4),),
        "fill_diagonal_": lambda m: (1.0,),
        "masked_scatter_": lambda m: (m.ones(3, 4) > 0, m.ones(12)),
        "put_": lambda m: (m.tensor([0]), m.ones(1)),
    }[name]
    for m in (torch, sg):
        x = m.zeros(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
            getattr(x, name)(*args(m))


def test_inplace_dtype_and_shape_errors():
    cases = [
        (lambda m: m.zeros(3, dtype=m.int64).atan2_(m.ones(3)), RuntimeError,
         "result type Float can't be cast to the desired output type Long"),
        (lambda m: m.zeros(3, dtype=m.int64).addcmul_(m.ones(3), m.ones(3)), RuntimeError,
         "result type Float can't be cast to the desired output type Long"),
        (lambda m: m.zeros(3).addcmul_(m.ones(2, 3), m.ones(3)), RuntimeError,
         r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
        (lambda m: m.zeros(3, dtype=m.int64).lerp_(m.ones(3, dtype=m.int64), 0.5),
         NotImplementedError, "\"lerp_kernel_scalar\" not implemented for 'Long'"),
        (lambda m: m.zeros(3, dtype=m.complex64).atan2_(m.ones(3, dtype=m.complex64)),
         NotImplementedError, "atan2_cpu"),
    ]  # fmt: skip
    for make, kind, text in cases:
        with pytest.raises(kind, match=text):
            make(torch)
        with pytest.raises(kind, match=text):
            make(sg)


def test_addcdiv_integer_message_is_torchs():
    """torch's message, to the character (its two spaces in "a future  release" included)."""
    texts = []
    for m in (torch, sg):
        ints = [m.ones(3, dtype=m.int64) for _ in range(3)]
        for call in (lambda: m.addcdiv(*ints), lambda: ints[0].addcdiv_(ints[1], ints[2])):
            with pytest.raises(RuntimeError) as info:
                call()
            texts.append(str(info.value))
    assert texts[2] == texts[0] and texts[3] == texts[1]


def test_inplace_saved_operand_version_check():
    """An in-place op whose node saved self refuses backward after a later write, as torch."""
    for m in (torch, sg):
        x = m.tensor(A, requires_grad=True) * 1
        y = x.atan2_(m.tensor(B))
        z = (y * y).sum()
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


# --- out= ---------------------------------------------------------------------------------------

OUT_CASES = [
    ("maximum", lambda m, o: m.maximum(m.tensor(A), m.tensor(B), out=o), (3, 4), "float32"),
    ("minimum", lambda m, o: m.minimum(m.tensor(A), m.tensor(B), out=o), (3, 4), "float64"),
    ("mm", lambda m, o: m.mm(m.tensor(A), m.tensor(B).t(), out=o), (3, 3), "float64"),
    ("bmm", lambda m, o: m.bmm(m.tensor(A)[None], m.tensor(B).t()[None], out=o), (1, 3, 3),
     "float64"),
    ("matmul", lambda m, o: m.matmul(m.tensor(A), m.tensor(B).t(), out=o), (3, 3), "float64"),
    ("logsumexp", lambda m, o: m.logsumexp(m.tensor(A), 1, out=o), (3,), "float32"),
    ("logsumexp keepdim", lambda m, o: m.logsumexp(m.tensor(A), 0, True, out=o), (1, 4), "float64"),
    ("logcumsumexp", lambda m, o: m.logcumsumexp(m.tensor(A), 1, out=o), (3, 4), "float64"),
    ("argmax", lambda m, o: m.argmax(m.tensor(A), 1, out=o), (3,), "int64"),
    ("argmax all", lambda m, o: m.argmax(m.tensor(A), out=o), (), "int64"),
    ("argmin", lambda m, o: m.argmin(m.tensor(A), dim=0, keepdim=True, out=o), (1, 4), "int64"),
    ("all", lambda m, o: m.all(m.tensor(A) > -1, 1, out=o), (3,), "bool"),
    ("any", lambda m, o: m.any(m.tensor(A) > 1, 0, out=o), (4,), "uint8"),
    ("all none", lambda m, o: m.all(m.tensor(A) > -5, out=o), (), "bool"),
]  # fmt: skip


@pytest.mark.parametrize("name, call, shape, dtype", OUT_CASES)
def test_out_written_into(name, call, shape, dtype):
    ot = torch.zeros(shape, dtype=getattr(torch, dtype))
    os_ = sg.zeros(shape, dtype=getattr(sg, dtype))
    rt, rs = call(torch, ot), call(sg, os_)
    assert rt is ot and rs is os_
    _close(os_, ot)
    assert os_._version == ot._version


@pytest.mark.parametrize("name, call, shape, dtype", OUT_CASES)
def test_out_resized_with_torchs_warning(name, call, shape, dtype):
    ot = torch.zeros(5, dtype=getattr(torch, dtype))
    os_ = sg.zeros(5, dtype=getattr(sg, dtype))
    with pytest.warns(UserWarning, match="was resized since it had shape \\[5\\]"):
        call(torch, ot)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[5\\]"):
        call(sg, os_)
    _close(os_, ot)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        _close(call(sg, sg.zeros(0, dtype=getattr(sg, dtype))),
               call(torch, torch.zeros(0, dtype=getattr(torch, dtype))))  # fmt: skip


OUT_ERRORS = [
    (lambda m: m.maximum(m.ones(3, requires_grad=True), m.ones(3), out=m.empty(3)),
     "maximum\\(\\): functions with out=... arguments don't support automatic differentiation"),
    (lambda m: m.logcumsumexp(m.ones(3, requires_grad=True), 0, out=m.empty(3)),
     "logcumsumexp\\(\\): functions with out=... arguments don't support automatic"),
    (lambda m: m.mm(m.ones(2, 2, requires_grad=True), m.ones(2, 2), out=m.empty(2, 2)),
     "mm\\(\\): functions with out=..."),
    (lambda m: m.minimum(m.ones(3), m.ones(3), out=m.empty(3, dtype=m.int64)),
     "result type Float can't be cast to the desired output type Long"),
    (lambda m: m.mm(m.ones(2, 2), m.ones(2, 2), out=m.empty(2, 2, dtype=m.float64)),
     "Expected out tensor to have dtype float, but got double instead"),
    (lambda m: m.bmm(m.ones(1, 2, 2), m.ones(1, 2, 2), out=m.empty(1, 2, 2, dtype=m.float64)),
     "Expected out tensor to have dtype float, but got double instead"),
    (lambda m: m.logsumexp(m.ones(3), 0, out=m.empty((), dtype=m.int64)),
     "logsumexp\\(\\): Expected floating point type for result tensor, but got: Long"),
    (lambda m: m.logcumsumexp(m.ones(3), 0, out=m.empty(3, dtype=m.float64)),
     "expected scalar_type Float but found Double"),
    (lambda m: m.argmax(m.ones(3), out=m.empty((), dtype=m.int32)),
     "Expected out tensor to have dtype long int, but got int instead"),
    (lambda m: m.argmin(m.ones(3), out=m.empty(())),
     "Expected out tensor to have dtype long int, but got float instead"),
    (lambda m: m.all(m.ones(3), 0, out=m.empty(())),
     "all only supports bool tensor for result, got: Float"),
    (lambda m: m.any(m.ones(3), 0, out=m.empty((), dtype=m.int64)),
     "any only supports bool tensor for result, got: Long"),
]  # fmt: skip


@pytest.mark.parametrize("make, text", OUT_ERRORS)
def test_out_errors(make, text):
    with pytest.raises(RuntimeError, match=text):
        make(torch)
    with pytest.raises(RuntimeError, match=text):
        make(sg)


def test_out_of_non_differentiable_ops_takes_inputs_requiring_grad():
    for m in (torch, sg):
        x = m.tensor(A, requires_grad=True)
        o = m.empty(3, dtype=m.int64)
        assert m.argmax(x, 1, out=o) is o
        b = m.empty(3, dtype=m.bool)
        assert m.any(x, 1, out=b) is b
    # under no_grad, a differentiable op's out= takes them too
    with sg.no_grad():
        o = sg.empty(3, 4)
        sg.maximum(sg.tensor(A, requires_grad=True), sg.tensor(B), out=o)
    np.testing.assert_allclose(o.numpy(), np.maximum(A, B).astype(np.float32), rtol=1e-6)


def test_methods_take_no_out():
    for m in (torch, sg):
        x = m.tensor(A)
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            x.maximum(x, out=m.empty(3, 4))


FORWARD_CASES = [
    ("atan2_", lambda m, x: (x * 1).atan2_(m.tensor(B))),
    ("addcmul_", lambda m, x: (x * 1).addcmul_(x, x, value=0.5)),
    ("lerp_", lambda m, x: (x * 1).lerp_(m.tensor(B), x)),
    ("fill_diagonal_", lambda m, x: (x * 1).fill_diagonal_(3.0)),
    ("put_", lambda m, x: (x * 1).put_(m.tensor([0, 3]), x[0, :2], accumulate=True)),
    ("masked_scatter_", lambda m, x: (x * 1).masked_scatter_(x > 0, x.flatten() * 2)),
]


@pytest.mark.parametrize("name, fn", FORWARD_CASES)
def test_forward_mode_through_inplace(name, fn):
    got = []
    for m in (torch, sg):
        fa = m.autograd.forward_ad
        with fa.dual_level():
            y = fn(m, fa.make_dual(m.tensor(A), m.tensor(C)))
            got.append(fa.unpack_dual(y).tangent.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-9, atol=1e-12)
