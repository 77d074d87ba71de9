"""Example inputs of registry entries: the data the registry-wide test grid is generated from.

Each family module keeps, beside its entries, a table `EXAMPLES`: entry name -> list of
`Example` (the first is the one the default test run tries; the others are the entry's shape,
axis and keyword variants, tried by `pytest -m grid`). An `Example` holds the call's
arguments: `arg(3, 4, domain="positive")` is a differentiated float array drawn from a domain
where the entry is smooth, `arg(domain="positive", py=True)` a Python float; any other value
(an int, a tuple of axes, a string, an integer index array) is passed as it is and not
differentiated. Keyword arguments are the call's keyword arguments. An argument of the
domain "spd" is passed symmetrized, `(a + a.T) / 2`: the entries that read one triangle of a
symmetric matrix (cholesky, eigh, multivariate_normal's cov) give the gradient for symmetric
perturbations, which is the gradient in a of that call. One of the domain "simplex" is passed
normalized, `a / np.sum(a, axis=0)` (scipy.stats.dirichlet refuses points off the simplex).

tests/test_registry_grid.py turns every example into a scalar loss (the entry's outputs times
fixed random weights) and checks, in the compiler, the gradient against central differences
and the Hessian-vector product against differences of the gradient, in float64 and float32,
and, where the eager mode has the entry, that its Tensor gradient equals the compiled one.

Imports numpy only; the tables cost a few tuples at import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Arg:
    """A differentiated input: its shape (None: a Python float) and the domain it is drawn from."""

    shape: tuple | None
    domain: str = "normal"


@dataclass(frozen=True)
class Example:
    """One call of an entry: arguments (Arg or a value passed as it is) and keyword arguments.

    loss: expressions of `out` (the entry's result) the grid weights and sums, instead of every
    float part of the result (for results only defined up to a sign, such as eigenvectors);
    hvp: False where the second derivative is not the entry's to give (none is skipped
    silently: the grid's test lists these); rtol: a looser tolerance for entries whose finite
    differences are noisy (iterative special functions).
    """

    args: tuple
    kwargs: dict = field(default_factory=dict)
    loss: tuple | None = None
    hvp: bool = True
    rtol: float = 1e-6


def arg(*shape, domain="normal", py=False) -> Arg:
    """A differentiated argument of `shape` from `domain` (a key of DOMAINS)."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown example domain {domain!r}")
    return Arg(None if py else tuple(shape), domain)


def ex(*args, loss=None, hvp=True, rtol=1e-6, **kwargs) -> Example:
    return Example(tuple(args), kwargs, loss, hvp, rtol)


def unary(domain="normal", shapes=((3, 4), (), (5,)), **options) -> list:
    """The variants of a one-input elementwise entry: a matrix, a 0-d array, a vector."""
    return [ex(arg(*s, domain=domain), **options) for s in shapes]


def binary(first="normal", second="normal", **options) -> list:
    """The variants of a two-input elementwise entry: broadcast rows, equal shapes, a scalar."""
    return [
        ex(arg(3, 4, domain=first), arg(4, domain=second), **options),
        ex(arg(2, 3, domain=first), arg(2, 3, domain=second), **options),
        ex(arg(3, domain=first), arg(domain=second), **options),
    ]


def _spd(r, shape):
    m = r.normal(size=shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _well_conditioned(r, shape):
    return 0.5 * r.normal(size=shape) + 2.0 * np.eye(shape[-1])


def _off_integers(r, shape):
    return np.floor(r.uniform(-3, 3, size=shape)) + r.uniform(0.1, 0.9, size=shape)


def _away_from_zero(r, shape):
    return r.choice([-1.0, 1.0], size=shape) * r.uniform(0.3, 2.0, size=shape)


def _simplex(r, shape):
    p = r.uniform(0.5, 2.0, size=shape)
    return p / p.sum(axis=0)


def _banded(r, shape):
    # a band matrix's storage for solve_banded with as many diagonals below as above (the
    # middle row the diagonal), diagonally dominant
    ab = r.uniform(-0.5, 0.5, size=shape)
    ab[shape[0] // 2] += 3.0
    return ab


def _lower(r, shape):
    return np.tril(r.normal(size=shape)) + 2.0 * np.eye(shape[-1])


# domain -> (rng, shape) -> float64 array: where the entries using it are smooth
DOMAINS = {
    "normal": lambda r, s: r.normal(size=s),
    "positive": lambda r, s: r.uniform(0.5, 2.0, size=s),
    "unit": lambda r, s: r.uniform(-0.8, 0.8, size=s),
    "prob": lambda r, s: r.uniform(0.15, 0.85, size=s),
    "above_one": lambda r, s: r.uniform(1.5, 3.0, size=s),
    "large": lambda r, s: r.uniform(2.0, 5.0, size=s),
    "off_integers": _off_integers,
    "away_from_zero": _away_from_zero,
    "spd": _spd,
    "well": _well_conditioned,
    "lower": _lower,
    "banded": _banded,
    "simplex": _simplex,
}


def draw(spec: Arg, r) -> object:
    """The value of a differentiated argument (a Python float where spec.shape is None)."""
    value = DOMAINS[spec.domain](r, () if spec.shape is None else spec.shape)
    return float(value) if spec.shape is None else np.asarray(value, dtype=np.float64)
