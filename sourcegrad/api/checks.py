"""Checking a compiled gradient against central finite differences.

`numeric_grad(fn, args, pos)` differentiates by central differences in float64 (each
step scaled to the input's magnitude; parameter trees leaf by leaf); `check_grad` compares
the compiled gradient with it and raises `GradientCheckError` naming the argument (and the
leaf's path) where they differ, with the same random draws on every call.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import errors
from ..compiler import generators_of, same_draws
from .. import trees
from .arguments import Wrt
from .gradient import Gradient


def check_grad(
    fn: Callable[..., Any],
    *args: Any,
    wrt: Wrt = 0,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> float:
    """Compare the compiled gradient with central finite differences; return the max error.

    Raises `GradientCheckError` when any component differs by more than
    `atol + rtol * |numeric|` (after scaling the step for the input's magnitude).
    Otherwise returns the worst component's error as a fraction of that tolerance:
    a float of at most 1.0.
    """
    g = Gradient(fn, wrt)
    with same_draws(generators_of(fn)) as again:  # every call the same sample
        analytic = g(*args)
        analytic = analytic if isinstance(analytic, tuple) and not g._single else (analytic,)
        again()
        numerics = [numeric_grad(fn, args, pos, eps, again) for pos in g.wrt]
    worst = 0.0
    for pos, ana, numeric in zip(g.wrt, analytic, numerics):
        # (a parameter tree is compared leaf by leaf, each named by its path)
        ana_leaves, treedef = trees.flatten(ana)
        labels = treedef.paths(f"argument {pos}")
        for label, ana, numeric in zip(labels, ana_leaves, trees.flatten(numeric)[0]):
            err = np.max(
                np.abs(np.asarray(ana) - numeric) / (atol + rtol * np.abs(numeric) + 1e-300),
                initial=0.0,
            )
            worst = max(worst, float(err))
            if not np.allclose(ana, numeric, rtol=rtol, atol=atol):
                raise GradientCheckError(
                    f"gradient of {fn.__name__} wrt {label} differs from central finite "
                    f"differences:\n  compiled: {np.asarray(ana)!r}\n  numeric:  {numeric!r}"
                )
    return worst


def numeric_grad(
    fn: Callable[..., Any],
    args: Sequence[Any],
    pos: int,
    eps: float = 1e-6,
    before_call: Optional[Callable[[], object]] = None,
) -> Any:
    """Central finite differences of scalar `fn` with respect to argument `pos` (float64);
    for a parameter tree, a tree of them (one per leaf). `before_call()` runs before each
    call of fn (check_grad puts random generators back)."""
    before_call = before_call or (lambda: None)
    x = args[pos]
    if trees.kind_of(x) != trees.LEAF:
        leaves, treedef = trees.flatten(x)

        def at(k):
            def moved(leaf):
                changed = list(leaves)
                changed[k] = leaf
                return fn(*args[:pos], treedef.unflatten(changed), *args[pos + 1 :])

            return moved

        return treedef.unflatten(
            [numeric_grad(at(k), (leaf,), 0, eps, before_call) for k, leaf in enumerate(leaves)]
        )
    base = np.array(x, dtype=np.float64)
    out = np.zeros_like(base)
    flat, out_flat = base.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        step = eps * max(1.0, abs(flat[i]))
        orig = flat[i]
        flat[i] = orig + step
        before_call()
        hi = fn(*_replace(args, pos, base, x))
        flat[i] = orig - step
        before_call()
        lo = fn(*_replace(args, pos, base, x))
        flat[i] = orig
        # (an output of one element, shape (1,) or (1, 1), is differentiated as its element)
        out_flat[i] = (_element(hi) - _element(lo)) / (2 * step)
    return float(out) if isinstance(x, float) else out


def _element(value) -> float:
    """A scalar output, or the one element of an array output, as a float."""
    return float(value) if np.ndim(value) == 0 else float(np.asarray(value).item())


def _replace(args, pos, value, like):
    v = float(value) if isinstance(like, float) else value.copy()
    return tuple(v if i == pos else a for i, a in enumerate(args))


class GradientCheckError(errors.SourcegradError, AssertionError):
    """The compiled gradient disagrees with finite differences."""
