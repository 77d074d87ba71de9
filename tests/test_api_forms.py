"""JAX's and torch.func's forms of the compiled API where they do not collide with
sourcegrad's own: `vjp(f, *primals) -> (value, vjp_fn)` beside the curried `vjp(f)(*args)`,
`argnums=` for `hessian`, `hvp` and `jacobian`; and defaults that read well in `help()`.
Numbers against central finite differences (float64)."""

import inspect
import pydoc

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.api.arguments import UNSET, Unset


def two_args(a, b):
    return np.sin(a) * b**2


def scalar_of_two(a, b):
    return np.sum(a * b**2) + np.sum(np.sin(a))


def with_count(x, n):
    return x * n


A = np.array([0.5, -1.0, 2.0])
B = np.array([2.0, 0.3, -0.7])


def pulled(fn, args, ct, position):
    """The vector-Jacobian product with `ct` by finite differences of the sum ct . f."""
    return numeric_grad(lambda *a: np.sum(ct * fn(*a)), args, position)


def test_jax_form_returns_the_value_and_one_gradient_per_primal():
    value, vjp_fn = sourcegrad.vjp(two_args, A, B)
    np.testing.assert_allclose(value, two_args(A, B))
    ct = np.array([1.0, -2.0, 0.5])
    grads = vjp_fn(ct)
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(grads[0], pulled(two_args, (A, B), ct, 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(grads[1], pulled(two_args, (A, B), ct, 1), rtol=1e-7, atol=1e-9)


def test_jax_form_of_one_primal_is_a_one_tuple_as_in_jax():
    value, vjp_fn = sourcegrad.vjp(lambda x: np.tanh(x) * 2.0, np.array([0.2, 0.4]))
    (dx,) = vjp_fn(np.ones(2))
    np.testing.assert_allclose(dx, 2.0 * (1.0 - np.tanh([0.2, 0.4]) ** 2), rtol=1e-12)


def test_jax_form_of_a_python_float():
    value, vjp_fn = sourcegrad.vjp(lambda x: x * x * 3.0, 2.0)
    assert value == 12.0
    assert vjp_fn(1.0) == (pytest.approx(12.0),)


def test_jax_form_with_wrt_as_a_keyword_gives_those_gradients():
    _, vjp_fn = sourcegrad.vjp(two_args, A, B, wrt="b")
    ct = np.ones(3)
    (db,) = vjp_fn(ct)
    np.testing.assert_allclose(db, pulled(two_args, (A, B), ct, 1), rtol=1e-7, atol=1e-9)
    _, vjp_fn = sourcegrad.vjp(two_args, A, B, argnums=(1, 0))
    db, da = vjp_fn(ct)
    np.testing.assert_allclose(da, pulled(two_args, (A, B), ct, 0), rtol=1e-7, atol=1e-9)


def test_an_integer_primal_is_refused_naming_it():
    with pytest.raises(sourcegrad.NonDifferentiableInputError, match="'n'"):
        sourcegrad.vjp(with_count, A, np.int64(3))  # a numpy int is a primal, not a wrt
    _, vjp_fn = sourcegrad.vjp(with_count, A, np.int64(3), wrt=0)
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], np.full(3, 3.0))


def test_the_curried_form_is_unchanged():
    value, pullback = sourcegrad.vjp(two_args)(A, B)  # argument 0, its gradient alone
    np.testing.assert_allclose(value, two_args(A, B))
    ct = np.ones(3)
    np.testing.assert_allclose(pullback(ct), pulled(two_args, (A, B), ct, 0), rtol=1e-7)
    for spelled in (
        sourcegrad.vjp(two_args, 1),
        sourcegrad.vjp(two_args, "b"),
        sourcegrad.vjp(two_args, wrt=1),
        sourcegrad.vjp(wrt=1)(two_args),
    ):
        db = spelled(A, B)[1](ct)
        np.testing.assert_allclose(db, pulled(two_args, (A, B), ct, 1), rtol=1e-7, atol=1e-9)
    da, db = sourcegrad.vjp(two_args, (0, "b"))(A, B)[1](ct)
    np.testing.assert_allclose(db, pulled(two_args, (A, B), ct, 1), rtol=1e-7, atol=1e-9)


def test_wrt_given_twice_is_refused():
    with pytest.raises(sourcegrad.WrtError, match="give it once"):
        sourcegrad.vjp(two_args, 1, wrt=0)


def test_the_jax_form_keeps_its_compiled_code_between_calls():
    first = sourcegrad.vjp(two_args, A, B)[1]
    second = sourcegrad.vjp(two_args, A + 1.0, B)[1]
    ct = np.ones(3)
    np.testing.assert_allclose(second(ct)[0], pulled(two_args, (A + 1.0, B), ct, 0), rtol=1e-7)
    np.testing.assert_allclose(first(ct)[0], pulled(two_args, (A, B), ct, 0), rtol=1e-7)
    from sourcegrad.api import transforms

    kept = transforms._VJPS[(two_args, (0, 1), "auto")]
    sourcegrad.vjp(two_args, A * 2.0, B)
    assert transforms._VJPS[(two_args, (0, 1), "auto")] is kept


def test_argnums_for_hessian_hvp_and_jacobian():
    H = sourcegrad.hessian(scalar_of_two, argnums=1)(A, B)
    expected = np.diag(2.0 * A)  # d2/db2 of sum(a * b**2)
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sourcegrad.hessian(scalar_of_two, "b")(A, B), expected, atol=1e-12)
    v = np.array([1.0, 2.0, 3.0])
    Hv = sourcegrad.hvp(scalar_of_two, argnums=1)(A, B, v)
    np.testing.assert_allclose(Hv, expected @ v, rtol=1e-10)
    J = sourcegrad.jacobian(two_args, argnums=1)(A, B)
    np.testing.assert_allclose(J, np.diag(np.sin(A) * 2.0 * B), rtol=1e-12, atol=1e-12)
    J_fwd = sourcegrad.jacobian(two_args, mode="fwd", argnums=1)(A, B)
    np.testing.assert_allclose(J_fwd, J, rtol=1e-12, atol=1e-12)
    with pytest.raises(sourcegrad.WrtError, match="argnums"):
        sourcegrad.hessian(scalar_of_two, 0, argnums=1)


@pytest.mark.parametrize(
    "name", ["grad", "value_and_grad", "vjp", "grad_and_aux", "elementwise_grad", "hessian"]
)
def test_defaults_read_well_in_help(name):
    fn = getattr(sourcegrad, name)
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert "object at 0x" not in text
    default = inspect.signature(fn).parameters["wrt"].default
    assert isinstance(default, Unset) and repr(default).startswith("<argument 0")
    if "argnums" in inspect.signature(fn).parameters:
        assert repr(inspect.signature(fn).parameters["argnums"].default) == "<an alias of wrt>"


def test_the_default_means_argument_0():
    assert repr(UNSET) == "<argument 0>"
    a = np.array([0.3, 0.4])
    np.testing.assert_allclose(
        sourcegrad.grad(scalar_of_two)(a, a), numeric_grad(scalar_of_two, (a, a), 0), rtol=1e-7
    )
