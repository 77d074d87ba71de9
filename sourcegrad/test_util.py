"""HIPS autograd's `autograd.test_util.check_grads`, with sourcegrad's derivatives.

`check_grads(f, argnum=0, modes=("fwd", "rev"), order=2)(*args)` checks f's derivatives
with respect to argument `argnum` (an int or a tuple of them, each checked) at `args`
against central finite differences along random directions, as autograd's does, and
returns None; a disagreement raises `GradientCheckError` (an AssertionError) saying the
analytic and the numeric number. What is checked, for a direction `v` shaped like the
argument and a cotangent `u` shaped like f's output (floats or arrays):

* "rev", order 1: `<v, vjp(f)(x)(u)>` against `<u, (f(x + eps/2 v) - f(x - eps/2 v)) / eps>`;
* "fwd", order 1: `jvp(f)(x, v)` against the same difference;
* order 2: the derivative of `x -> vjp(f)(x)(u)` (the gradient of `<u, f(x)>`), checked in
  the same way: by its own VJP (reverse over reverse) for "rev", by its JVP (forward over
  reverse) for "fwd" (autograd's "fwd" checks forward over forward; sourcegrad's forward
  mode does not differentiate a JVP again). Higher orders repeat it.

The directions come from a generator of their own (seeded), so the caller's
`np.random` sequence is left as it was. Tolerances are autograd's: an absolute or a
relative difference of at most 1e-6, with a step of 1e-6.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from .api import Gradient, GradientCheckError, jvp, vjp

__all__ = ["check_grads"]

EPS = 1e-6
TOL = 1e-6
RTOL = 1e-6


def check_grads(
    f: Callable[..., Any],
    argnum: Union[int, Sequence[int]] = 0,
    modes: Sequence[str] = ("fwd", "rev"),
    order: int = 2,
) -> Callable[..., None]:
    """autograd's `check_grads(f, modes=[...], order=2)(*args)`: see the module docstring."""
    unknown = [m for m in modes if m not in ("fwd", "rev")]
    if unknown:
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', not {unknown}")
    if order < 1:
        raise ValueError(f"check_grads: order must be at least 1, not {order}")

    def checked(*args: Any) -> None:
        rng = np.random.RandomState(0)
        for pos in (argnum,) if isinstance(argnum, int) else tuple(argnum):
            x = args[pos]
            _float_argument(f, pos, x)

            at = _at(f, args, pos)
            _check(at, x, modes, order, rng, f"{at.__name__} wrt argument {pos}")

    return checked


def _at(f: Callable, args: tuple, pos: int) -> Callable:
    """f as a function of its argument `pos`, the others fixed at `args`."""
    before, after = args[:pos], args[pos + 1 :]

    def at(value):
        return f(*before, value, *after)

    at.__name__ = getattr(f, "__name__", "f")
    return at


def _check(fn: Callable, x: Any, modes: Sequence[str], order: int, rng, label: str) -> None:
    y = fn(x)
    v = _like(x, rng)
    u = _like(y, rng)
    numeric = _inner(u, _numeric_jvp(fn, x, v))
    if "rev" in modes:
        _, pullback = vjp(fn)(x)
        _close(_inner(v, pullback(u)), numeric, f"reverse mode (VJP) of {label}")
    if "fwd" in modes:
        _, tangent = jvp(fn, (x,), (v,))
        _close(_inner(u, tangent), numeric, f"forward mode (JVP) of {label}")
    if order > 1:
        # the gradient of <u, f(x)>: the VJP of u as a function of x, differentiated again
        def paired(z):
            return np.sum(u * fn(z))

        paired.__name__ = f"vjp_{getattr(fn, '__name__', 'f')}"
        _check(Gradient(paired), x, modes, order - 1, rng, f"the VJP of {label}")


def _float_argument(f: Callable, pos: int, x: Any) -> None:
    if not (
        isinstance(x, float)
        or (isinstance(x, (np.ndarray, np.generic)) and np.issubdtype(x.dtype, np.floating))
    ):
        raise TypeError(
            f"check_grads({getattr(f, '__name__', 'f')}): argument {pos} is "
            f"{type(x).__name__}{'' if not hasattr(x, 'dtype') else ' of ' + str(x.dtype)}; "
            "sourcegrad's check_grads takes a float or a float array (flatten a parameter "
            "tree first: sourcegrad.misc.flatten_func)"
        )


def _like(value: Any, rng) -> Any:
    """A random direction shaped like `value` (a float for a float)."""
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return float(rng.randn())
    return rng.randn(*np.shape(value))


def _numeric_jvp(fn: Callable, x: Any, v: Any) -> Any:
    plus = np.asarray(fn(x + v * (EPS / 2)), dtype=float)
    minus = np.asarray(fn(x - v * (EPS / 2)), dtype=float)
    return (plus - minus) / EPS


def _inner(a: Any, b: Any) -> float:
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def _close(exact: float, numeric: float, what: str) -> None:
    diff = abs(exact - numeric)
    if diff < TOL or diff / (abs(exact + numeric) + 1e-300) < RTOL:
        return
    raise GradientCheckError(
        f"check_grads: the {what} differs from central finite differences along a random "
        f"direction:\n  analytic: {exact!r}\n  numeric:  {numeric!r}"
    )
