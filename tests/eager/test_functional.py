"""`sourcegrad.autograd.functional` and `gradgradcheck`, against torch and finite differences.

Every function here is written against a torch-like module `T`, so the same call
runs on sourcegrad and (where installed) on torch: the results must have the
same structure (Tensor, tuple, tuple of tuples), shapes, `requires_grad` and
values. The values are also checked against central finite differences in
float64, which needs no torch.
"""

import numpy as np
import pytest

import sourcegrad as sg

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
# torch's vectorized jacobian goes through torch.jit, which warns that it is deprecated
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
R = np.random.default_rng(7)
EPS = 1e-6


def arr(*shape):
    return R.uniform(-1.0, 1.0, shape)


def pos(*shape):
    return R.uniform(0.5, 1.5, shape)


def _to(T, x, requires_grad=False):
    if isinstance(x, tuple):
        return tuple(_to(T, e, requires_grad) for e in x)
    return T.tensor(x, dtype=T.float64, requires_grad=requires_grad)


def _numpy(x):
    """Nested tuples of Tensors as nested tuples of arrays (and the tensors' flags)."""
    if isinstance(x, tuple):
        return tuple(_numpy(e) for e in x)
    assert not isinstance(x, list)
    return x.detach().numpy()


def _flags(x):
    if isinstance(x, tuple):
        return tuple(_flags(e) for e in x)
    return (tuple(x.shape), x.requires_grad)


def _assert_close(got, expected, rtol=1e-9, atol=1e-12):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_close(g, e, rtol, atol)
        return
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def _both(call):
    """`call(T)` on sourcegrad and on torch: same structure, flags and values."""
    got = call(sg)
    if torch is None:
        return got
    expected = call(torch)
    assert _flags(got) == _flags(expected)
    _assert_close(_numpy(got), _numpy(expected))
    return got


# ---- functions of one and of several inputs ------------------------------------------------


def f_vec(T, x):
    return (x.exp() * x.sin()).cumsum(0)


def f_scalar(T, x):
    return (x**3).sum() + x.prod() * x.tanh().sum()


def f_two(T, x, y):
    return (x * y).sin() + y.exp()


def f_two_tuple(T, x, y):
    return x * y.sum(), (x.exp() @ y.t()).sin()


def f_two_scalar(T, x, y):
    return (x.exp() @ y).pow(2).sum() + (x * x).sum() * y.sum()


def numeric_jacobian(f, arrays):
    """d f / d arrays[j] by central differences: shape out.shape + arrays[j].shape."""
    base = np.asarray(f(*arrays))
    jacs = []
    for j, a in enumerate(arrays):
        jac = np.zeros(base.shape + a.shape)
        for k in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[j][k] += EPS
            minus[j][k] -= EPS
            jac[(Ellipsis,) + k] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * EPS)
        jacs.append(jac)
    return jacs


def _np_fn(f, index=None):
    def g(*arrays):
        with sg.no_grad():
            out = f(sg, *[sg.tensor(a) for a in arrays])
        if index is not None:
            out = out[index]
        return out.numpy()

    return g


def _np_grad(f, j):
    """The gradient of scalar f with respect to input j, as a numpy function (for Hessians)."""

    def g(*arrays):
        xs = [sg.tensor(a, requires_grad=True) for a in arrays]
        return sg.autograd.grad(f(sg, *xs), xs[j])[0].numpy()

    return g


# ---- jacobian -------------------------------------------------------------------------------


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_single_input(vectorize):
    x = arr(4)
    jac = _both(
        lambda T: T.autograd.functional.jacobian(
            lambda t: f_vec(T, t), _to(T, x), vectorize=vectorize
        )
    )
    assert isinstance(jac, sg.Tensor) and tuple(jac.shape) == (4, 4)
    np.testing.assert_allclose(
        jac.numpy(), numeric_jacobian(_np_fn(f_vec), [x])[0], rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_tuple_inputs_and_outputs(vectorize):
    x, y = arr(2), arr(3, 2)
    jac = _both(
        lambda T: T.autograd.functional.jacobian(
            lambda a, b: f_two_tuple(T, a, b), _to(T, (x, y)), vectorize=vectorize
        )
    )
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(j) == 2 for j in jac)
    for i in range(2):
        num = numeric_jacobian(_np_fn(f_two_tuple, i), [x, y])
        for j in range(2):
            np.testing.assert_allclose(jac[i][j].numpy(), num[j], rtol=1e-6, atol=1e-8)


def test_jacobian_structures():
    """A tuple on one side only: a tuple of Tensors (torch's _tuple_postprocess)."""
    x, y = arr(2), arr(3, 2)
    by_input = _both(
        lambda T: T.autograd.functional.jacobian(lambda a, b: f_two(T, a, b), _to(T, (x, y)))
    )
    assert isinstance(by_input, tuple) and len(by_input) == 2
    assert tuple(by_input[1].shape) == (3, 2, 3, 2)
    by_output = _both(
        lambda T: T.autograd.functional.jacobian(lambda a: (a.exp(), a.sum()), _to(T, x))
    )
    assert isinstance(by_output, tuple) and tuple(by_output[1].shape) == (2,)
    one_tuple = _both(lambda T: T.autograd.functional.jacobian(lambda a: a * 2, (_to(T, x),)))
    assert isinstance(one_tuple, tuple) and len(one_tuple) == 1


def test_jacobian_unused_input_and_forward_mode():
    x, y = arr(3), arr(2)
    jac = _both(lambda T: T.autograd.functional.jacobian(lambda a, b: a.exp(), _to(T, (x, y))))
    assert not jac[1].numpy().any()
    fwd = _both(
        lambda T: T.autograd.functional.jacobian(
            lambda a: f_vec(T, a), _to(T, x), vectorize=True, strategy="forward-mode"
        )
    )
    np.testing.assert_allclose(
        fwd.numpy(), numeric_jacobian(_np_fn(f_vec), [x])[0], rtol=1e-6, atol=1e-8
    )


def test_jacobian_create_graph():
    """create_graph=True: the Jacobian stays connected to the inputs and differentiates again."""
    x = arr(3)

    def call(T):
        t = _to(T, x, requires_grad=True)
        jac = T.autograd.functional.jacobian(lambda a: f_vec(T, a), t, create_graph=True)
        assert jac.requires_grad
        (g,) = T.autograd.grad((jac * jac).sum(), t)
        return jac, g

    _, g = _both(call)

    # d/dx sum(J^2), by differences of the Jacobian computed without a graph
    def sq(a):
        j = sg.autograd.functional.jacobian(lambda t: f_vec(sg, t), sg.tensor(a))
        return float((j * j).sum())

    num = numeric_jacobian(sq, [x])[0]
    np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-7)
    without = sg.autograd.functional.jacobian(
        lambda a: f_vec(sg, a), sg.tensor(x, requires_grad=True)
    )
    assert not without.requires_grad


# ---- hessian --------------------------------------------------------------------------------


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_single_input(vectorize):
    x = pos(2, 2)
    h = _both(
        lambda T: T.autograd.functional.hessian(
            lambda t: f_scalar(T, t), _to(T, x), vectorize=vectorize
        )
    )
    assert tuple(h.shape) == (2, 2, 2, 2)
    num = numeric_jacobian(_np_grad(f_scalar, 0), [x])[0]
    np.testing.assert_allclose(h.numpy(), num, rtol=1e-5, atol=1e-7)
    flat = h.numpy().reshape(4, 4)
    np.testing.assert_allclose(flat, flat.T, atol=1e-12)


def test_hessian_tuple_inputs():
    x, y = arr(2, 3), arr(3)
    h = _both(
        lambda T: T.autograd.functional.hessian(lambda a, b: f_two_scalar(T, a, b), _to(T, (x, y)))
    )
    assert isinstance(h, tuple) and len(h) == 2 and all(len(row) == 2 for row in h)
    assert tuple(h[0][1].shape) == (2, 3, 3)
    for i in range(2):
        num = numeric_jacobian(_np_grad(f_two_scalar, i), [x, y])
        for j in range(2):
            np.testing.assert_allclose(h[i][j].numpy(), num[j], rtol=1e-5, atol=1e-7)


def test_hessian_create_graph_and_linear_function():
    x = pos(3)

    def call(T):
        t = _to(T, x, requires_grad=True)
        h = T.autograd.functional.hessian(lambda a: (a**4).sum(), t, create_graph=True)
        (g,) = T.autograd.grad(h.sum(), t)
        zero = T.autograd.functional.hessian(lambda a: (a * 3).sum(), _to(T, x))
        return h, g, zero

    _, g, zero = _both(call)
    np.testing.assert_allclose(g.numpy(), 24 * x, rtol=1e-12)
    assert not zero.numpy().any()


def test_hessian_needs_one_element():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        sg.autograd.functional.hessian(lambda a: a * 2, sg.ones(3))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        sg.autograd.functional.hessian(lambda a: (a.sum(), a.sum()), sg.ones(3))


# ---- vjp, jvp, vhp, hvp ---------------------------------------------------------------------


def test_vjp():
    x, v = arr(4), arr(4)
    out, g = _both(lambda T: T.autograd.functional.vjp(lambda t: f_vec(T, t), _to(T, x), _to(T, v)))
    jac = numeric_jacobian(_np_fn(f_vec), [x])[0]
    np.testing.assert_allclose(g.numpy(), v @ jac, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out.numpy(), _np_fn(f_vec)(x))
    # a scalar output needs no v; tuples in, tuples out
    p = pos(3)
    _both(lambda T: T.autograd.functional.vjp(lambda t: f_scalar(T, t), _to(T, p)))
    xs, vs = (arr(2), arr(3, 2)), (arr(2), arr(3))
    res = _both(
        lambda T: T.autograd.functional.vjp(
            lambda a, b: f_two_tuple(T, a, b), _to(T, xs), _to(T, vs)
        )
    )
    assert isinstance(res[0], tuple) and isinstance(res[1], tuple)


def test_jvp():
    x, v = arr(4), arr(4)
    out, jv = _both(
        lambda T: T.autograd.functional.jvp(lambda t: f_vec(T, t), _to(T, x), _to(T, v))
    )
    jac = numeric_jacobian(_np_fn(f_vec), [x])[0]
    np.testing.assert_allclose(jv.numpy(), jac @ v, rtol=1e-6, atol=1e-8)
    xs, vs = (arr(2), arr(3, 2)), (arr(2), arr(3, 2))
    out, jv = _both(
        lambda T: T.autograd.functional.jvp(
            lambda a, b: f_two_tuple(T, a, b), _to(T, xs), _to(T, vs)
        )
    )
    assert isinstance(out, tuple) and isinstance(jv, tuple)
    for i in range(2):
        num = numeric_jacobian(_np_fn(f_two_tuple, i), list(xs))
        expected = sum(np.tensordot(num[j], vs[j], axes=vs[j].ndim) for j in range(2))
        np.testing.assert_allclose(jv[i].numpy(), expected, rtol=1e-6, atol=1e-8)
    # single-element input: v may be omitted
    _both(lambda T: T.autograd.functional.jvp(lambda t: t.exp() * 3, _to(T, np.array([0.3]))))


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp(name):
    x, y = arr(2, 3), arr(3)
    vx, vy = arr(2, 3), arr(3)
    _, hv = _both(
        lambda T: getattr(T.autograd.functional, name)(
            lambda a, b: f_two_scalar(T, a, b), _to(T, (x, y)), _to(T, (vx, vy))
        )
    )
    assert isinstance(hv, tuple) and len(hv) == 2
    for i, v_ in enumerate((vx, vy)):
        num = numeric_jacobian(_np_grad(f_two_scalar, i), [x, y])
        # the Hessian is symmetric, so v^T H and H v agree
        expected = np.tensordot(num[0], vx, axes=2) + np.tensordot(num[1], vy, axes=1)
        np.testing.assert_allclose(hv[i].numpy(), expected, rtol=1e-5, atol=1e-7)
    p, v = pos(3), arr(3)
    single = _both(
        lambda T: getattr(T.autograd.functional, name)(
            lambda t: f_scalar(T, t), _to(T, p), _to(T, v)
        )
    )
    assert isinstance(single[1], sg.Tensor)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_create_graph_results(name):
    """create_graph=True keeps the results differentiable; False detaches them."""
    x, v = pos(3), arr(3)

    def call(T, create):
        t = _to(T, x, requires_grad=True)
        fn = getattr(T.autograd.functional, name)
        out, res = fn(
            lambda a: (a**3).sum() if name in ("vhp", "hvp") else a**3,
            t,
            _to(T, v),
            create_graph=create,
        )
        if not create:
            return out, res
        (g,) = T.autograd.grad(res.sum(), t)
        return out, res, g

    _both(lambda T: call(T, True))
    out, res = _both(lambda T: call(T, False))
    assert not out.requires_grad and not res.requires_grad


# ---- errors, as torch words them -----------------------------------------------------------


def _error(T, call):
    try:
        call(T)
    except (RuntimeError, TypeError, AssertionError, NotImplementedError) as e:
        return type(e).__name__, str(e).replace("sourcegrad.eager.tensor", "torch")
    return None


ERRORS = {
    "non-tensor input": lambda T: T.autograd.functional.jacobian(lambda a: a, [1.0]),
    "non-tensor in tuple": lambda T: T.autograd.functional.vjp(
        lambda a, b: a, (T.ones(2), 3), T.ones(2)
    ),
    "v missing": lambda T: T.autograd.functional.vjp(lambda a: a * 2, T.ones(2)),
    "v missing for jvp": lambda T: T.autograd.functional.jvp(lambda a: a * 2, T.ones(2)),
    "v wrong size": lambda T: T.autograd.functional.vjp(lambda a: a * 2, T.ones(2), T.ones(3)),
    "v wrong length": lambda T: T.autograd.functional.jvp(
        lambda a, b: a * b, (T.ones(2), T.ones(2)), (T.ones(2),)
    ),
    "v entry wrong size": lambda T: T.autograd.functional.hvp(
        lambda a, b: (a * b).sum(), (T.ones(2), T.ones(2)), (T.ones(2), T.ones(3))
    ),
    "v single tensor": lambda T: T.autograd.functional.vhp(
        lambda a: (a * a).sum(), T.ones(2), (T.ones(2), T.ones(2))
    ),
    "strict: output independent": lambda T: T.autograd.functional.jacobian(
        lambda a, b: a * 2, (T.ones(2), T.ones(2)), strict=True
    ),
    "strict: output does not require grad": lambda T: T.autograd.functional.vjp(
        lambda a: T.ones(2), T.ones(2), T.ones(2), strict=True
    ),
    "strict: vjp unused input": lambda T: T.autograd.functional.vjp(
        lambda a, b: a * 2, (T.ones(2), T.ones(2)), T.ones(2), strict=True
    ),
    "strict: jvp independent": lambda T: T.autograd.functional.jvp(
        lambda a, b: a * 2, (T.ones(2), T.ones(2)), (T.ones(2), T.ones(2)), strict=True
    ),
    "strict: hessian of a linear function": lambda T: T.autograd.functional.hessian(
        lambda a: (a * 2).sum(), T.ones(2), strict=True
    ),
    "strict: vhp of a linear function": lambda T: T.autograd.functional.vhp(
        lambda a: (a * 2).sum(), T.ones(2), T.ones(2), strict=True
    ),
    "strict and vectorize": lambda T: T.autograd.functional.jacobian(
        lambda a: a * a, T.ones(2), strict=True, vectorize=True
    ),
    "forward mode needs vectorize": lambda T: T.autograd.functional.jacobian(
        lambda a: a * a, T.ones(2), strategy="forward-mode"
    ),
    "forward mode and create_graph": lambda T: T.autograd.functional.jacobian(
        lambda a: a * a, T.ones(2), create_graph=True, strategy="forward-mode", vectorize=True
    ),
    "unknown strategy": lambda T: T.autograd.functional.jacobian(
        lambda a: a * a, T.ones(2), strategy="sideways"
    ),
    "vhp of a vector": lambda T: T.autograd.functional.vhp(lambda a: a * a, T.ones(2), T.ones(2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    got = _error(sg, ERRORS[name])
    assert got is not None, "no error raised"
    if torch is not None:
        assert got == _error(torch, ERRORS[name])


# ---- gradcheck and gradgradcheck ------------------------------------------------------------


def test_gradgradcheck_passes():
    x = sg.tensor(pos(3), dtype=sg.float64, requires_grad=True)
    y = sg.tensor(arr(3), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda a, b: (a.log() * b.exp()).sin(), (x, y))
    assert sg.autograd.gradgradcheck(lambda a: a.softmax(0), (x,))
    assert sg.autograd.gradgradcheck(
        lambda a: (a @ a.t()).tanh(), (sg.tensor(arr(2, 3), requires_grad=True),)
    )
    go = sg.tensor(arr(3), requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda a: a**3, (x,), (go,))
    # two outputs, one of which does not need a gradient
    assert sg.autograd.gradgradcheck(lambda a: (a.exp(), a.detach() * 2), (x,))


class _WrongDoubleBackward(sg.autograd.Function):
    """cube, whose backward is right but not differentiable correctly: 3 x^2 g with x^2 detached."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * (x * x).detach() * g


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = sg.tensor(pos(3), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(_WrongDoubleBackward.apply, (x,))
    with pytest.raises(sg.autograd.GradcheckError, match="Jacobian mismatch"):
        sg.autograd.gradgradcheck(_WrongDoubleBackward.apply, (x,))
    assert (
        sg.autograd.gradgradcheck(_WrongDoubleBackward.apply, (x,), raise_exception=False) is False
    )


@needs_torch
def test_gradgradcheck_like_torch():
    x = pos(3)
    for T in (sg, torch):
        t = T.tensor(x, requires_grad=True)
        assert T.autograd.gradgradcheck(lambda a: a.sqrt() * a.sin(), (t,))
        assert T.autograd.gradgradcheck(lambda a: (a.cumprod(0) * a).sum(), (t,))
