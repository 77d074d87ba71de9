"""`sourcegrad.func` (torch.func) against torch: values, structures, `requires_grad` of the
results and error messages.

Each case is a function of a torch-like module `T` (sourcegrad or torch), run on both; the
results (nested tuples, lists and dicts of Tensors) must have the same structure and
values. Without torch the comparisons skip; the finite-difference checks run anyway.
"""

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import ForwardADError

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _x(T):
    return T.tensor([1.0, 2.0, 3.0], dtype=T.float64)


def _M(T):
    return T.arange(6.0).reshape(2, 3)


def _f(x):
    return (x.sin() * x).sum()


def _linear(T):
    T.manual_seed(0)
    m = T.nn.Linear(2, 2)
    with T.no_grad():
        m.weight.copy_(T.tensor([[0.5, -1.0], [2.0, 0.25]]))
        m.bias.copy_(T.tensor([0.1, -0.2]))
    return m


def _randomness_same(T):
    r = T.func.vmap(lambda x: T.rand(()) + x * 0, randomness="same")(_x(T))
    return bool((r == r[0]).all())


CASES = {
    "grad": lambda T: T.func.grad(_f)(_x(T)),
    "grad_and_value": lambda T: T.func.grad_and_value(_f)(_x(T)),
    "grad_grad": lambda T: T.func.grad(lambda x: T.func.grad(_f)(x).sum())(_x(T)),
    "grad_aux": lambda T: T.func.grad(lambda x: (_f(x), x * 2), has_aux=True)(_x(T)),
    "grad_argnums": lambda T: T.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(
        _x(T), _x(T) * 2
    ),
    "grad_dict": lambda T: T.func.grad(lambda p: (p["w"] * p["b"]).sum())(
        {"w": _x(T), "b": _x(T) + 1}
    ),
    "grad_unused": lambda T: T.func.grad(lambda a, b: a.sum(), argnums=1)(_x(T), _x(T)),
    "jacrev": lambda T: T.func.jacrev(T.sin)(_x(T)),
    "jacrev_outer": lambda T: T.func.jacrev(lambda x: x.outer(x))(_x(T)),
    "jacfwd_outer": lambda T: T.func.jacfwd(lambda x: x.outer(x))(_x(T)),
    "jacrev_argnums": lambda T: T.func.jacrev(lambda a, b: a * b.sum(), argnums=(0, 1))(
        _x(T), _x(T)[:2]
    ),
    "jacfwd_argnums": lambda T: T.func.jacfwd(lambda a, b: a * b.sum(), argnums=(0, 1))(
        _x(T), _x(T)[:2]
    ),
    "jacrev_tuple_out": lambda T: T.func.jacrev(lambda x: (x.sum(), x * 2))(_x(T)),
    "jacfwd_aux": lambda T: T.func.jacfwd(lambda x: (x.exp(), x.sum()), has_aux=True)(_x(T)),
    "hessian": lambda T: T.func.hessian(_f)(_x(T)),
    "hessian_log_softmax": lambda T: T.func.hessian(lambda x: T.log_softmax(x, 0)[0])(_x(T)),
    "hessian_matmul": lambda T: T.func.hessian(
        lambda x: (x.reshape(1, 3) @ T.tensor([[1.0], [2.0], [3.0]], dtype=T.float64)).tanh().sum()
    )(_x(T)),
    "jacrev_jacrev": lambda T: T.func.jacrev(T.func.jacrev(_f))(_x(T)),
    "vjp": lambda T: (lambda o, fn: (o, fn(T.ones(3, dtype=T.float64))))(*T.func.vjp(T.sin, _x(T))),
    "vjp_aux": lambda T: (lambda o, fn, aux: (o, fn(T.ones(3, dtype=T.float64)), aux))(
        *T.func.vjp(lambda x: (x.sin(), x.sum()), _x(T), has_aux=True)
    ),
    "jvp": lambda T: T.func.jvp(T.sin, (_x(T),), (T.ones(3, dtype=T.float64),)),
    "jvp_of_grad": lambda T: T.func.jvp(T.func.grad(_f), (_x(T),), (T.ones(3, dtype=T.float64),)),
    "vmap": lambda T: T.func.vmap(T.sin)(_M(T)),
    "vmap_dot": lambda T: T.func.vmap(T.dot)(_M(T), _M(T)),
    "vmap_in_dims": lambda T: T.func.vmap(T.mv, in_dims=(None, 0))(_M(T), T.ones(4, 3)),
    "vmap_in_dim_1": lambda T: T.func.vmap(lambda a: a.sum(), in_dims=1)(_M(T)),
    "vmap_out_dims": lambda T: T.func.vmap(lambda a: a * 2, out_dims=1)(_M(T)),
    "vmap_tuple_out": lambda T: T.func.vmap(lambda a: (a.sum(), a.max()))(_M(T)),
    "vmap_nested_in_dims": lambda T: T.func.vmap(
        lambda p: p["a"] * p["b"], in_dims=({"a": 0, "b": None},)
    )({"a": _M(T), "b": T.tensor([1.0, 2.0, 3.0])}),
    "vmap_per_sample_grad": lambda T: T.func.vmap(
        T.func.grad(lambda w, xx: (w * xx).sum() ** 2), in_dims=(None, 0)
    )(T.ones(3), _M(T)),
    "vmap_vmap": lambda T: T.func.vmap(T.func.vmap(T.mul))(_M(T), _M(T)),
    "vmap_jacrev": lambda T: T.func.vmap(T.func.jacrev(T.sin))(_M(T)),
    "vmap_randomness_same": _randomness_same,
    "functional_call": lambda T: T.func.functional_call(
        _linear(T), {"weight": T.ones(2, 2), "bias": T.zeros(2)}, (T.tensor([1.0, 2.0]),)
    ),
    "functional_call_single_arg": lambda T: T.func.functional_call(
        _linear(T), {"weight": T.ones(2, 2)}, T.tensor([1.0, 2.0])
    ),
    "functional_call_restores": lambda T: (
        lambda m: (T.func.functional_call(m, {"weight": T.ones(2, 2)}, T.ones(2)), m.weight)
    )(_linear(T)),
    "functional_call_grad": lambda T: (
        lambda m: T.func.grad(lambda p, xx: T.func.functional_call(m, p, (xx,)).sum())(
            {k: v.detach() for k, v in m.named_parameters()}, T.tensor([1.0, 2.0])
        )
    )(_linear(T)),
}


def _canonical(value):
    """Results as nested plain data: (kind, shape, requires_grad, values) for a Tensor."""
    if isinstance(value, (tuple, list)):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if hasattr(value, "detach"):
        return (
            "tensor",
            tuple(value.shape),
            value.requires_grad,
            str(value.dtype),
            value.detach().numpy().astype(np.float64),
        )
    return value


def _assert_same(ours, theirs):
    if isinstance(ours, tuple) and ours and ours[0] == "tensor":
        assert ours[:4] == theirs[:4]
        tol = 1e-6 if ours[3].endswith("float32") else 1e-10  # (numpy's and torch's sin differ
        np.testing.assert_allclose(ours[4], theirs[4], rtol=tol, atol=tol)  # by an ulp)
    elif isinstance(ours, tuple):
        assert isinstance(theirs, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
    elif isinstance(ours, dict):
        assert list(ours) == list(theirs)
        for k in ours:
            _assert_same(ours[k], theirs[k])
    else:
        assert ours == theirs


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    _assert_same(_canonical(CASES[name](sg)), _canonical(CASES[name](torch)))


ERRORS = {
    "grad_not_scalar": lambda T: T.func.grad(T.sin)(_x(T)),
    "grad_not_tensor": lambda T: T.func.grad(lambda x: 3.0)(_x(T)),
    "grad_aux_not_pair": lambda T: T.func.grad(lambda x: x.sum(), has_aux=True)(_x(T)),
    "argnum_out_of_range": lambda T: T.func.grad(lambda x: x.sum(), argnums=1)(_x(T)),
    "argnums_type": lambda T: T.func.grad(lambda x: x.sum(), argnums=1.5)(_x(T)),
    "not_a_tensor": lambda T: T.func.grad(lambda x: x.sum())(3.0),
    "jvp_primals_not_tuple": lambda T: T.func.jvp(T.sin, _x(T), _x(T)),
    "jvp_tangent_size": lambda T: T.func.jvp(T.sin, (_x(T),), (_x(T)[:2],)),
    "vjp_cotangent_shape": lambda T: T.func.vjp(T.sin, _x(T))[1](T.ones(2, dtype=T.float64)),
    "vmap_sizes": lambda T: T.func.vmap(T.add)(T.ones(2, 3), T.ones(3, 3)),
    "vmap_nothing_mapped": lambda T: T.func.vmap(T.sin, in_dims=(None,))(_x(T)),
    "vmap_in_dim_range": lambda T: T.func.vmap(T.sin, in_dims=2)(_x(T)),
    "vmap_returns_float": lambda T: T.func.vmap(lambda x: 3.0)(_x(T)),
    "vmap_random": lambda T: T.func.vmap(lambda x: T.rand(()))(_x(T)),
    "vmap_randomness_flag": lambda T: T.func.vmap(T.sin, randomness="maybe")(_x(T)),
    "functional_call_strict": lambda T: T.func.functional_call(
        _linear(T), {"weight": T.ones(2, 2)}, (T.ones(2),), strict=True
    ),
    "functional_call_repeated": lambda T: T.func.functional_call(
        _linear(T), ({"weight": T.ones(2, 2)}, {"weight": T.ones(2, 2)}), (T.ones(2),)
    ),
}


def _error(fn, T):
    try:
        fn(T)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return type(e).__name__, str(e)
    return None


@needs_torch
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name):
    ours = _error(ERRORS[name], sg)
    assert ours is not None and ours == _error(ERRORS[name], torch)


def test_nested_forward_transforms_are_refused():
    """One forward level at a time: jacfwd of jacfwd is refused by name, never computed
    wrongly (hessian is jacfwd over jacrev, which needs one)."""
    with pytest.raises(ForwardADError, match="one level at a time"):
        sg.func.jacfwd(sg.func.jacfwd(sg.sin))(_x(sg))


def test_importable_as_a_module():
    import sourcegrad.func as func

    assert func is sg.func and func.vmap is sg.func.vmap


def test_hessian_against_finite_differences():
    x = np.array([0.3, -0.7, 1.1])

    def f(t):
        return (t.tanh() * t.exp()).sum() / (1 + (t * t).sum())

    h = sg.func.hessian(f)(sg.tensor(x)).numpy()
    eps = 1e-5
    g = sg.func.grad(f)
    numeric = np.stack(
        [
            (g(sg.tensor(x + eps * e)).numpy() - g(sg.tensor(x - eps * e)).numpy()) / (2 * eps)
            for e in np.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(h, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)


def test_hessian_through_a_custom_function_saving_its_output():
    """Forward over reverse: the output a custom Function saves for backward keeps its tangent
    (torch refuses this Function in its transforms; the analytic Hessian is the oracle)."""

    class Exp(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            ctx.y = y
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            return t * ctx.y

    v = np.array([0.1, 0.5, -0.3])
    h = sg.func.hessian(lambda x: Exp.apply(x).sum() * x.sum())(sg.tensor(v)).numpy()
    e = np.exp(v)
    expected = np.diag(e * v.sum()) + e[:, None] + e[None, :]
    np.testing.assert_allclose(h, expected, rtol=1e-12)
