"""autograd's `autograd.misc.fixed_points.fixed_point`, for code moving from autograd.

`fixed_point(f, a, x0, distance, tol)` iterates `x <- f(a)(x)` from `x0` until
`distance(x, x_prev) <= tol` and returns the fixed point x*. It is a
`sourcegrad.extend.primitive`: the iterations are not differentiated. Its gradient with
respect to `a` comes from the implicit function theorem: at x* = f(a)(x*),
dL/da = (df/da)^T w with w = g + (df/dx)^T w, and w is found by the same iteration
(a fixed point of its own, from zeros, to the same tolerance), the two VJPs made by
`sourcegrad.vjp` of `f`. f, distance, x0 and tol get no gradient (as in autograd). The
iteration converges where f(a) is a contraction near x* (as the forward one does). A second
derivative differentiates that VJP (traced, with the generated code of its `sourcegrad.vjp`
run on traced values): like autograd's, it is the implicit function's to within the
iterations' tolerance, not the derivative of the iterations themselves.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..api import vjp
from ..extend import defvjp, primitive

__all__ = ["fixed_point"]


@primitive
def fixed_point(f: Callable, a: Any, x0: Any, distance: Callable, tol: float) -> Any:
    """Iterate `x <- f(a)(x)` from x0 until `distance(x, x_prev) <= tol`; return x."""
    step = f(a)
    x, x_prev = step(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = step(x), x
    return x


@functools.lru_cache(maxsize=64)
def _applied(f: Callable) -> Callable:
    """`(a, x) -> f(a)(x)`: one step of the iteration as a function of both (one per f:
    its compiled VJP is kept)."""

    def step(a, x):
        return f(a)(x)

    return step


def _fixed_point_vjp(ans: Any, f: Callable, a: Any, x0: Any, distance: Callable, tol: float):
    _, pullback = vjp(_applied(f), wrt=(0, 1))(a, ans)

    def vjp_a(g):
        # w = g + (df/dx)^T w, iterated from zeros to the forward pass's tolerance
        w = np.zeros_like(np.asarray(ans, dtype=float)) + 0.0
        w_prev = None
        while w_prev is None or distance(w, w_prev) > tol:
            w, w_prev = g + pullback(w)[1], w
        return _like(pullback(w)[0], a)

    return vjp_a


def _like(value: Any, a: Any) -> Any:
    """The VJP as autograd gives it: a float for a float."""
    if isinstance(a, float) and np.ndim(value) == 0:
        return float(value)
    return value


defvjp(fixed_point, None, _fixed_point_vjp, None, None, None)
