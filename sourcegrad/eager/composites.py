"""torch functions made of other Tensor ops: lerp, addcmul, addcdiv, tensordot, kron,
meshgrid, var_mean, std_mean, nan_to_num, isposinf, isneginf, cosine_similarity,
pairwise_distance (also torch.nn.functional's).

Takes Tensors (and numbers where torch does); returns what torch returns, computed by the
Tensor ops this library already records (so their values, gradients and second
derivatives are those ops'; the nodes are theirs too: `torch.lerp`'s is LerpBackward0 in
torch, a product and a sum here). Argument errors are torch's.

Imports: `tensor`, `operands`, `surface`, `dtypes`, `elementwise` (where), `grad_mode`,
`shape_ops` (broadcast_tensors); the other ops they use are Tensor methods.
"""

from __future__ import annotations

import math
import warnings

from . import factories, linalg
from .dtypes import finfo
from .elementwise import where
from .grad_mode import is_grad_enabled as grad_mode_enabled
from .grad_mode import no_grad
from .operands import as_tensor
from .reductions import refuse_integer_moments
from .shape_ops import broadcast_tensors, cat
from .surface import export
from .tensor import Tensor


def _same_dtype(input, other, name):
    if isinstance(other, Tensor) and other.dtype is not input.dtype:
        raise RuntimeError(
            f"expected dtype {input.dtype._c_name} for `{name}` but got dtype {other.dtype._c_name}"
        )


@export("lerp")
def lerp(input, end, weight):
    """input + weight * (end - input), of floating (or complex) tensors only, as torch's."""
    _same_dtype(input, end, "end")
    _same_dtype(input, weight, "weight")
    if isinstance(input, Tensor) and not (input.is_floating_point() or input.is_complex()):
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._scalar_name}'")
    return input + weight * (end - input)


@export("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return input + value * (tensor1 * tensor2) if value != 1 else input + tensor1 * tensor2


@export("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (an integer division refused, as torch does)."""
    if not (tensor1.dtype.is_floating_point or tensor1.dtype.is_complex) and not (
        tensor2.dtype.is_floating_point or tensor2.dtype.is_complex
    ):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * "
            "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
            "behavior is just the latter implementation: (input + value * tensor1 / "
            "tensor2), for all dtypes."
        )
    return input + value * (tensor1 / tensor2) if value != 1 else input + tensor1 / tensor2


@export("tensordot", methods=())
def tensordot(a, b, dims=2, out=None):
    """The sum over a's `dims` last (or listed) dimensions against b's first (or listed):
    both laid out as matrices (permute, reshape) and multiplied."""
    if out is not None:
        raise TypeError("tensordot(): out= is not supported")
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else [int(i) for i in d] for d in dims)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [d % a.dim() for d in dims_a]
    dims_b = [d % b.dim() for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in "
                f"dim {da} and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(-1, size)
    right = b.permute(*dims_b, *free_b).reshape(size, -1)
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return (left @ right).reshape(shape)


@export("kron")
def kron(input, other):
    """The Kronecker product: each element of input times other, laid out block by block
    (the shorter shape padded with leading 1s)."""
    input, other = as_tensor(input), as_tensor(other)
    n = max(input.dim(), other.dim())
    a = input.reshape((1,) * (n - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.dim()) + tuple(other.shape))
    # a's axes interleaved with b's: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...)
    spread_a = a.reshape([s for d in a.shape for s in (d, 1)])
    spread_b = b.reshape([s for d in b.shape for s in (1, d)])
    return (spread_a * spread_b).reshape([p * q for p, q in zip(a.shape, b.shape)])


@export("meshgrid", methods=())
def meshgrid(*tensors, indexing=None):
    """Each 0-d or 1-d tensor expanded along the others' lengths ("ij": the first varies
    along the first dimension; "xy": the first two swapped), as views (ExpandBackward0)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            'torch.meshgrid: indexing must be one of "xy" or "ij", but received: ' + indexing
        )
    tensors = [as_tensor(t) for t in tensors]
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " + repr(t)
            )
    lengths = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = [lengths[k] for k in order]
    out = []
    for k, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[order.index(k)] = lengths[k]
        out.append(t.reshape(view).expand(shape))
    return tuple(out)


@export("var_mean", methods=())
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(input.var(...), input.mean(...)) over the same dimensions."""
    refuse_integer_moments("var_mean", input)
    return (
        input.var(dim, unbiased, keepdim, correction=correction),
        input.mean() if dim is None else input.mean(dim, keepdim=keepdim),
    )


@export("std_mean", methods=())
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(input.std(...), input.mean(...)) over the same dimensions."""
    refuse_integer_moments("std_mean", input)
    return (
        input.std(dim, unbiased, keepdim, correction=correction),
        input.mean() if dim is None else input.mean(dim, keepdim=keepdim),
    )


@export("isposinf")
def isposinf(input):
    return input == float("inf")


@export("isneginf")
def isneginf(input):
    return input == float("-inf")


@export("nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced (by default with 0 and the dtype's largest and smallest
    numbers); the gradient passes where input is finite and is 0 elsewhere (torch multiplies
    by the mask instead: an infinite or NaN gradient there gives NaN in torch, 0 here)."""
    if out is not None:
        raise TypeError("nan_to_num(): out= is not supported")
    if not input.dtype.is_floating_point:
        return input.clone()
    info = finfo(input.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    replaced = where(input == float("inf"), big, where(input == float("-inf"), small, input))
    return where(input.isnan(), float(nan), replaced)


@export("pairwise_distance", methods=())
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dimension."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


def _clamped_norm(x, dim, eps):
    """||x|| along dim, raised to eps in place without grad: the gradient is the norm's (torch)."""
    norm = x.norm(2, dim, keepdim=True).clone()
    with no_grad():
        norm.clamp_min_(eps)
    return norm


@export("cosine_similarity", methods=())
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / ||x1|| * x2 / ||x2||) along dim, each norm at least eps (as torch computes it)."""
    x1, x2 = broadcast_tensors(x1, x2)
    return ((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


@export("svd")
def svd(input, some=True, compute_uv=True):
    """torch.svd (deprecated in torch for linalg.svd): (U, S, V) with V = Vh^H, reduced unless
    some=False; with compute_uv=False, U and V are zeros of shape (m, m) and (n, n), as
    torch's, and only S carries a gradient."""
    if not compute_uv:
        A = as_tensor(input)
        S = linalg.svdvals(A)
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        U = factories.zeros(batch + (m, m), dtype=A.dtype, device=A.device)
        V = factories.zeros(batch + (n, n), dtype=A.dtype, device=A.device)
        return linalg.SVD_LEGACY_RESULT(U, S, V)
    A = as_tensor(input)
    m, n = A.shape[-2], A.shape[-1]
    if some or m == n or not (A.requires_grad and grad_mode_enabled()):
        U, S, Vh = linalg.svd(A, full_matrices=not some)
    else:
        # the full factors of a non-square matrix: the reduced ones carry the gradient, the
        # extra columns (an orthonormal basis of the rest) none, as torch ignores theirs
        U, S, Vh = linalg.svd(A, full_matrices=False)
        with no_grad():
            U_full, _, Vh_full = linalg.svd(A.detach(), full_matrices=True)
        k = min(m, n)
        U = cat([U, U_full[..., :, k:]], -1)
        Vh = cat([Vh, Vh_full[..., k:, :]], -2)
    return linalg.SVD_LEGACY_RESULT(U, S, Vh.mH if Vh.is_complex() else Vh.mT)
