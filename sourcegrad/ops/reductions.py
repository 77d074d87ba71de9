"""Reductions: sum, mean, prod, max/min, var, std, cumsum, cumprod, each with its forward mode."""

from __future__ import annotations

import numpy as np

from ..runtime import (
    cumprod_grad,
    cumprod_grad_jvp,
    cumprod_jvp,
    is_complex,
    max_grad,
    max_jvp,
    prod_grad,
    reduced_count,
    var_jvp,
)
from .examples import arg, ex
from .registry import Spelling, alias, defprimitive, defvjp, torch
from .registry import func as _func
from .registry import helper as _helper

# Reductions.
defvjp(
    "sum",
    np.sum,
    _func("sum"),
    lambda g, ans, x, axis=None, keepdims=False: np.broadcast_to(
        g if keepdims or axis is None else np.expand_dims(g, axis), x.shape
    ),
    kind="reduction",
    props={"linear_in_first"},
    method="sum",
    methods=("sum",),
    linear="joint",
    torch=torch("SumBackward0", "sum"),
    complex=True,
)
# (the mean of an empty array is nan, as numpy gives it; its gradient is empty: no 1 / 0)
defvjp(
    "mean",
    np.mean,
    _func("mean"),
    lambda g, ans, x, axis=None, keepdims=False: (
        np.broadcast_to(
            (g if keepdims or axis is None else np.expand_dims(g, axis))
            / (x.size if axis is None else reduced_count(x, axis)),
            x.shape,
        )
        if x.size
        else np.zeros_like(x)
    ),
    kind="reduction",
    props={"linear_in_first"},
    method="mean",
    methods=("mean",),
    linear="joint",
    torch=torch("MeanBackward0", "mean"),
    complex=True,
)
defvjp(
    "prod",
    np.prod,
    _func("prod"),
    lambda g, ans, x, axis=None, keepdims=False: prod_grad(g, x, axis, keepdims),
    kind="reduction",
    method="prod",
    methods=("prod",),
    jvps=(
        lambda t, ans, x, axis=None, keepdims=False: np.sum(
            prod_grad(np.ones_like(ans), x, axis, keepdims) * t, axis=axis, keepdims=keepdims
        ),
    ),
    torch=torch("ProdBackward0", "prod"),
)
# max and min pick an element (numpy orders complex numbers by real, then imaginary part): a
# C-linear selection, so the rules hold for complex values as they are (autograd's convention;
# torch has no max of complex values). Ties share the gradient.
defvjp(
    "max",
    np.max,
    _func("max"),
    lambda g, ans, x, axis=None, keepdims=False: max_grad(g, ans, x, axis, keepdims),
    kind="reduction",
    method="max",
    methods=("max",),
    jvps=(lambda t, ans, x, axis=None, keepdims=False: max_jvp(t, ans, x, axis, keepdims),),
    torch=torch("MaxBackward1", "max"),
    props={"complex"},
)
alias(
    "amax",
    np.amax,
    _func("amax"),
    like="max",
    method="max",
    torch=torch("AmaxBackward0", "amax"),
    props={"complex"},
)
# (min borrows max's rules: max_grad picks by ans)
alias(
    "min",
    np.min,
    _func("min"),
    like="max",
    family="min",
    method="min",
    methods=("min",),
    torch=torch("MinBackward1", "min"),
    props={"complex"},
)
alias(
    "amin",
    np.amin,
    _func("amin"),
    like="max",
    family="min",
    method="min",
    torch=torch("AminBackward0", "amin"),
    props={"complex"},
)
# Over every element (axis None) with ddof >= N, var is inf (0 / 0: nan where all are equal), as
# numpy and torch give it, and its gradient is torch's (var_backward): g * inf, nan where an
# element is the mean; 2 |x - mean| / 0 is that. Over an axis torch divides by N - ddof as it
# is (a finite gradient for ddof > N), and so do these rules. std's follows var's.
# var and std of complex x are of |x - mean|: real. In torch's convention (ops/complex_values)
# the gradient is 2 (x - mean) / (N - ddof) as for real x, so the rules (its conjugate) take
# conj(x - mean), and the JVP is the real part of var_jvp's sum.
defvjp(
    "var",
    np.var,
    _func("var"),
    lambda g, ans, x, axis=None, ddof=0, keepdims=False: (
        (g if keepdims or axis is None else np.expand_dims(g, axis))
        * 2.0
        * (
            np.conj(x - np.mean(x, axis=axis, keepdims=True))
            if is_complex(x)
            else x - np.mean(x, axis=axis, keepdims=True)
        )
        / ((x.size if axis is None else reduced_count(x, axis)) - ddof)
        if axis is not None
        else (g * 2.0)
        * np.where(
            x.size > ddof,
            np.conj(x - np.mean(x)) if is_complex(x) else x - np.mean(x),
            np.abs(x - np.mean(x)),
        )
        / np.maximum(x.size - ddof, 0)
    ),
    kind="reduction",
    methods=("var",),
    jvps=(
        lambda t, ans, x, axis=None, ddof=0, keepdims=False: (
            np.real(var_jvp(t, np.conj(x), axis, ddof, keepdims))
            if is_complex(x)
            else var_jvp(t, x, axis, ddof, keepdims)
        ),
    ),
    torch=torch("VarBackward0", "var"),
    props={"complex"},
)
# Where a std is 0 (one value, or values all equal) its gradient is 0: central differences
# give 0 there (std(x + h e) = std(x - h e)), torch masks it to 0 (std_backward), and g / ans
# would be 0 / 0. `g * (ans != 0) / where(ans == 0, 1, ans)` is that 0, to every order (the
# mask is a constant), with no division by zero; a nan std (ddof >= n) stays nan.
defvjp(
    "std",
    np.std,
    _func("std"),
    lambda g, ans, x, axis=None, ddof=0, keepdims=False: (
        (
            g * (ans != 0) / np.where(ans == 0, 1.0, ans)
            if keepdims or axis is None
            else np.expand_dims(g * (ans != 0) / np.where(ans == 0, 1.0, ans), axis)
        )
        * (
            (
                np.conj(x - np.mean(x, axis=axis, keepdims=True))
                if is_complex(x)
                else x - np.mean(x, axis=axis, keepdims=True)
            )
            / ((x.size if axis is None else reduced_count(x, axis)) - ddof)
            if axis is not None
            else np.where(
                x.size > ddof,
                np.conj(x - np.mean(x)) if is_complex(x) else x - np.mean(x),
                np.abs(x - np.mean(x)),
            )
            / np.maximum(x.size - ddof, 0)
        )
    ),
    kind="reduction",
    methods=("std",),
    jvps=(
        lambda t, ans, x, axis=None, ddof=0, keepdims=False: (
            np.real(var_jvp(t, np.conj(x), axis, ddof, keepdims))
            * (ans != 0)
            / (2.0 * np.where(ans == 0, 1.0, ans))
            if is_complex(x)
            else var_jvp(t, x, axis, ddof, keepdims)
            * (ans != 0)
            / (2.0 * np.where(ans == 0, 1.0, ans))
        ),
    ),
    torch=torch("StdBackward0", "std"),
    props={"complex"},
)


# Cumulative sums and products. With axis None numpy works on x flattened: the adjoint is
# then reshaped back to x's shape. cumsum is linear; cumprod's VJP and JVP are exact where x
# holds zeros (runtime.cumprod_grad, runtime.cumprod_jvp).
defvjp(
    "cumsum",
    np.cumsum,
    _func("cumsum"),
    lambda g, ans, x, axis=None: (
        np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
        if axis is not None
        else np.reshape(np.flip(np.cumsum(np.flip(g))), x.shape)
    ),
    linear="joint",
    torch=torch("CumsumBackward0", "cumsum"),
    complex=True,
)
defvjp(
    "cumprod",
    np.cumprod,
    _func("cumprod"),
    lambda g, ans, x, axis=None: cumprod_grad(g, ans, x, axis),
    jvps=(lambda t, ans, x, axis=None: cumprod_jvp(t, ans, x, axis),),
    torch=torch("CumprodBackward0", "cumprod"),
)
# cumprod_grad(h, cum, x) = J(x)^T h is linear in h (its transpose: cumprod's JVP), and a
# function of x through J (its derivative: cumprod's Hessians contracted with h, symmetric,
# so the VJP and the JVP in x are one call, runtime.cumprod_grad_jvp); cum is cumprod(x), a
# shortcut the adjoint reads, whose change is counted in x's: Hessians and hvp of cumprod
defvjp(
    "cumprod_grad",
    cumprod_grad,
    _helper("cumprod_grad"),
    lambda g, ans, h, cum, x, axis: cumprod_jvp(g, cum, x, axis),
    None,
    lambda g, ans, h, cum, x, axis: cumprod_grad_jvp(h, x, g, axis),
    jvps=(
        lambda t, ans, h, cum, x, axis: cumprod_grad(t, cum, x, axis),
        lambda t, ans, h, cum, x, axis: np.zeros_like(ans),
        lambda t, ans, h, cum, x, axis: cumprod_grad_jvp(h, x, t, axis),
    ),
)
defprimitive("cumprod_grad_jvp", cumprod_grad_jvp, _helper("cumprod_grad_jvp"))
defprimitive("cumprod_jvp", cumprod_jvp, _helper("cumprod_jvp"))


# Example inputs for the registry's test grid (ops/examples.py): every axis form, keepdims.
def _reduction_variants(domain="normal", ddof=False):
    variants = [
        ex(arg(3, 4, domain=domain)),
        ex(arg(3, 4, domain=domain), axis=0),
        ex(arg(2, 3, 4, domain=domain), axis=(0, 2), keepdims=True),
        ex(arg(3, 4, domain=domain), axis=-1, keepdims=True),
        ex(arg(5, domain=domain)),
    ]
    if ddof:
        variants.append(ex(arg(3, 4, domain=domain), axis=1, ddof=1))
    return variants


EXAMPLES = {
    **{_name: _reduction_variants() for _name in ("sum", "mean", "max", "amax", "min", "amin")},
    "prod": _reduction_variants("away_from_zero"),
    "var": _reduction_variants(ddof=True),
    "std": _reduction_variants(ddof=True),
    "cumsum": [ex(arg(3, 4)), ex(arg(3, 4), axis=0), ex(arg(2, 3, 4), axis=-1)],
    # (a second derivative through cumprod refuses, loudly: tests/compiler/ops/test_cumprod.py)
    "cumprod": [ex(arg(3, 4), hvp=False), ex(arg(3, 4), axis=0, hvp=False)],
}


# --- torch's scans numpy has no function for: logcumsumexp ------------------------------------


def logcumsumexp(x, axis):
    """torch.logcumsumexp: log(cumsum(exp(x))) along `axis`, without overflow (a running
    logaddexp). An empty axis gives an empty result."""
    return np.logaddexp.accumulate(x, axis=axis)


# d ans_j / d x_i = exp(x_i - ans_j) for j >= i, at most 1 (ans_j >= x_i), 0 for j < i. The
# rules form that matrix per slice, (..., i, j) with the axis moved last (x_i - ans_j set to 0
# before exp where j < i, so nothing overflows, then masked: a selection, smooth to every
# order, where log-domain sums of the positive and negative parts of g give NaN second
# derivatives at g's zeros). It costs n * n per slice: no long scans.
defvjp(
    "logcumsumexp",
    logcumsumexp,
    Spelling("module", "sourcegrad.ops.reductions.logcumsumexp"),
    lambda g, ans, x, axis: np.moveaxis(
        np.sum(
            np.exp(
                np.where(
                    np.triu(
                        np.ones_like(
                            np.expand_dims(np.moveaxis(x, axis, -1), -1)
                            - np.expand_dims(np.moveaxis(ans, axis, -1), -2)
                        )
                    )
                    > 0,
                    np.expand_dims(np.moveaxis(x, axis, -1), -1)
                    - np.expand_dims(np.moveaxis(ans, axis, -1), -2),
                    0.0,
                )
            )
            * np.triu(
                np.ones_like(
                    np.expand_dims(np.moveaxis(x, axis, -1), -1)
                    - np.expand_dims(np.moveaxis(ans, axis, -1), -2)
                )
            )
            * np.expand_dims(np.moveaxis(g, axis, -1), -2),
            axis=-1,
        ),
        -1,
        axis,
    ),
    jvps=(
        lambda t, ans, x, axis: np.moveaxis(
            np.sum(
                np.exp(
                    np.where(
                        np.triu(
                            np.ones_like(
                                np.expand_dims(np.moveaxis(x, axis, -1), -1)
                                - np.expand_dims(np.moveaxis(ans, axis, -1), -2)
                            )
                        )
                        > 0,
                        np.expand_dims(np.moveaxis(x, axis, -1), -1)
                        - np.expand_dims(np.moveaxis(ans, axis, -1), -2),
                        0.0,
                    )
                )
                * np.triu(
                    np.ones_like(
                        np.expand_dims(np.moveaxis(x, axis, -1), -1)
                        - np.expand_dims(np.moveaxis(ans, axis, -1), -2)
                    )
                )
                * np.expand_dims(np.moveaxis(t, axis, -1), -1),
                axis=-2,
            ),
            -1,
            axis,
        ),
    ),
    torch=torch("LogcumsumexpBackward0", "logcumsumexp", numpy=False),
)
EXAMPLES.update({"logcumsumexp": [ex(arg(3, 4), 1), ex(arg(5), 0), ex(arg(2, 3, 4), 0)]})
