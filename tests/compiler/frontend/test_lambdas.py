"""Lambdas passed to grad, jvp and vjp, stored in variables, called from differentiated code:
the source is found from the code object's first line and (Python 3.11+) its instructions'
columns; where lambdas on one line cannot be told apart the error is located. Numbers
against central finite differences (float64)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import frontend
from tests.compiler import lambda_cases as cases


@pytest.fixture
def x():
    return np.array([0.3, -1.1, 2.0])


def close(got, fn, args, pos=0):
    np.testing.assert_allclose(got, numeric_grad(fn, args, pos), rtol=1e-7, atol=1e-9)


def test_a_lambda_in_a_variable(x):
    g = sourcegrad.grad(cases.objective)
    close(g(x), cases.objective, (x,))
    assert "def dobjective_dw(w):" in g.source  # named after its variable


def test_two_lambdas_on_one_line_told_apart_by_columns(x):
    if not hasattr(cases.objective.__code__, "co_positions"):
        pytest.skip("Python 3.10 records no columns")
    first, second = cases.two_on_a_line
    close(sourcegrad.grad(first)(x), first, (x,))
    close(sourcegrad.grad(second)(x), second, (x,))
    for twin in cases.twins:
        np.testing.assert_allclose(sourcegrad.grad(twin)(x), 2.0)


def test_a_lambda_nested_in_a_lambda(x):
    close(sourcegrad.grad(cases.nested)(x), cases.nested, (x,))


def test_a_lambda_over_several_lines(x):
    close(sourcegrad.grad(cases.spread)(x), cases.spread, (x,))


def test_a_global_lambda_called_from_a_function(x):
    close(sourcegrad.grad(cases.uses_a_global_lambda)(x), cases.uses_a_global_lambda, (x,))


def test_grad_of_a_lambda_written_in_the_call(x):
    np.testing.assert_allclose(
        cases.gradient_of_an_inline_lambda(x), np.exp(x) * (1 + x), rtol=1e-12
    )


def test_a_lambda_of_several_arguments_in_every_mode():
    rng = np.random.default_rng(3)
    w, b, X = rng.normal(size=2), 0.4, rng.normal(size=(4, 2))
    fn = cases.loss_of_two
    dw, db = sourcegrad.grad(fn, argnums=(0, 1))(w, b, X)
    close(dw, fn, (w, b, X), 0)
    close(db, fn, (w, b, X), 1)
    v = np.array([1.0, -2.0])
    _, tangent = sourcegrad.jvp(fn, (w, b, X), (v, None, None))
    np.testing.assert_allclose(tangent, numeric_grad(fn, (w, b, X), 0) @ v, rtol=1e-7)
    value, pullback = sourcegrad.vjp(fn)(w, b, X)
    close(pullback(1.0), fn, (w, b, X), 0)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_lambdas_that_cannot_be_told_apart_are_refused_located(monkeypatch, x):
    # as on Python 3.10, where code objects carry no columns
    monkeypatch.setattr(frontend.source, "_lambdas_holding", lambda candidates, code: candidates)
    with pytest.raises(sourcegrad.UnsupportedSyntaxError, match="cannot be told apart") as info:
        sourcegrad.grad(cases.ambiguous[1])(x)
    line = 1 + next(i for i, text in enumerate(open(cases.__file__)) if "ambiguous =" in text)
    assert f"lambda_cases.py:{line}" in str(info.value)
    assert "ambiguous = (lambda x" in str(info.value)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_lambda_without_source_is_refused():
    fn = eval("lambda x: x * 2.0")  # noqa: S307
    with pytest.raises(sourcegrad.SourceNotFoundError):
        sourcegrad.grad(fn)(1.0)
