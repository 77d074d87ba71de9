"""In-place ops (`add_`, `mul_`, `zero_`, `copy_`, `x[i] = v`, `+=`, ...) and their graph.

(One module: every in-place op goes through the same version, view-rebase and saving
checks below; the ops themselves are short.)

An in-place op writes into the tensor's storage, bumps its version counter by
one, and, when grad mode is on and something involved requires grad, replaces
the tensor's `grad_fn` with the op's node, whose first edge is the tensor's old
`grad_fn`. The VJP of that first input sees a *copy* of the tensor's old values
when the rule needs them (the storage itself has been overwritten).

On a view, the node goes to the base instead: the base's `grad_fn` becomes a
`CopySlices` around it, and the view's becomes an `AsStridedBackward0` into the
base. Other views of the same base notice the version change the next time
their `grad_fn` is read (`refresh_view`). Views made in no_grad mode and the
outputs of unbind/split may not be changed in place, directly or through their
base, when grad is recorded (`check_view_rebase`, torch's CreationMeta).

What the node saves follows torch: an operand sharing self's storage is saved at
its version before the write (so `x.mul_(x)` refuses its backward), and a result
the rule reads where torch's node keeps only the operands is kept as a copy.

The checks are torch's, in torch's order: in-place on an inference tensor
outside inference mode writes the data *and then* raises (as torch does); on a
leaf that requires grad (or a view of one) it raises before writing.

Imports: `tensor_math`, `shape_ops`, `factories`, `operands`, `spec`, `node`, `tensor`, the
leaves and `sourcegrad.ops.nn`; only the surface modules (numpy_dispatch,
methods, `__init__`) import it.

Why one module: the in-place variants share one protocol (the version counter bump, the leaf
and view checks, rebasing a view's history) that each of them must follow exactly as torch
does.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import errors
from ..ops import nn as ops_nn
from . import devices, dtypes, forward_ad, messages, shape_ops
from . import tensor_math as _tensor_math
from .dual_state import DUAL, any_tangent
from .factories import numpy_rng
from .grad_mode import STATE
from .node import NONE_EDGE, AsStridedBackward0, CopyBackwards, CopySlices, meta_of, strip_backward
from .operands import along_index, as_tensor
from .operands import promote as _promote
from .operands import result as _result
from .out_arg import refuse_partial_overlap
from .shape_ops import MASKED_FILL, index_array, positions
from .spec import VALUE, OpSpec, record
from .surface import export
from .tensor import (
    COMPLEX_PART_VIEW,
    DEFAULT_VIEW,
    MULTI_OUTPUT_VIEW,
    NO_GRAD_VIEW,
    Tensor,
    VersionCounter,
)

_wrap = Tensor._make


def refresh_view(view):
    """Give a view whose base changed in place a grad_fn that reads from the base's new one.

    As torch's: a view the base's change reaches requires grad from then on (the change
    may have made the base require grad), and a view torch forbids to be modified in
    place raises, each time it is asked, as torch's does.
    """
    ex = view._extra
    vc = view._vc
    if ex.fn_version == vc.value:
        return
    base = view._base
    if view._grad_fn is None and not base._requires_grad:
        ex.fn_version = vc.value
        return
    check_view_rebase(view, messages.INDIRECTLY)
    ex.fn_version = vc.value
    if not base._requires_grad:
        return
    meta = meta_of(base._data)
    view._grad_fn = AsStridedBackward0(base._edge(), positions(view), meta)
    view._output_nr = 0
    view._requires_grad = True


def check_view_rebase(view, modified):
    """torch's handle_view_on_rebase: refuse to change a no_grad or multi-output view in place."""
    creation = view._extra.creation
    if creation == DEFAULT_VIEW:
        return
    if creation == COMPLEX_PART_VIEW:
        raise errors.ComplexValueError(
            f"the real or imaginary part of a complex tensor (x.real, x.imag, torch.real, "
            f"torch.view_as_real, torch.view_as_complex) {modified} modified in place while gradients are recorded: torch changes the "
            "complex tensor through it, which sourcegrad does not differentiate (the gradient "
            "would miss the change); clone the part first (x.real.clone()) or build the "
            "changed value as a new tensor (torch.complex(re, im))"
        )
    fn = view._grad_fn
    if creation == NO_GRAD_VIEW or fn is None:
        text = (
            messages.NO_GRAD_VIEW_MODIFIED if fn is None else messages.VIEW_OF_NO_GRAD_VIEW_MODIFIED
        )
    else:
        text = messages.VIEW_MODIFIED
    name = strip_backward(fn.name()) if fn is not None else ""
    text = text.format(nr=view._output_nr, name=name, modified=modified)
    tail = (
        messages.MULTI_OUTPUT_VIEW_TAIL
        if creation == MULTI_OUTPUT_VIEW
        else messages.NO_GRAD_VIEW_TAIL
    )
    raise RuntimeError(text + tail)


def _recording(self, others):
    """Whether this in-place op must be recorded; raises torch's errors about leaves."""
    if not STATE.enabled:
        return False
    base = self._base
    # a view of a base that requires grad requires grad too (in torch even one taken in
    # no_grad mode, which is then refused below)
    needed = self._requires_grad or (base is not None and base._requires_grad)
    if not needed:
        for o in others:
            if isinstance(o, Tensor) and o._requires_grad:
                needed = True
                break
    if not needed:
        return False
    if base is not None:
        check_view_rebase(self, messages.DIRECTLY)
        if base._grad_fn is None and base._requires_grad:
            raise RuntimeError(messages.VIEW_OF_LEAF_INPLACE)
    elif self._grad_fn is None and self._requires_grad:
        raise RuntimeError(messages.LEAF_INPLACE)
    return True


def _before(self, copy_data):
    """A stand-in for `self` as it was before the write: same edge, its old values if needed."""
    fn = self.grad_fn  # refreshes a stale view first
    old = _wrap(self._data.copy() if copy_data else self._data)
    old._grad_fn = fn
    old._output_nr = self._output_nr
    old._requires_grad = self._requires_grad
    old._acc = self._acc
    old._inference = self._inference
    return old


def _write(self, data, fill=False):
    """Store `data` into self's storage (broadcast and cast as copy_ does) and bump the version.

    `fill`: one value for all elements (fill_, zero_), which torch writes even where several
    elements share one memory location (an expanded view); other writes it refuses there.
    """
    target = self._data
    if data is not target:
        if type(data) is not type(target) and (
            type(data) in devices.DEVICE_TYPES or type(target) in devices.DEVICE_TYPES
        ):
            # copy_ across devices (and a host value written into a GPU tensor)
            data = devices.to_device(data, devices.device_of(target))
        if not fill and not devices.writeable(target):
            # an expanded view: several elements share one memory location
            raise RuntimeError(messages.INTERNAL_OVERLAP)
        np.copyto(target, data, casting="unsafe")
    vc = self._get_vc()
    vc.value += 1


def _check_inference(self, data, fill=False):
    if self._inference and not STATE.inference:
        _write(self, data, fill)  # torch writes the data before it raises
        raise RuntimeError(messages.INFERENCE_INPLACE)


def _check_cast(self, result_np_dtype):
    src = dtypes.FROM_NUMPY[np.dtype(result_np_dtype)]
    dst = self.dtype
    if not dtypes.can_cast(src, dst):
        raise RuntimeError(
            f"result type {src._scalar_name} can't be cast to the desired output "
            f"type {dst._scalar_name}"
        )


def _move_retained(tensor, old_fn, old_nr):
    """A tensor that retains its grad and was just changed in place retains the gradient of
    its new version, as torch's (the retains_grad hook moves to the new grad_fn): it stayed
    on the old node, whose gradient is the one before the write (`y.retain_grad();
    y.mul_(3)` gave y.grad 3 times torch's)."""
    extra = tensor._extra
    if extra is None or not extra.retains_grad or tensor._grad_fn is old_fn:
        return
    if old_fn is not None and old_fn._hookset is not None:
        ref = old_fn._hookset.retained.get(old_nr)
        if ref is not None and ref() is tensor:
            del old_fn._hookset.retained[old_nr]
    if tensor._grad_fn is not None:
        tensor._grad_fn._hooks().retained[tensor._output_nr] = weakref.ref(tensor)


def _attach_to_base(self):
    """Self is a view and just got its in-place node: move the node into the base's CopySlices."""
    fn = self._grad_fn
    base = self._base
    base_fn, base_nr = base._grad_fn, base._output_nr
    pos = positions(self)
    meta = meta_of(base._data)
    node = CopySlices(base._edge(), fn, pos, meta, overlapping=not devices.writeable(self._data))
    # fn's first edge led to the view's old grad_fn, which CopySlices replaces by the base's:
    # let go of it, as torch does (it computes the view's gradient all the same)
    fn.next_functions = (NONE_EDGE,) + tuple(fn.next_functions[1:])
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    _move_retained(base, base_fn, base_nr)
    old_fn, old_nr = self._grad_fn, self._output_nr
    self._grad_fn = AsStridedBackward0((node, 0), pos, meta)
    self._output_nr = 0
    self._extra.fn_version = self._vc.value
    _move_retained(self, old_fn, old_nr)


# in-place ops whose torch node saves the result (self after the op) besides the operands, so
# that a later in-place change of self makes their backward raise
_SAVES_RESULT = {"PowBackward1"}


def apply(self, data, spec, args, static=None, self_pos=0, fill=False, overlap=True):
    """Write `data` into self and record `spec`'s node, `args[self_pos]` standing for self.

    `args` are the rule's array arguments with `self` at `self_pos`; other entries
    may be Tensors or plain values. `fill`: see `_write`. `overlap`: refuse an operand that
    overlaps self in part, as torch's kernels do (not its fills, which read one value
    first). While a dual level is open, self's tangent is updated too (from the values
    before the write).
    """
    if DUAL.on and any_tangent(args):
        new_tangent = forward_ad.inplace(self, data, spec, args, static, self_pos)
        DUAL.on = False
        try:
            node = _apply(self, data, spec, args, static, self_pos, fill, overlap)
            if node is not None and new_tangent is not None:
                node._fw_ans = (DUAL.epoch, new_tangent.clone())
        finally:
            DUAL.on = True
        forward_ad.store(self, new_tangent, shape_ops.apply_steps)
        return self
    _apply(self, data, spec, args, static, self_pos, fill, overlap)
    return self


def _apply(self, data, spec, args, static, self_pos, fill, overlap=True):
    """`apply` without forward mode: returns the node recorded, or None."""
    others = [a for i, a in enumerate(args) if i != self_pos]
    _check_inference(self, data, fill)
    recording = _recording(self, others)
    if overlap and not fill:
        refuse_partial_overlap(self, others)
    if not recording:
        _write(self, data, fill)
        return None
    # which arguments must keep their values: ask the spec, as record() will
    mask = 0
    edge_args = spec.edges
    for bit, p in enumerate(edge_args):
        a = args[p]
        if isinstance(a, Tensor) and a._requires_grad:
            mask |= 1 << bit
    arg_modes, ans_mode = spec.modes(mask, len(args))
    old = _before(self, arg_modes[self_pos] == VALUE)
    args = list(args)
    # x.mul_(x), v.div_(x[0]): torch saves an operand that shares x's storage (x itself, a
    # view) at its version before the write, so that backward refuses it (x.add_(x), which
    # saves nothing, differentiates)
    vc = self._get_vc()
    aliased = [
        i for i, a in enumerate(args) if i != self_pos and isinstance(a, Tensor) and a._vc is vc
    ]
    args[self_pos] = old
    before = vc.value
    _write(self, data, fill)
    if aliased and self._base is not None and any(args[i] is self for i in aliased):
        self._extra.fn_version = vc.value  # its edge is its grad_fn from before the write
    node = record(spec, self, tuple(args), static)
    if aliased and node._versions is not None:
        for i in aliased:
            if node._versions[i] is not None:
                node._versions[i] = before
    if ans_mode == VALUE and VALUE in arg_modes and spec.node_cls.__name__ not in _SAVES_RESULT:
        # torch's node for this op (clamp_, div_) keeps the operands (self's old values as a
        # copy), not the result: a later in-place change of self leaves its backward valid.
        # Our rule reads the result too, so it keeps a copy of it, out of the version
        # counter's reach.
        node._ans = (devices.copy(self._data), VersionCounter(), 0)
    _move_retained(self, old._grad_fn, old._output_nr)
    if self._base is not None:
        _attach_to_base(self)
        if type(node._ans) is tuple:
            # the result saved is the view, whose grad_fn is now an AsStridedBackward0:
            # torch's error names it as long as it lives
            node._ans = node._ans + (weakref.ref(self._grad_fn),)
    return node


# --- arithmetic ----------------------------------------------------------------------------


def _check_shapes(self, other_shape):
    """torch's errors for an operand that does not broadcast to self's shape."""
    shape = self._data.shape
    if tuple(other_shape) == shape:
        return
    error = _tensor_math.broadcast_error(shape, other_shape)
    if error is not None:
        raise error
    full = np.broadcast_shapes(shape, tuple(other_shape))
    if full != shape:
        raise RuntimeError(
            f"output with shape {list(shape)} doesn't match the broadcast shape {list(full)}"
        )


def _binary_(self, other, spec, fn, to_float=False):
    ad, bd, rd, ra, rb = _promote(self, other, to_float)
    _check_shapes(self, np.shape(bd))
    _check_cast(self, rd)
    data = _result(fn(ad, bd))
    return apply(self, data, spec, (self, rb))


@export(methods=("add_",))
def add_(self, other, *, alpha=1):
    if alpha != 1:
        ad, bd, rd, ra, rb = _promote(self, other)
        _check_shapes(self, np.shape(bd))
        _check_cast(self, rd)
        return apply(
            self,
            _result(np.add(ad, np.multiply(bd, alpha))),
            _tensor_math.ADD_ALPHA,
            (self, rb),
            {"alpha": alpha},
        )
    return _binary_(self, other, _tensor_math.ADD, np.add)


@export(methods=("sub_", "subtract_"))
def sub_(self, other, *, alpha=1):
    _tensor_math.check_sub(self, other)
    if alpha != 1:
        ad, bd, rd, ra, rb = _promote(self, other)
        _check_shapes(self, np.shape(bd))
        _check_cast(self, rd)
        return apply(
            self,
            _result(np.subtract(ad, np.multiply(bd, alpha))),
            _tensor_math.SUB_ALPHA,
            (self, rb),
            {"alpha": alpha},
        )
    return _binary_(self, other, _tensor_math.SUB, np.subtract)


@export(methods=("mul_", "multiply_"))
def mul_(self, other):
    return _binary_(self, other, _tensor_math.MUL, np.multiply)


@export(methods=("div_", "divide_", "true_divide_"))
def div_(self, other, *, rounding_mode=None):
    if rounding_mode is not None:
        return copy_(
            self,
            _tensor_math.div(
                self.detach() if not self._requires_grad else self,
                other,
                rounding_mode=rounding_mode,
            ),
        )
    return _binary_(self, other, _tensor_math.DIV, np.true_divide, to_float=True)


@export(methods=("pow_",))
def pow_(self, exponent):
    spec = _tensor_math.POW_TENSOR if isinstance(exponent, Tensor) else _tensor_math.POW_SCALAR
    _tensor_math.refuse_negative_int_exponent(self, exponent)
    return _binary_(self, exponent, spec, _tensor_math.power_data)


@export(methods=("remainder_",))
def remainder_(self, other):
    spec = _tensor_math.REMAINDER if isinstance(other, Tensor) else _tensor_math.REMAINDER_SCALAR
    _tensor_math.integer_or_float("remainder_cpu", self, other)
    return _binary_(self, other, spec, _tensor_math.remainder_data)


@export(methods=("floor_divide_",))
def floor_divide_(self, other):
    result = _tensor_math.floor_divide(self, other)
    _check_cast(self, result._data.dtype)
    return copy_(self, result)


def _unary_(op_name):
    return inplace_of(getattr(_tensor_math, op_name))


def inplace_of(op):
    """The in-place variant (`x.exp_()`) of an elementwise op of one input made by
    `tensor_math.op_of_entry`: the same node, written into x."""
    op_name = op.__name__
    spec, fn = op.spec, op.np_fn

    def method(self):
        d = self._data
        out = _result(fn(d))
        _check_cast(self, out.dtype)
        return apply(self, out, spec, (self,))

    method.__name__ = op_name + "_"
    method.__doc__ = f"In-place {op_name}."
    return method


# The in-place variants the registry's entries name (`Torch.inplace`): exp_, tanh_, abs_, ...
def _from_registry() -> dict:
    made = {}
    for op in dict.fromkeys(_tensor_math.REGISTERED.values()):
        for name in op.entry.torch.inplace:
            made[name] = inplace_of(op)
            made[name].entry = op.entry
    return made


REGISTERED = _from_registry()
globals().update(REGISTERED)  # this module's own names: inplace.exp_, inplace.relu_, ...
for _name, _op in REGISTERED.items():
    export(methods=(_name,))(_op)


@export(methods=("square_",))
def square_(self):
    return pow_(self, 2)


@export(methods=("clamp_", "clip_"))
def clamp_(self, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    data = _tensor_math.clamp_data(self, min, max)
    _check_cast(self, data.dtype)
    tensor_bounds = isinstance(min, Tensor) or isinstance(max, Tensor)
    spec = _tensor_math.CLAMP_TENSOR if tensor_bounds else _tensor_math.CLAMP_SCALAR
    return apply(self, data, spec, (self, min, max))


clip_ = clamp_


@export(methods=("clamp_min_",))
def clamp_min_(self, min):  # noqa: A002
    return apply(
        self,
        _tensor_math.clamp_data(self, min, None),
        _tensor_math.clamp_bound_spec(min=min),
        (self, min, None),
    )


@export(methods=("clamp_max_",))
def clamp_max_(self, max):  # noqa: A002
    return apply(
        self,
        _tensor_math.clamp_data(self, None, max),
        _tensor_math.clamp_bound_spec(max=max),
        (self, None, max),
    )


def leaky_relu_(self, negative_slope=0.01):
    return apply(
        self,
        _result(ops_nn.leaky_relu(self._data, negative_slope)),
        _tensor_math.LEAKY_RELU,
        (self,),
        {"negative_slope": negative_slope},
    )


# --- fills and copies --------------------------------------------------------------------------

ZERO = OpSpec("ZeroBackward0", "fill", n_arrays=1)
FILL_SCALAR = OpSpec("FillBackward2", "fill", n_arrays=1)
FILL_TENSOR = OpSpec("FillBackward3", "fill_tensor", n_arrays=2)
INDEX_PUT = OpSpec("IndexPutBackward0", "index_put", n_arrays=2)
INDEX_ADD = OpSpec("IndexAddBackward0", "index_put", n_arrays=2)


@export("zero_")
def zero_(self):
    return apply(self, np.zeros((), self._data.dtype), ZERO, (self,), {"value": 0}, fill=True)


@export(methods=("fill_",))
def fill_(self, value):
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        # fill_ of a tensor, unlike fill_ of a number, refuses an expanded view (as torch)
        return apply(
            self, value._data.astype(self._data.dtype), FILL_TENSOR, (self, value), overlap=False
        )
    return apply(
        self,
        np.asarray(value).astype(self._data.dtype),
        FILL_SCALAR,
        (self,),
        {"value": value},
        fill=True,
    )


@export(methods=("copy_",))
def copy_(self, src, non_blocking=False):
    """self.copy_(src): CopyBackwards; src is broadcast and cast to self's shape and dtype."""
    if not isinstance(src, Tensor):
        src = _wrap(
            src.astype(self._data.dtype)
            if type(src) in devices.DEVICE_TYPES
            else np.asarray(src, self._data.dtype)
        )
    sd = src._data
    _check_shapes(self, sd.shape)
    if DUAL.on and any_tangent((self, src)):
        new_tangent = forward_ad.copied(self, src)
        DUAL.on = False
        try:
            copy_(self, src, non_blocking)
        finally:
            DUAL.on = True
        forward_ad.store(self, new_tangent, shape_ops.apply_steps)
        return self
    _check_inference(self, sd)
    recording = _recording(self, (src,))
    refuse_partial_overlap(self, (src,))
    if not recording:
        _write(self, sd)
        return self
    old_edge = self._edge() if self._requires_grad else NONE_EDGE
    old_fn, old_nr = self._grad_fn, self._output_nr
    src_edge = src._edge() if src._requires_grad else NONE_EDGE
    _write(self, sd)
    node = CopyBackwards(
        (old_edge, src_edge),
        self._data.shape,
        src.dtype,
        sd.shape,
        sd if type(sd) is not np.ndarray else None,
    )
    self._grad_fn = node
    self._output_nr = 0
    self._requires_grad = True
    _move_retained(self, old_fn, old_nr)
    if self._base is not None:
        _attach_to_base(self)
    return self


@export(methods=("masked_fill_",))
def masked_fill_(self, mask, value):
    m = index_array(mask)
    if isinstance(value, Tensor) and value._data.ndim == 0 and not value._requires_grad:
        value = value.item()
    v = value._data if isinstance(value, Tensor) else value
    if type(m) is not type(self._data) or (type(v) is not type(self._data) and hasattr(v, "dtype")):
        devices.check_same(m, v, self._data)
    data = _result(np.where(m, v, self._data), self._data.dtype)
    return apply(self, data, MASKED_FILL, (m, value, self), self_pos=2, fill=True)


@export(methods=("index_put_",))
def index_put_(self, indices, values, accumulate=False, *, _overlap=True):
    """self[indices] = values (or += with accumulate): IndexPutBackward0. (`_overlap`: for
    index_fill_, whose value torch reads first, as fill_'s.)"""
    if isinstance(indices, list):
        indices = tuple(indices)
    if not isinstance(indices, tuple):
        indices = (indices,)
    key = tuple(index_array(i) if isinstance(i, (Tensor, list, np.ndarray)) else i for i in indices)
    if (
        key
        and all(isinstance(k, np.ndarray) and k.dtype == np.bool_ for k in key)
        and len(key) == 1
    ):
        key = np.nonzero(key[0])
    if not isinstance(values, Tensor):
        values = _wrap(
            devices.to_device(np.asarray(values, self._data.dtype), self.device)
            if type(values) not in devices.DEVICE_TYPES
            else values
        )
    elif type(values._data) is not type(self._data):
        values = _same_device_value(values, self)
    vd = (
        values._data.astype(self._data.dtype)
        if values._data.dtype != self._data.dtype
        else values._data
    )
    data = ops_nn.index_put(self._data, vd, key, accumulate)
    return apply(
        self,
        data,
        INDEX_PUT,
        (self, values),
        {"index": key, "accumulate": accumulate},
        overlap=_overlap,
    )


def _same_device_value(values, self):
    """A value written into self from another device: a 0-d CPU tensor moves (as in torch)."""
    if values._data.ndim == 0 and type(values._data) is np.ndarray:
        return values.to(self.device)
    devices.check_same(self._data, values._data)
    return values


@export(methods=("index_add_",))
def index_add_(self, dim, index, source, *, alpha=1):
    axis = dim % self._data.ndim
    key = (slice(None),) * axis + (index_array(index).reshape(-1),)
    if alpha != 1:
        source = source * alpha
    if type(source._data) is not type(self._data):
        devices.check_same(self._data, source._data)
    sd = source._data.astype(self._data.dtype)
    data = ops_nn.index_put(self._data, sd, key, True)
    return apply(self, data, INDEX_ADD, (self, source), {"index": key, "accumulate": True})


@export(methods=("index_fill_",))
def index_fill_(self, dim, index, value):
    axis = dim % self._data.ndim
    key = (slice(None),) * axis + (index_array(index).reshape(-1),)
    return index_put_(self, key, value, _overlap=False)


@export(methods=("scatter_",))
def scatter_(self, dim, index, src, reduce=None):
    idx = index_array(index)
    key = along_index(idx, dim % self._data.ndim, self._data.ndim)
    if not isinstance(src, Tensor):
        src = _wrap(devices.make(self.device, "full", idx.shape, src, self._data.dtype))
    elif src._data.shape != idx.shape:
        src = src[tuple(slice(0, n) for n in idx.shape)]
    return index_put_(self, key, src, accumulate=reduce == "add")


@export(methods=("scatter_add_",))
def scatter_add_(self, dim, index, src):
    return scatter_(self, dim, index, src, reduce="add")


# --- random fills (data only, like torch's nn.init under no_grad) --------------------------------


def _random_fill(self, data):
    _check_inference(self, data)
    _recording(self, ())  # raises torch's error for a leaf that requires grad
    _write(self, data)
    return self


@export(methods=("uniform_",))
def uniform_(self, a=0.0, b=1.0, *, generator=None):
    return _random_fill(self, numpy_rng(generator).uniform(a, b, self._data.shape))


@export(methods=("normal_",))
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    return _random_fill(self, numpy_rng(generator).normal(mean, std, self._data.shape))


@export(methods=("bernoulli_",))
def bernoulli_(self, p=0.5, *, generator=None):
    return _random_fill(self, numpy_rng(generator).random(self._data.shape) < p)


@export(methods=("random_",))
def random_(self, low=0, high=None, *, generator=None):
    if high is None:
        low, high = 0, low if low else 2**24
    return _random_fill(self, numpy_rng(generator).integers(low, high, self._data.shape))


@export(methods=("exponential_",))
def exponential_(self, lambd=1.0, *, generator=None):
    return _random_fill(self, numpy_rng(generator).exponential(1.0 / lambd, self._data.shape))


# --- Python's augmented assignment ---------------------------------------------------------------


def iadd(self, other):
    return add_(self, other)


def isub(self, other):
    return sub_(self, other)


def imul(self, other):
    return mul_(self, other)


def itruediv(self, other):
    return div_(self, other)


def ipow(self, other):
    return pow_(self, other)


def imod(self, other):
    return remainder_(self, other)


def ifloordiv(self, other):
    return floor_divide_(self, other)


def imatmul(self, other):
    return copy_(self, _tensor_math.matmul(self, other))


def iand(self, other):
    return copy_(self, _tensor_math.bitwise_and(self, other))


def ior(self, other):
    return copy_(self, _tensor_math.bitwise_or(self, other))


def ixor(self, other):
    return copy_(self, _tensor_math.bitwise_xor(self, other))


@export(methods=("bitwise_left_shift_",))
def ilshift(self, other):
    result = _tensor_math.bitwise_left_shift(self, other)
    _check_cast(self, result._data.dtype)
    return copy_(self, result)


@export(methods=("bitwise_right_shift_",))
def irshift(self, other):
    result = _tensor_math.bitwise_right_shift(self, other)
    _check_cast(self, result._data.dtype)
    return copy_(self, result)


_round0_ = _unary_("round0")


@export(methods=("round_",))
def round_(self, *, decimals=0):
    return copy_(self, _tensor_math.round(self, decimals=decimals)) if decimals else _round0_(self)


# --- x[index] = value ------------------------------------------------------------------------


def setitem(input, index, value):
    """x[index] = value: copy_ into the view (CopySlices), or index_put_ for array indices."""
    result, key = shape_ops.decompose_index(input, index)
    if key is None:
        # an index that selects all of input writes into input itself, as in torch
        _copy_to(result, value)
        return
    index_put_(result, key, value)


def _copy_to(dst, value):
    """torch's copy_to for `dst[...] = value`: copy_ of the same shape, fill_ of a single value
    (a number or a 0-d tensor: FillBackward3), else copy_ of value viewed and expanded."""
    if not isinstance(value, Tensor):
        if isinstance(value, (bool, int, float, complex)):
            value = _wrap(devices.to_device(np.asarray(value, dst._data.dtype), dst.device))
        elif isinstance(value, (list, tuple)):
            raise TypeError(
                f"can't assign a {type(value).__name__} to a torch.{dst.dtype._tensor_type}"
            )
        else:
            value = as_tensor(value)
    shape = dst._data.shape
    vshape = value._data.shape
    if vshape == shape:
        copy_(dst, value)
    elif not vshape and type(value._data) is np.ndarray:
        fill_(dst, value)
    else:
        lead = 0
        while lead < len(vshape) and vshape[lead] == 1:
            lead += 1
        src = shape_ops.view(value, vshape[lead:])
        if len(src._data.shape) > len(shape):
            raise RuntimeError(
                f"expand(torch.{value.dtype._tensor_type}{{{list(src.shape)}}}, "
                f"size={list(shape)}): the number of sizes provided "
                f"({len(shape)}) must be greater or equal to the number of "
                f"dimensions in the tensor ({len(src._data.shape)})"
            )
        copy_(dst, shape_ops.expand(src, shape))


# --- in-place view ops: self takes another shape (unsqueeze_, squeeze_, transpose_, t_) --------

UNSQUEEZE_ = OpSpec("UnsqueezeBackward1", "expand_dims", n_arrays=1)
SQUEEZE_ = (
    OpSpec("SqueezeBackward3", "squeeze", n_arrays=1),
    OpSpec("SqueezeBackward4", "squeeze", n_arrays=1),
    OpSpec("SqueezeBackward5", "squeeze", n_arrays=1),
)
TRANSPOSE_ = OpSpec("TransposeBackward1", "swapaxes", n_arrays=1)
T_ = OpSpec("TBackward1", "T")


def _become(self, view):
    """Self takes the shape and strides of `view` (a view of self made by the op's out-of-place
    form, its node the in-place one's): its data, grad_fn and, for a view, its view steps;
    its version is bumped, as torch's in-place view ops do."""
    self._data = view._data
    if view._grad_fn is not None:
        self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
        self._requires_grad = True
    vc = self._get_vc()
    vc.value += 1
    if self._base is not None:
        self._extra = view._extra
        self._extra.fn_version = vc.value
    return self


def _check_leaf(self):
    if STATE.enabled and self._base is None and self._grad_fn is None and self._requires_grad:
        raise RuntimeError(messages.LEAF_INPLACE)


@export(methods=("unsqueeze_",))
def unsqueeze_(self, dim):
    _check_leaf(self)
    return _become(self, shape_ops.unsqueezed(self, dim, UNSQUEEZE_))


@export(methods=("squeeze_",))
def squeeze_(self, dim=None):
    _check_leaf(self)
    return _become(self, shape_ops.squeezed(self, dim, SQUEEZE_))


@export(methods=("transpose_", "swapdims_", "swapaxes_"))
def transpose_(self, dim0, dim1):
    _check_leaf(self)
    return _become(self, shape_ops.transposed(self, dim0, dim1, TRANSPOSE_))


@export(methods=("t_",))
def t_(self):
    _check_leaf(self)
    return _become(self, shape_ops.t_view(self, T_))
