"""The ops torch has and numpy lacks: activations, softmax, losses, addmm, embedding,
in-place writes.

Their forward functions (numpy in, numpy out, behaving like torch's ops: a stable
sigmoid, softmax along one axis, ...) live here too; generated code calls them as
`sourcegrad.ops.nn.<name>`.

Why one module: generated code names one module for all of them (`sourcegrad.ops.nn`), and
the fused entries (gelu, the float32 LSTM layer and its backward through time) share the
forward helpers their rules call.

Some eager nodes keep a value of their forward for their backward as a static keyword of the
entry's VJP (gelu's `cdf`): the compiler never passes it (its default, None, computes the value
again), and a VJP run on Tensors (create_graph) computes it again from its input, so that its
dependence on the input is recorded.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ..runtime import array_module, expand_reduced, max_grad, max_jvp, unbroadcast, unindex
from .examples import arg, ex
from .registry import Spelling, defnondiff, defprimitive, defvjp, torch


def _spelled(name):
    return Spelling("module", f"sourcegrad.ops.nn.{name}")


# --- forward functions (numpy in, numpy out) -------------------------------------------------


def relu(x):
    return np.maximum(x, 0)


_SAME_SIZE_INTS = {2: np.int16, 4: np.int32, 8: np.int64}


def relu_grad(grad, result):
    """relu's backward for the gradient `grad` of its `result`, np.where(result <= 0, 0,
    grad): as torch's threshold_backward, an inf or nan g where x <= 0
    gives 0 (sqrt(relu(x)) has gradient 0 at x <= 0, not nan), and a nan x passes g on. For a
    float array, g's bits and-ed with a mask of all ones or all zeros: np.where's branch per
    element is mispredicted on a layer's mixed signs (a (256, 256) gradient: 570 us; this:
    45 us), and the bits it keeps are g's own."""
    ints = _SAME_SIZE_INTS.get(getattr(grad, "itemsize", 0))
    if (
        ints is None
        or type(grad) is not np.ndarray
        or type(result) is not np.ndarray
        or grad.dtype.kind != "f"
        or grad.shape != result.shape
    ):
        return np.where(result <= 0, 0, grad)
    mask = np.less_equal(result, 0).view(np.int8).astype(ints)  # 1 where zeroed, else 0
    mask -= 1  # 0 where zeroed, all ones where grad passes
    mask &= grad.view(ints)
    return mask.view(grad.dtype)


def sigmoid(x):
    # exp of a non-positive number never overflows
    e = np.exp(-np.abs(x))
    out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    if out.dtype.kind == "f":
        # torch computes 1 / (1 + exp(-x)): 0 where exp(-x) overflows (x below -88.72 in
        # float32, -709.78 in float64), not the subnormal e / (1 + e). A BCE of a saturated
        # sigmoid then clamps its log at -100 as torch's does (a loss of 100, not 90, at -90).
        # An array's selection only where its minimum is below the bound: one reduction, not
        # a comparison, a selection and a cast on every call (an LSTM's gates: ~3 us a step)
        low = -_LOG_MAX[out.dtype.char]
        if type(x) is not np.ndarray or not x.size or _fmin_reduce(x, axis=None) < low:
            out = np.where(x < low, 0, out).astype(out.dtype, copy=False)
    return out


_LOG_MAX = {c: float(np.log(np.finfo(c).max)) for c in "efdg"}


# softmax, logsumexp and log_softmax write their float arrays in place (x - max, then its
# exp, into one array); an integer x takes numpy's own result dtypes through the plain formulas


def softmax(x, axis):
    if not _of_floats(x):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    c = _common_shift(x, axis)
    if c is not None:
        e = np.subtract(x, c)
        np.exp(e, out=e)
        sums = _sum_keepdims(e, axis)
        if np.min(sums) >= _SHIFT_FLOOR:
            e /= sums
            return e
    e = np.subtract(x, _max_keepdims(x, axis))
    np.exp(e, out=e)
    e /= _sum_keepdims(e, axis)
    return e


def logsumexp(x, axis=None, keepdims=False):
    m = _max_keepdims(x, axis)
    m = np.where(np.isfinite(m), m, 0)
    if not _of_floats(x):
        e = np.exp(x - m)
    else:
        e = np.subtract(x, m)
        np.exp(e, out=e)
    out = np.log(_sum_keepdims(e, axis)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def log_softmax(x, axis):
    if not _of_floats(x):
        return x - logsumexp(x, axis=axis, keepdims=True)
    return log_softmax_and_softmax(x, axis, False)[0]


def log_softmax_and_softmax(x, axis, with_softmax=True):
    """(log_softmax(x, axis), softmax(x, axis) or None) of a float array, from one exp: a
    loss's forward keeps the softmax for its backward (softmax - one-hot), which otherwise
    takes the exp of the log-probabilities again (the largest cost of a small model's loss).
    The log-probabilities are log_softmax's own, bit for bit; the softmax is exp(shifted)
    over its sum, which may differ from exp(log_softmax) in the last bit."""
    # (x - max) - log(sum(exp(x - max))), as torch's kernel rounds it
    c = _common_shift(x, axis)
    if c is not None:
        shifted = np.subtract(x, c)
        e = np.exp(shifted)
        sums = _sum_keepdims(e, axis)
        if np.min(sums) >= _SHIFT_FLOOR:
            shifted -= np.log(sums)
            return shifted, (np.divide(e, sums, out=e) if with_softmax else None)
    m = _max_keepdims(x, axis)
    shifted = np.subtract(x, np.where(np.isfinite(m), m, 0))
    e = np.exp(shifted)
    sums = _sum_keepdims(e, axis)
    shifted -= np.log(sums)
    # (a row of -inf only: 0 / 0, NaN as torch's, with numpy's warning as log(0)'s above)
    return shifted, (np.divide(e, sums, out=e) if with_softmax else None)


# softmax and log_softmax subtract a shift from x before exp, so that exp cannot overflow:
# torch's, each row's max. Over a short last axis that max costs more than the rest of the op
# (an attention's 1024 rows of 32 keys: 26 us of 69, see _max_keepdims), and the whole
# array's max (one reduction: 4 us) serves as well wherever each row's own max is near it:
# the results differ by rounding (each element's exp and the row's sum have the same relative
# error whatever the shift). A row's sum is at least exp(its max - the array's max), so rows
# whose max lies more than 20 below (their small elements would lose precision as
# subnormals), rows of -inf only and NaNs are all caught by one check of the sums, and then
# the rows' maxima are taken after all.
_SHIFT_FLOOR = math.exp(-20.0)


def _common_shift(x, axis):
    """The array's max, where softmax may shift every row by it (see above): a finite max of
    a float array with many short rows along its last axis; None where each row's own max is
    taken."""
    if not (
        _is_last_axis(x, axis)
        and x.dtype in _BLAS_DTYPES
        and x.ndim >= 2
        and x.size >= 64 * x.shape[-1] > 0
    ):
        return None
    c = _maximum_reduce(x, axis=None)  # (np.max's Python wrapper costs more than this max)
    return c if np.isfinite(c) else None


def _of_floats(x):
    return getattr(x, "dtype", np.dtype(np.int64)).kind in "fc"


def _is_last_axis(x, axis):
    return type(x) is np.ndarray and x.ndim > 0 and axis in (-1, x.ndim - 1)


def _max_keepdims(x, axis):
    """np.max(x, axis, keepdims=True). numpy's reduction over a contiguous last axis costs
    ~100 ns a row whatever the row's length: short rows (an attention's softmax over 32 keys,
    1024 rows: 115 us) are reduced from a transposed copy instead, one vectorised pass per
    element of a row (~25 us)."""
    if _is_last_axis(x, axis) and 0 < x.shape[-1] <= 48 and x.size >= 64 * x.shape[-1]:
        n = x.shape[-1]
        rows = x.reshape(-1, n).T.copy()
        return _maximum_reduce(rows, axis=0).reshape(x.shape[:-1] + (1,))
    if type(x) is np.ndarray:  # (np.max's wrapper costs ~3 us, more than a small max)
        return _maximum_reduce(x, axis=axis, keepdims=True)
    return np.max(x, axis=axis, keepdims=True)


_maximum_reduce = np.maximum.reduce
_fmin_reduce = np.fmin.reduce  # (NaN-ignoring: a NaN hides no element below a bound)


def _sum_keepdims(x, axis):
    """np.sum(x, axis, keepdims=True); over the last axis of a float32/64 array, a product
    with ones (BLAS: a tenth of numpy's reduction's time on short rows, see _max_keepdims)."""
    if _is_last_axis(x, axis) and x.dtype in _BLAS_DTYPES and x.size:
        return np.matmul(x, np.ones(x.shape[-1], x.dtype))[..., None]
    return np.sum(x, axis=axis, keepdims=True)


_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def rsqrt(x):
    return 1 / np.sqrt(x)


_erf = np.frompyfunc(math.erf, 1, 1)
# scipy's ufunc where installed: math.erf element by element is ~100x slower (gelu at a GPT's
# size: 22 ms a call). Importing scipy costs ~0.5 s once and importing sourcegrad never does
# it, so scipy is used where it is already imported, or imported for an array large enough
# to pay for it at once
_SCIPY_ERF_SIZE = 4096
_SCIPY: dict = {}


def _scipy_erf(size):
    """scipy.special.erf, or None (scipy not installed, or not worth importing yet)."""
    if "erf" not in _SCIPY:
        if "scipy.special" not in sys.modules and size < _SCIPY_ERF_SIZE:
            return None
        try:
            from scipy.special import erf as scipy_erf
        except ImportError:  # pragma: no cover - scipy is optional
            scipy_erf = None
        _SCIPY["erf"] = scipy_erf
    return _SCIPY["erf"]


def erf(x):
    if type(x) is not np.ndarray and hasattr(x, "__cuda_array_interface__"):
        from cupyx.scipy.special import erf as cupy_erf  # a CuPy array: its own kernel

        return cupy_erf(x).astype(np.result_type(x.dtype, np.float32))
    dtype = np.result_type(x, np.float32)
    scipy_erf = _scipy_erf(np.size(x)) if dtype.kind == "f" else None
    if scipy_erf is not None:
        return np.asarray(scipy_erf(x), dtype=dtype)
    return _erf(x).astype(dtype)


_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
# erfc(z) = t exp(-z^2) R(t), t = 1 / (1 + z/2), for z >= 0: R's coefficients, highest first,
# halved (the CDF at -|x| is erfc(|x| / sqrt 2) / 2). A weighted least-squares fit (degree 8,
# in Chebyshev polynomials of t, reweighted towards the minimax) of scipy's erfcx(z) / t over
# t in (0, 1]: relative error under 4.3e-8 for every z >= 0, below float32's half ulp (6e-8),
# which the float32 arithmetic evaluating it is limited by anyway. (Degree 10 gave 2e-8 for
# four passes more over the array. Numerical Recipes' erfcc, t exp(-z^2 + P(t)), is as precise
# but takes the exp of P(t) too: here exp(-z^2) = exp(-x^2 / 2) is the normal density's own,
# which gelu's slope reuses.)
_HALF_ERFCX_T = (
    -2.9519032878e-02,
    1.4221188911e-01,
    -2.4344289936e-01,
    1.3885322570e-01,
    -1.3188056030e-02,
    1.0129038291e-01,
    1.2156536382e-01,
    1.4118578933e-01,
    1.4104331603e-01,
)
# t = 1 / (1 + |x| / (2 sqrt 2)) = _T_SHIFT / (_T_SHIFT + |x|): two passes over x, not three. A
# Python float: an np.float64 scalar would make numpy compute the division in float64.
_T_SHIFT = 2.0 * math.sqrt(2.0)


def _normal_cdf32(x):
    """normal_cdf of a float32 array in float32 arithmetic: `_normal_cdf32_and_gauss`'s first."""
    return _normal_cdf32_and_gauss(x)[0]


def _normal_cdf32_and_gauss(x):
    """(normal_cdf(x), exp(-x^2 / 2)) of a float32 array in float32 arithmetic (a tenth of
    scipy's erf's time), from erfc of |x|, so that both tails keep their relative precision.
    Three arrays, each written in place from then on: an array of a few hundred kB is a
    fresh mmap (and its page faults) each time malloc is asked for one, which cost more
    than the arithmetic. Every step is one pass of a ufunc over the array (numpy has no
    fused kernel): fewer steps is the whole of its speed."""
    gauss = np.multiply(x, x)
    gauss *= -0.5
    np.exp(gauss, out=gauss)  # exp(-x^2 / 2) = exp(-z^2), z = |x| / sqrt 2
    t = np.abs(x)
    t += _T_SHIFT
    np.divide(_T_SHIFT, t, out=t)  # (the same numbers as np.reciprocal's, in ~60% of its time)
    p = np.multiply(t, _HALF_ERFCX_T[0])
    for c in _HALF_ERFCX_T[1:]:
        p += c
        p *= t
    p *= gauss  # erfc(|x| / sqrt 2) / 2: the CDF at -|x|
    # p where x < 0 (exactly: the lower tail keeps its relative precision), 1 - p elsewhere,
    # without a branch per element (np.where's are mispredicted on mixed signs: ten times
    # the time of the rest): |[x >= 0] - p|, as p <= 1/2
    np.subtract(x >= 0, p, out=p)
    np.abs(p, out=p)
    return p, gauss


def normal_cdf(x):
    """The standard normal distribution's CDF, (1 + erf(x / sqrt 2)) / 2: gelu's factor."""
    if type(x) is np.ndarray and x.dtype == np.float32:
        return _normal_cdf32(x)
    if hasattr(type(x), "erf"):  # a Tensor (the eager backward under create_graph): its op
        return 0.5 * (1 + (x * _SQRT_HALF).erf())
    return 0.5 * (1 + erf(x * _SQRT_HALF))


def gelu(x):
    """torch's gelu (approximate='none'): x times the normal CDF of x, in x's dtype."""
    return gelu_of_cdf(x, normal_cdf(x))


def gelu_of_cdf(x, cdf):
    """gelu(x) from its factor cdf = normal_cdf(x) (the eager op keeps cdf for its backward)."""
    with np.errstate(invalid="ignore"):  # -inf times 0: nan, silently as torch
        out = x * cdf
    return out.astype(x.dtype, copy=False) if out.dtype != x.dtype else out


def gelu_and_slope(x):
    """(gelu(x), gelu_slope(x)) of a float32 array, from one exp: the normal density's
    exp(-x^2 / 2) that the CDF is made from gives the slope's x pdf(x) too (the eager
    forward keeps the slope for its backward, which then takes no exp of its own: that
    exp was most of gelu's backward)."""
    cdf, gauss = _normal_cdf32_and_gauss(x)
    out = gelu_of_cdf(x, cdf)
    with np.errstate(invalid="ignore"):  # an infinite x times its density 0: nan, as torch's
        gauss *= x
    gauss *= _INV_SQRT_2PI
    gauss += cdf  # cdf + x pdf(x)
    return out, gauss


def gelu_slope(x, cdf=None, slope=None):
    """d gelu / dx = normal_cdf(x) + x pdf(x). `cdf`: normal_cdf(x) as the eager forward
    computed it (a quarter of gelu's backward saved); `slope`: this very result, as the
    eager forward computed it (`gelu_and_slope`). Both are used for an array x only: a
    Tensor x (a backward run under create_graph) computes its own, so that its derivative
    is recorded."""
    if slope is not None and type(x) is np.ndarray:
        return slope
    if cdf is None or hasattr(type(x), "erf"):
        cdf = normal_cdf(x)
    if type(x) is not np.ndarray or type(cdf) is not np.ndarray or cdf.dtype != x.dtype:
        return cdf + x * np.exp(-0.5 * x * x) * _INV_SQRT_2PI
    # the same steps in one array (a GPT's gelu input is a few hundred kB: each new array is
    # a fresh mmap with its page faults)
    out = np.multiply(x, x)
    out *= -0.5
    np.exp(out, out=out)
    out *= x
    out *= _INV_SQRT_2PI
    out += cdf
    return out


def leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def vector_norm(x, ord=2, axis=None, keepdims=False):  # noqa: A002 - numpy's parameter name
    a = np.abs(x)
    if ord == 2:
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    if ord == 1:
        return np.sum(a, axis=axis, keepdims=keepdims)
    return np.sum(a**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def nll_index(shape, target, ignore_index=-100):
    """The advanced index that picks x[n, target[n]] (ignored targets point at class 0)."""
    t = np.where(target == ignore_index, 0, target)
    if len(shape) == 1:
        return (t,)
    return (np.arange(shape[0]), t)


def nll_scale(g, target, weight=None, reduction="mean", ignore_index=-100):
    """d loss / d x[n, target[n]]: -g times the target's weight, over the weight sum for mean."""
    valid = target != ignore_index
    t = np.where(valid, target, 0)
    w = (weight[t] if weight is not None else np.ones_like(t, dtype=np.float64)) * valid
    if reduction == "mean":
        # an ignored target's share is 0 (torch's kernel skips it), also where every target
        # is ignored and the weights' sum is 0 (0 / 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = w / np.sum(w)
        return -g * np.where(valid, share, 0.0)
    return -g * w


def nll_grad(g, x, target, weight=None, reduction="mean", ignore_index=-100):
    """d <g, nll_loss(x, target)> / d x: zeros but at each row's target, where it is
    -g, times the target's weight, over the weights' sum for a mean (`nll_scale`). Each row
    picks one class once, so a plain assignment writes them, for arrays (np.add.at's
    accumulation in `unindex`, which Tensors under create_graph take, costs ~5x as much)."""
    index = nll_index(np.shape(x), target, ignore_index)
    if type(x) is not np.ndarray or (type(g) is not np.ndarray and not np.isscalar(g)):
        return unindex(nll_scale(g, target, weight, reduction, ignore_index), x, index)
    out = np.zeros(x.shape, x.dtype)
    if weight is None and reduction != "none" and not np.any(target == ignore_index):
        # every target counts, each with weight one: -(g / N) as torch's kernel rounds it
        out[index] = -(g / x.dtype.type(np.size(target))) if reduction == "mean" else -g
    else:  # (an ignored row's entry stays 0, as torch's, whatever g is)
        scale = nll_scale(g, target, weight, reduction, ignore_index)
        out[index] = np.where(target != ignore_index, scale, 0)
    return out


def nll_loss(x, target, weight=None, reduction="mean", ignore_index=-100):
    if (
        weight is None
        and reduction != "none"
        and type(x) is np.ndarray
        and not np.any(target == ignore_index)
    ):  # every target counts, each with weight one: the sum of the picked (a third the work)
        index = (target,) if x.ndim == 1 else (np.arange(x.shape[0]), target)
        total = -np.sum(x[index])
        return total / x.dtype.type(np.size(target)) if reduction == "mean" else total
    return nll_of_picked(
        x, x[nll_index(np.shape(x), target, ignore_index)], target, weight, reduction, ignore_index
    )


def nll_of_picked(x, picked, target, weight, reduction, ignore_index):
    """The negative log-likelihood of the log-probabilities `picked` from x at the targets
    (nll_loss's and nll_loss2d's: they differ only in how they pick)."""
    valid = target != ignore_index
    t = np.where(valid, target, 0)
    w = (weight[t] if weight is not None else np.ones_like(t, dtype=x.dtype)) * valid
    losses = -picked * w.astype(x.dtype)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return np.sum(losses)
    return np.sum(losses) / np.sum(w).astype(x.dtype)


def mse_loss(x, y, reduction="mean"):
    d = (x - y) * (x - y)
    if reduction == "none":
        return d
    return np.sum(d) if reduction == "sum" else np.mean(d)


def embedding(weight, indices, padding_idx=None, scale_grad_by_freq=False):
    """weight's rows at `indices` (F.embedding; padding_idx and scale_grad_by_freq only
    change the gradient)."""
    return weight[indices]


def embedding_grad(g, zeros, indices, padding_idx=None, scale_grad_by_freq=False):
    """d <g, weight[indices]> / d weight, given `zeros` shaped and typed as the weight: g's
    rows added into their index's row, none into padding_idx's (torch's
    EmbeddingBackward0). For float arrays, a one-hot matrix times g's rows (BLAS: a third of
    np.add.at's or bincount's time at a language model's sizes), where the one-hot matrix
    is no larger than a few times g; otherwise `unindex` (arrays, or Tensors under
    create_graph)."""
    n = np.shape(zeros)[0] if np.ndim(zeros) else 0
    if (
        type(g) is np.ndarray
        and type(zeros) is np.ndarray
        and g.dtype == zeros.dtype
        and g.dtype in _BLAS_DTYPES
        and zeros.ndim == 2
        and g.shape == np.shape(indices) + zeros.shape[1:]
        and n * np.size(indices) <= max(4 * g.size, 1 << 16)
    ):
        flat = np.reshape(indices, -1)
        onehot = np.zeros((n, flat.size), g.dtype)
        onehot[flat, np.arange(flat.size)] = 1
        out = onehot @ g.reshape(flat.size, -1)
    else:
        out = unindex(g, zeros, (indices,))
    if scale_grad_by_freq:
        out = _scaled_by_frequency(out, indices, n, np.ndim(zeros))
    if padding_idx is None:
        return out
    keep = np.ones((n,) + (1,) * (np.ndim(zeros) - 1), dtype=bool)
    keep[padding_idx] = False
    return np.where(keep, out, 0)


def _scaled_by_frequency(out, indices, n, ndim):
    """Each row of the weight's gradient divided by how often the batch used it (torch's
    scale_grad_by_freq: the same divisor for all of a row's contributions)."""
    counts = np.bincount(np.reshape(indices, -1), minlength=n)
    scale = (1.0 / np.maximum(counts, 1)).reshape((n,) + (1,) * (ndim - 1))
    if isinstance(out, np.ndarray):
        return out * scale.astype(out.dtype)
    return out * type(out)._make(scale.astype(out._data.dtype))  # (a Tensor: create_graph)


def put_mask(like, index):
    """1.0 everywhere except at `index` (what a non-accumulating index_put overwrites).

    Shaped like the array `like`, and made where it lives (numpy or CuPy)."""
    mask = np.ones_like(like)
    mask[index] = 0.0
    return mask


def index_put(x, values, index, accumulate=False):
    if hasattr(x, "__cuda_array_interface__"):  # a CuPy array: its own copy and add.at
        out = x.copy()  # (numpy refuses to hand it a tuple index)
        if accumulate:
            array_module(out).add.at(out, index, values)
        else:
            out[index] = values
        return out
    out = np.array(x, copy=True)
    if accumulate:
        np.add.at(out, index, values)
    else:
        out[index] = values
    return out


def addmm(bias, x, y):
    out = x @ y
    if (
        type(out) is np.ndarray
        and type(bias) is np.ndarray
        and bias.dtype == out.dtype
        and bias.shape == out.shape[out.ndim - bias.ndim :]
    ):  # the bias broadcasts into the product: added in place (one array of its size, not two)
        out += bias
        return out
    return bias + out


def add_alpha(x, y, alpha=1):
    return x + alpha * y


def sub_alpha(x, y, alpha=1):
    return x - alpha * y


def fill(x, value=0):
    return np.full_like(x, value)


def fill_tensor(x, value):
    return np.broadcast_to(value, np.shape(x)).astype(x.dtype)


def fmax(x, y):
    """torch.fmax's forward (numpy's): the larger, the other where one is NaN."""
    return np.fmax(x, y)


def fmin(x, y):
    return np.fmin(x, y)


def fmod(x, y):
    return np.fmod(x, y)


def div_rounding(x, y, rounding_mode="floor"):
    """torch.div with a rounding mode ("floor" or "trunc")."""
    if rounding_mode == "floor":
        return np.floor_divide(x, y)
    return np.trunc(np.true_divide(x, y))


def split(x, indices_or_sections, axis=0):
    return np.split(x, indices_or_sections, axis=axis)


# per thread (two threads' LSTM nodes never read each other's): the inputs of this thread's
# last run and what it computed, and the gradients its backward was last called with and
# the seven it gave
_LSTM = threading.local()


def _lstm_run(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse):
    """One LSTM layer in one direction over x (L, N, I), ATen's cell at each step: the
    outputs (L, N, H), and the gates (i, f, g, o after their activations), the cell states
    and their tanh of every step, for the backward (which then computes no tanh of its own).

    Each step writes into the run's arrays (no temporaries but one product): at an LSTM
    language model's sizes a step is a dozen small numpy calls, whose allocations cost as
    much as their arithmetic."""
    steps, hidden = x.shape[0], h0.shape[-1]
    # the input projection of every step as one matrix product (the steps folded into rows)
    projected = (x.reshape(-1, x.shape[-1]) @ w_ih.T).reshape(x.shape[:2] + (-1,))
    projected += b_ih + b_hh
    out = np.empty(x.shape[:2] + (hidden,), dtype=projected.dtype)
    gates = np.empty_like(projected)
    cells = np.empty_like(out)
    tanh_cells = np.empty_like(out)
    scale = np.full(4 * hidden, 0.5, dtype=projected.dtype)
    scale[2 * hidden : 3 * hidden] = 1
    offset = np.where(scale == 0.5, 0.5, 0).astype(projected.dtype)
    # sigmoid(a) = (1 + tanh(a / 2)) / 2: one tanh for the four gates, stable as it is. The
    # halving is folded into the projection and the recurrent weights (exact: a power of two)
    projected *= scale
    # (a row-major copy: a few rows times a transposed matrix is BLAS's slow case, ~2.5x here)
    w_hh_t = np.ascontiguousarray((w_hh * scale[:, None].astype(w_hh.dtype)).T)
    one_dtype = h0.dtype == w_hh.dtype == projected.dtype
    h, c = h0, c0
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        act = gates[t]
        if one_dtype:
            np.matmul(h, w_hh_t, out=act)
            act += projected[t]
        else:  # (the product in its own dtype first, as numpy promotes it)
            np.add(projected[t], h @ w_hh_t, out=act)
        np.tanh(act, out=act)
        act *= scale
        act += offset
        c = np.multiply(act[:, hidden : 2 * hidden], c, out=cells[t])
        c += act[:, :hidden] * act[:, 2 * hidden : 3 * hidden]
        tanh_c = np.tanh(c, out=tanh_cells[t])
        h = np.multiply(act[:, 3 * hidden :], tanh_c, out=out[t])
    # h_n and c_n are tensors of their own (the run's arrays stay as the backward reads them)
    return out, (h.copy() if steps else h), (c.copy() if steps else c), gates, cells, tanh_cells


def lstm_layer(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False):
    """An LSTM layer (one direction) as one op, torch's mkldnn_rnn_layer: (output, h_n, c_n).
    The run's gates and cell states stay at hand for its backward (the last run's only)."""
    run = _lstm_run(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
    _LSTM.run = ((x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse), run)
    return run[:3]


def lstm_layer_grads(g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False):
    """The gradients of lstm_layer's seven inputs, backpropagated through time (the forward run
    again for its gates). Each input's VJP asks for its own; the node's one list of output
    gradients `g` makes them one computation."""
    last = getattr(_LSTM, "grads", None)
    if last is not None and last[0] is g:
        return last[1]
    inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
    kept, run = getattr(_LSTM, "run", None) or (None, None)
    if kept is not None and all(a is b for a, b in zip(kept, inputs)):
        # the same arrays as the last run, not written since (the node checked their
        # versions): its gates
        out, _, _, gates, cells, tc = run
        _LSTM.run = None
    else:
        out, _, _, gates, cells, tc = _lstm_run(*inputs)
    steps, hidden = x.shape[0], h0.shape[-1]
    g_out, g_h, g_c = g
    dh = np.array(g_h, dtype=out.dtype)
    dc = np.array(g_c, dtype=out.dtype)
    # what each step's gradients are multiplied by, for all steps at once; the loop over
    # time keeps only the recurrence (dh, dc)
    i, f, gg, o = (gates[..., k * hidden : (k + 1) * hidden] for k in range(4))
    if reverse:
        c_prev = np.concatenate([cells[1:], c0[None]], axis=0)
    else:
        c_prev = np.concatenate([c0[None], cells[:-1]], axis=0)
    through_h = o * (1 - tc * tc)  # d c_t / d h_t's share
    to_gates = np.stack([gg * i * (1 - i), c_prev * f * (1 - f), i * (1 - gg * gg)], axis=-2)
    to_o = tc * o * (1 - o)
    dpre = np.empty_like(gates)
    shape3 = dpre.shape[1:-1] + (3, hidden)
    # (the step's product and matrix product into buffers of their own: no allocation a step)
    through = np.empty_like(dh)
    one_dtype = dh.dtype == w_hh.dtype
    for t in range(steps) if reverse else range(steps - 1, -1, -1):
        dh += g_out[t]
        dc += np.multiply(dh, through_h[t], out=through)
        d = dpre[t]
        np.multiply(to_gates[t], dc[..., None, :], out=d[..., : 3 * hidden].reshape(shape3))
        np.multiply(dh, to_o[t], out=d[..., 3 * hidden :])
        dc *= f[t]
        dh = np.matmul(d, w_hh, out=dh) if one_dtype else d @ w_hh
    if reverse:
        h_prev = np.concatenate([out[1:], h0[None]], axis=0)
    else:
        h_prev = np.concatenate([h0[None], out[:-1]], axis=0)
    flat = dpre.reshape(-1, dpre.shape[-1])
    db = flat.sum(axis=0)
    grads = (
        (flat @ w_ih).reshape(dpre.shape[:-1] + (w_ih.shape[-1],)),  # (one product, steps folded)
        dh,
        dc,
        flat.T @ x.reshape(-1, x.shape[-1]),
        flat.T @ h_prev.reshape(-1, hidden),
        db,
        db.copy(),
    )
    _LSTM.grads = (g, grads)
    return grads


def lstm_layer_tangent(k, t, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False):
    """Forward mode of lstm_layer along input k's tangent t (the other inputs' held):
    the tangents of (output, h_n, c_n)."""
    tangents = [None] * 7
    tangents[k] = t
    tx, th, tc, tw_ih, tw_hh, tb_ih, tb_hh = tangents
    out, _, _, gates, cells, _ = _lstm_run(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
    steps, hidden = x.shape[0], h0.shape[-1]
    dproj = np.zeros(gates.shape, dtype=gates.dtype)
    if tx is not None:
        dproj = dproj + tx @ w_ih.T
    if tw_ih is not None:
        dproj = dproj + x @ tw_ih.T
    for tb in (tb_ih, tb_hh):
        if tb is not None:
            dproj = dproj + tb
    dout = np.empty_like(out)
    dh = np.zeros_like(h0) if th is None else np.asarray(t, dtype=out.dtype)
    dc = np.zeros_like(c0) if tc is None else np.asarray(t, dtype=out.dtype)
    h, c = h0, c0
    for s in range(steps - 1, -1, -1) if reverse else range(steps):
        da = dproj[s] + dh @ w_hh.T
        if tw_hh is not None:
            da = da + h @ tw_hh.T
        act = gates[s]
        i, f, g, o = (act[:, j * hidden : (j + 1) * hidden] for j in range(4))
        di = i * (1 - i) * da[:, :hidden]
        df = f * (1 - f) * da[:, hidden : 2 * hidden]
        dg = (1 - g * g) * da[:, 2 * hidden : 3 * hidden]
        do = o * (1 - o) * da[:, 3 * hidden :]
        dc = df * c + f * dc + di * g + i * dg
        c = cells[s]
        tanh_c = np.tanh(c)
        dh = dout[s] = do * tanh_c + o * (1 - tanh_c * tanh_c) * dc
        h = out[s]
    return dout, dh, dc


def unbind(x, axis=0):
    return [np.take(x, i, axis=axis) for i in range(np.shape(x)[axis])]


# --- the rules -------------------------------------------------------------------------------

# relu's backward, a primitive of its own (compiled code calls it as eager does): linear in
# the gradient, which it masks as relu's own backward does; the result carries none
defvjp(
    "relu_grad",
    relu_grad,
    _spelled("relu_grad"),
    lambda g, ans, grad, result: relu_grad(g, result),
    None,
    kind="elementwise",
    linear=(0,),
)
defvjp(
    "relu",
    relu,
    _spelled("relu"),
    # a mask, not g * (ans > 0): see relu_grad
    lambda g, ans, x: relu_grad(g, ans),
    kind="elementwise",
    torch=torch("ReluBackward0", "relu", inplace=("relu_",), numpy=False, keep_int=True),
)
defvjp(
    "sigmoid",
    sigmoid,
    _spelled("sigmoid"),
    lambda g, ans, x: g * ans * (1.0 - ans),
    kind="elementwise",
    torch=torch(
        "SigmoidBackward0", "sigmoid", inplace=("sigmoid_",), numpy=False, special=("expit",)
    ),
)
defvjp(
    "rsqrt",
    rsqrt,
    _spelled("rsqrt"),
    lambda g, ans, x: -0.5 * g * ans * ans * ans,
    kind="elementwise",
    torch=torch("RsqrtBackward0", "rsqrt", inplace=("rsqrt_",), numpy=False),
)
defvjp(
    "erf",
    erf,
    _spelled("erf"),
    lambda g, ans, x: g * 1.1283791670955126 * np.exp(-x * x),
    kind="elementwise",
    torch=torch("ErfBackward0", "erf", inplace=("erf_",), numpy=False, special=("erf",)),
)
defvjp(
    "normal_cdf",
    normal_cdf,
    _spelled("normal_cdf"),
    lambda g, ans, x: g * np.exp(-0.5 * x * x) * _INV_SQRT_2PI,
    kind="elementwise",
)
defvjp(
    "gelu_slope",
    gelu_slope,
    _spelled("gelu_slope"),
    # d/dx (cdf + x pdf) = 2 pdf - x^2 pdf; the given cdf and slope are x's own, no inputs
    lambda g, ans, x, cdf=None, slope=None: g * np.exp(-0.5 * x * x) * _INV_SQRT_2PI * (2 - x * x),
    None,
    None,
    kind="elementwise",
)
defvjp(
    "gelu",
    gelu,
    _spelled("gelu"),
    # `cdf`, `slope`: the eager node's saved normal_cdf(x) or gelu_slope(x) (static
    # arguments; None where not kept)
    lambda g, ans, x, *, cdf=None, slope=None: g * gelu_slope(x, cdf, slope),
    kind="elementwise",
)
defvjp(
    "leaky_relu",
    leaky_relu,
    _spelled("leaky_relu"),
    lambda g, ans, x, negative_slope=0.01: np.where(x > 0, g, g * negative_slope),
    kind="elementwise",
)
defvjp(
    "softmax",
    softmax,
    _spelled("softmax"),
    # (over the last axis, the rows' dot products in one einsum: np.sum of the product costs
    # ~100 ns a row, 56 us for an attention's 1024 rows of 32 keys against 9 us)
    lambda g, ans, x, axis: (
        ans
        * (
            g
            - (
                np.expand_dims(np.einsum("...i,...i->...", g, ans), -1)
                if axis == -1 or axis == np.ndim(ans) - 1
                else np.sum(g * ans, axis=axis, keepdims=True)
            )
        )
    ),
    jvps=(lambda t, ans, x, axis: ans * (t - np.sum(t * ans, axis=axis, keepdims=True)),),
    torch=torch("SoftmaxBackward0", "softmax", numpy=False),
)
defvjp(
    "log_softmax",
    log_softmax,
    _spelled("log_softmax"),
    # (over the last axis, the rows' sums as a product with ones: see softmax's)
    lambda g, ans, x, axis: (
        g
        - np.exp(ans)
        * (
            np.expand_dims(np.matmul(g, np.ones_like(g, shape=np.shape(g)[-1:])), -1)
            if axis == -1 or axis == np.ndim(ans) - 1
            else np.sum(g, axis=axis, keepdims=True)
        )
    ),
    jvps=(lambda t, ans, x, axis: t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True),),
    torch=torch("LogSoftmaxBackward0", "log_softmax", numpy=False),
)
defvjp(
    "logsumexp",
    logsumexp,
    _spelled("logsumexp"),
    lambda g, ans, x, axis=None, keepdims=False: (
        expand_reduced(g, x, axis, keepdims) * np.exp(x - expand_reduced(ans, x, axis, keepdims))
    ),
    kind="reduction",
    jvps=(
        lambda t, ans, x, axis=None, keepdims=False: np.sum(
            t * np.exp(x - expand_reduced(ans, x, axis, keepdims)), axis=axis, keepdims=keepdims
        ),
    ),
    torch=torch("LogsumexpBackward0", "logsumexp", numpy=False),
)
defvjp(
    "vector_norm",
    vector_norm,
    _spelled("vector_norm"),
    lambda g, ans, x, ord=2, axis=None, keepdims=False: (
        # (torch's x / norm, 0 where the norm is: its derivative there is torch's NaN, where
        # x / np.where(norm == 0, 1, norm) gave the seed itself, a Hessian of [1, 2, 3] for
        # a seed [1, 2, 3] at x = 0)
        expand_reduced(g, x, axis, keepdims)
        * np.where(
            expand_reduced(ans, x, axis, keepdims) == 0,
            0.0,
            x / expand_reduced(ans, x, axis, keepdims),
        )
        if ord == 2
        else np.sign(x) * max_grad(g, ans, np.abs(x), axis, keepdims)
        if ord == np.inf or ord == -np.inf
        else expand_reduced(g, x, axis, keepdims) * np.sign(x)
        if ord == 1
        else np.zeros_like(x) * expand_reduced(g, x, axis, keepdims)
        if ord == 0
        # (p < 1, torch's: |x|^(p-1) 0 where x is 0, written with |x| itself, so that its
        # derivative there is torch's NaN (0 * infinity), where a masked |x| gave 0)
        else expand_reduced(g, x, axis, keepdims)
        * np.sign(x)
        * np.where(x == 0, 0.0, np.abs(x) ** (ord - 1))
        * expand_reduced(ans ** (1 - ord), x, axis, keepdims)
        if ord < 1
        # (p > 1, torch's: sign(x) |x|^(p-1), written x |x|^(p-2) above 2 as torch writes
        # it (their derivatives at a zero element: torch's NaN for a p not whole, where a
        # masked |x| gave 0), the scale norm^(1-p) 0 where the norm is)
        else expand_reduced(g, x, axis, keepdims)
        * (np.sign(x) * np.abs(x) ** (ord - 1) if ord < 2 else x * np.abs(x) ** (ord - 2))
        * expand_reduced(
            np.where(ans == 0, 0.0, np.where(ans == 0, 1.0, ans) ** (1 - ord)), x, axis, keepdims
        )
    ),
    kind="reduction",
    jvps=(
        lambda t, ans, x, ord=2, axis=None, keepdims=False: (
            np.sum(x * t, axis=axis, keepdims=keepdims) / np.where(ans == 0, 1.0, ans)
            if ord == 2
            else max_jvp(np.sign(x) * t, ans, np.abs(x), axis, keepdims)
            if ord == np.inf
            else np.sum(np.sign(x) * t, axis=axis, keepdims=keepdims)
            if ord == 1
            else np.sum(np.sign(x) * np.abs(x) ** (ord - 1) * t, axis=axis, keepdims=keepdims)
            / np.where(ans == 0, 1.0, ans) ** (ord - 1)
        ),
    ),
)

# Losses: the target carries no gradient for nll_loss (class indices); mse_loss has two inputs.
defvjp(
    "nll_loss",
    nll_loss,
    _spelled("nll_loss"),
    lambda g, ans, x, target, weight=None, reduction="mean", ignore_index=-100: nll_grad(
        g, x, target, weight, reduction, ignore_index
    ),
    None,
    # (linear in x, but written as its JVP: the eager forward mode applies a JVP to
    # Tensors, and the loss's own forward computes its weights with numpy's astype)
    jvps=(
        lambda t, ans, x, target, weight=None, reduction="mean", ignore_index=-100: (
            nll_scale(1.0, target, weight, reduction, ignore_index)
            * t[nll_index(np.shape(t), target, ignore_index)]
            if reduction == "none"
            else np.sum(
                nll_scale(1.0, target, weight, reduction, ignore_index)
                * t[nll_index(np.shape(t), target, ignore_index)]
            )
        ),
    ),
)
defvjp(
    "mse_loss",
    mse_loss,
    _spelled("mse_loss"),
    lambda g, ans, x, y, reduction="mean": unbroadcast(
        2.0 * (x - y) * g / (np.size(x - y) if reduction == "mean" else 1), x
    ),
    lambda g, ans, x, y, reduction="mean": unbroadcast(
        -2.0 * (x - y) * g / (np.size(x - y) if reduction == "mean" else 1), y
    ),
    jvps=(
        lambda t, ans, x, y, reduction="mean": (
            2.0 * (x - y) * t
            if reduction == "none"
            else np.sum(2.0 * (x - y) * t) / (np.size(x - y) if reduction == "mean" else 1)
        ),
        lambda t, ans, x, y, reduction="mean": (
            -2.0 * (x - y) * t
            if reduction == "none"
            else -np.sum(2.0 * (x - y) * t) / (np.size(x - y) if reduction == "mean" else 1)
        ),
    ),
)

# In-place writes, as out-of-place primitives (the eager engine applies them in place).
defvjp(
    "index_put",
    index_put,
    _spelled("index_put"),
    # zeros where the write landed, chosen rather than multiplied (a NaN in g stays out)
    lambda g, ans, x, values, index, accumulate=False: (
        g if accumulate else np.where(put_mask(g, index) != 0, g, 0.0)
    ),
    lambda g, ans, x, values, index, accumulate=False: unbroadcast(g[index], values),
    linear=(0, 1),
)
defvjp(
    "addmm",
    addmm,
    _spelled("addmm"),
    # (a vector bias: the column sums of g as a product with ones, BLAS: a third of numpy's
    # reduction's time at a GPT's (256, 192))
    lambda g, ans, bias, x, y: (
        np.matmul(np.ones_like(g, shape=g.shape[:1]), g)
        if bias.shape == g.shape[1:]
        else unbroadcast(g, bias)
    ),
    lambda g, ans, bias, x, y: g @ y.T,
    # x.T @ g, made as the transpose of the product g.T @ x: F.linear's y is its weight's
    # transpose, so its weight's gradient (TBackward0's transpose of this) comes out
    # C-contiguous, as the weight is, and `.grad` is a plain copy of it, not a strided one
    lambda g, ans, bias, x, y: (g.T @ x).T,
    jvps=(
        lambda t, ans, bias, x, y: t + np.zeros_like(ans),
        lambda t, ans, bias, x, y: t @ y,
        lambda t, ans, bias, x, y: x @ t,
    ),
)
defvjp(
    "add_alpha",
    add_alpha,
    _spelled("add_alpha"),
    lambda g, ans, x, y, alpha=1: unbroadcast(g, x),
    lambda g, ans, x, y, alpha=1: unbroadcast(g * alpha, y),
    kind="elementwise",
)
defvjp(
    "sub_alpha",
    sub_alpha,
    _spelled("sub_alpha"),
    lambda g, ans, x, y, alpha=1: unbroadcast(g, x),
    lambda g, ans, x, y, alpha=1: unbroadcast(-g * alpha, y),
    kind="elementwise",
)
defvjp(
    "fill",
    fill,
    _spelled("fill"),
    lambda g, ans, x, value=0: np.zeros_like(g),
    jvps=(lambda t, ans, x, value=0: np.zeros_like(ans),),
)
defvjp(
    "fill_tensor",
    fill_tensor,
    _spelled("fill_tensor"),
    lambda g, ans, x, value: np.zeros_like(g),
    lambda g, ans, x, value: np.sum(g),
    jvps=(
        lambda t, ans, x, value: np.zeros_like(ans),
        lambda t, ans, x, value: t + np.zeros_like(ans),
    ),
)

# fmod's quotient is rounded toward zero: its own gradient is zero, as torch's
# `self.div(other, rounding_mode="trunc")` is, so the second derivative matches torch's.
defvjp(
    "fmod",
    fmod,
    _spelled("fmod"),
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * np.trunc(x / y), y),
    kind="elementwise",
)
# torch.fmax / fmin: at a tie the input gets all of the gradient, the other none (torch's
# `grad.masked_fill(~(self >= other | other.isnan()), 0)`); numpy's np.fmax splits a tie in
# halves (`np_fmax`, the compiler's, a subgradient as good). The eager mode's is torch's.
defvjp(
    "torch_fmax",
    fmax,
    _spelled("fmax"),
    lambda g, ans, x, y: unbroadcast(g * ((x >= y) | np.isnan(y)), x),
    lambda g, ans, x, y: unbroadcast(g * ~((x >= y) | np.isnan(y)), y),
    kind="elementwise",
)
defvjp(
    "torch_fmin",
    fmin,
    _spelled("fmin"),
    lambda g, ans, x, y: unbroadcast(g * ((x <= y) | np.isnan(y)), x),
    lambda g, ans, x, y: unbroadcast(g * ~((x <= y) | np.isnan(y)), y),
    kind="elementwise",
)
# Rounding and sign: torch records them, with a zero gradient.
defvjp(
    "torch_div_rounding",
    div_rounding,
    _spelled("div_rounding"),
    lambda g, ans, x, y: unbroadcast(np.zeros_like(g), x),
    lambda g, ans, x, y: unbroadcast(np.zeros_like(g), y),
    kind="elementwise",
)
_ROUNDING = {
    # (numpy=False: its fn is torch's sign, not np.sign; eager.numpy_dispatch maps np.sign)
    "sign": torch("SignBackward0", "sign", inplace=("sign_",), numpy=False, keep_int=True),
    "floor": torch("FloorBackward0", "floor", inplace=("floor_",), keep_int=True),
    "ceil": torch("CeilBackward0", "ceil", inplace=("ceil_",), keep_int=True),
    "trunc": torch("TruncBackward0", "trunc", "fix", inplace=("trunc_", "fix_"), keep_int=True),
    "round": None,  # eager round takes `decimals` (sourcegrad.eager.tensor_math.round)
}


def torch_sign(x):
    """torch.sign: `(0 < x) - (x < 0)`, so 0 (not numpy's NaN) at NaN and +0 at -0; a bool
    stays bool (numpy has no sign of bools); a complex one is refused, as torch does."""
    kind = x.dtype.kind
    if kind == "b":
        return x.copy()
    if kind == "c":
        raise NotImplementedError(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. "
            "Please use torch.sgn instead."
        )
    if kind == "f":
        return np.subtract(0 < x, x < 0, dtype=x.dtype)
    return np.sign(x)


_ROUNDING_FN = {"sign": torch_sign}
for _name, _torch in _ROUNDING.items():
    defvjp(
        f"torch_{_name}",
        _ROUNDING_FN.get(_name, getattr(np, _name)),
        Spelling("func", _name),
        lambda g, ans, x: np.zeros_like(g),
        kind="elementwise",
        register_fn=False,
        torch=_torch,
    )
del _name, _torch

# F.embedding: the weight's gradient only (the indices are integers); its gradient a primitive
# of its own, so that compiled code (compiled.lowering's embedding) computes it as eager does
defnondiff("embedding_grad", embedding_grad, _spelled("embedding_grad"))
defvjp(
    "embedding",
    embedding,
    _spelled("embedding"),
    lambda g, ans, weight, indices, padding_idx=None, scale_grad_by_freq=False: embedding_grad(
        g, np.zeros_like(weight), indices, padding_idx, scale_grad_by_freq
    ),
    None,
    linear=(0,),
)
# Several outputs: `g` is the list of the outputs' gradients (zeros where none arrived).
defvjp(
    "split",
    split,
    _spelled("split"),
    lambda g, ans, x, indices_or_sections, axis=0: np.concatenate(g, axis=axis),
    complex=True,
)
# lstm_layer's VJPs call it (generated backward code too): its own derivative is not written,
# as torch has none for mkldnn_rnn_layer's backward (no double backward through a float32 LSTM)
defprimitive("lstm_layer_grads", lstm_layer_grads, _spelled("lstm_layer_grads"))
defvjp(
    "lstm_layer",
    lstm_layer,
    _spelled("lstm_layer"),
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[0],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[1],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[2],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[3],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[4],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[5],
    lambda g, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False: lstm_layer_grads(
        g, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse
    )[6],
    jvps=tuple(
        (
            lambda t, ans, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False, k=k: (
                lstm_layer_tangent(k, t, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
            )
        )
        for k in range(7)
    ),
)
defvjp(
    "unbind",
    unbind,
    _spelled("unbind"),
    lambda g, ans, x, axis=0: np.stack(g, axis=axis),
    linear=(0,),
)


# Example inputs for the registry's test grid (ops/examples.py): the kernels the eager mode
# records, called as functions (the compiler differentiates them as well).
EXAMPLES = {
    "relu": [ex(arg(3, 4, domain="away_from_zero"))],
    # (the result a fixed array of both signs: it carries no gradient)
    "relu_grad": [ex(arg(3, 4), np.linspace(-1.0, 1.0, 12).reshape(3, 4))],
    "sigmoid": [ex(arg(3, 4))],
    "rsqrt": [ex(arg(3, 4, domain="positive"))],
    "erf": [ex(arg(3, 4))],
    "normal_cdf": [ex(arg(3, 4))],
    "gelu": [ex(arg(3, 4))],
    "gelu_slope": [ex(arg(3, 4))],
    "leaky_relu": [
        ex(arg(3, 4, domain="away_from_zero")),
        ex(arg(5, domain="away_from_zero"), 0.2),
    ],
    "softmax": [ex(arg(3, 4), 1), ex(arg(2, 3, 4), 0)],
    "log_softmax": [ex(arg(3, 4), 1), ex(arg(2, 3, 4), 0)],
    "logsumexp": [ex(arg(3, 4)), ex(arg(3, 4), 1), ex(arg(3, 4), 0, True)],
    # (its other orders' templates are the eager mode's only: the compiler reaches
    # np.linalg.norm instead)
    "vector_norm": [ex(arg(3, 4)), ex(arg(3, 4), 2, 1, True)],
    "mse_loss": [ex(arg(3, 4), arg(3, 4)), ex(arg(3, 4), arg(4), "sum")],
    "addmm": [ex(arg(2), arg(3, 4), arg(4, 2))],
    "add_alpha": [ex(arg(3, 4), arg(4), 0.5)],
    "sub_alpha": [ex(arg(3, 4), arg(4), 0.5)],
    "fmod": [ex(arg(3, 4, domain="large"), arg(4, domain="above_one"))],
    "torch_fmax": [ex(arg(3, 4), arg(4)), ex(arg(3), arg(domain="normal", py=True))],
    "torch_fmin": [ex(arg(3, 4), arg(4)), ex(arg(3), arg(domain="normal", py=True))],
    "fill": [ex(arg(3, 4), 0.5)],
    **{
        f"torch_{_name}": [ex(arg(3, 4, domain="off_integers"))]
        for _name in ("sign", "floor", "ceil", "trunc", "round")
    },
}
