"""Custom differentiable functions: `sourcegrad.autograd.Function`, as torch's.

Subclass `Function` with static `forward(ctx, *args)` and `backward(ctx, *grads)`
(or `forward(*args)` plus `setup_context(ctx, inputs, output)`), and call
`MyFn.apply(*args)`. The `ctx` *is* the node: each Function class gets a node
class named `<Name>Backward`, so `out.grad_fn` is the ctx that forward filled
in, with `saved_tensors`, `needs_input_grad` and any attribute forward set.

As in torch: forward runs with grad mode off; backward runs with grad mode on
only under create_graph; backward returns one gradient per forward input (None
for non-tensors; extra trailing Nones are tolerated), checked for count, type
and shape with torch's messages. `mark_dirty`, `mark_non_differentiable`,
`set_materialize_grads` and `@once_differentiable` behave as torch documents.

Imports: `node`, `tensor`, the leaves and `sourcegrad.runtime`.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..runtime import unbroadcast
from . import devices, messages
from .dual_state import DUAL, any_tangent, set_tangent, tangent_of
from .grad_mode import STATE, no_grad
from .node import NONE_EDGE, ErrorNode, Meta, Node, check_saved, meta_of, version_of
from .tensor import Tensor

_wrap = Tensor._make


class FunctionCtx:
    """What forward can tell backward: saved tensors, dirty and non-differentiable outputs."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} "
                    f"is of type {type(t).__name__}"
                )
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self._materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self.__dict__.get("_in_jvp"):  # in jvp: what forward saved with save_for_forward
            return tuple(self.__dict__.get("_saved_for_forward", ()))
        if self._released:
            raise RuntimeError(messages.BACKWARD_TWICE)
        saved = self._saved
        if saved is None:
            return ()
        out = []
        for t, v in zip(saved, self._saved_versions):
            if type(t) is _SavedOutput:
                t = t.unpack(self, v)
            elif t is not None:
                check_saved(t, v)
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors


class _SavedOutput:
    """An output of forward saved for backward: kept as data, unpacked as a new tensor.

    Keeping the output Tensor itself would tie the node and its output in a
    reference cycle; torch likewise hands back a fresh tensor whose grad_fn is
    the node.
    """

    __slots__ = ("data", "vc", "output_nr", "fw")

    def __init__(self, tensor, output_nr):
        self.data = tensor._data
        self.vc = tensor._get_vc()
        self.output_nr = output_nr
        self.fw = None  # (level epoch, the output's tangent), for forward over reverse

    def unpack(self, node, expected):
        t = _wrap(self.data)
        t._grad_fn = node
        t._output_nr = self.output_nr
        t._requires_grad = True
        t._vc = self.vc
        check_saved(t, expected)
        if self.fw is not None and DUAL.level is not None and self.fw[0] == DUAL.epoch:
            set_tangent(t, self.fw[1])
        return t


class BackwardCFunction(Node, FunctionCtx):
    """The node of one application of a custom Function (and its ctx)."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self, ())
        self._to_save = None
        self._saved = None
        self._saved_versions = ()
        self._released = False
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._input_is_tensor = ()
        self._input_metas = ()
        self._out_metas = ()
        self.needs_input_grad = ()

    def __repr__(self):
        return f"<torch.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    def release(self):
        if self._saved is not None:
            self._saved = None
            self._released = True

    def apply(self, grads):
        cls = self._forward_cls
        name = type(self).__name__
        create = STATE.enabled
        user_grads = []
        for i, meta in enumerate(self._out_metas):
            g = grads[i] if i < len(grads) else None
            if g is None and self._materialize_grads and meta is not None:
                g = meta.zeros()
            if g is not None and not isinstance(g, Tensor):
                g = _wrap(g.copy() if not devices.writeable(g) else g)
            user_grads.append(g)
        backward_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
        result = backward_fn(self, *user_grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self._input_is_tensor)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(result)})"
            )
        out = []
        k = 0
        for i, (r, is_tensor) in enumerate(zip(result, self._input_is_tensor)):
            if not is_tensor:
                if r is not None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None "
                        f"at position {i + 1}, but the corresponding forward input "
                        "was not a Variable"
                    )
                continue
            meta = self._input_metas[k]
            k += 1
            if r is None:
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if (
                type(r._data) in devices.DEVICE_TYPES or meta.array_type is not np.ndarray
            ) and not devices.same_place(r._data, meta.device):
                raise RuntimeError(
                    f"Function {name} returned an invalid gradient at index {i} - "
                    f"expected device {meta.device} but got {r.device}"
                )
            if r._data.shape != meta.shape:
                r = _sum_to(r, meta.shape, name, i)
            if r._data.dtype != meta.dtype:
                r = r.to(Tensor._dtype_of_np(meta.dtype))
            out.append(r if create else r._data)
        return out


def _sum_to(r, shape, name, index):
    """A gradient whose shape is an expansion of the input's is summed back to it."""
    try:
        ok = np.broadcast_shapes(shape, r._data.shape) == r._data.shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"Function {name} returned an invalid gradient at index {index} - got "
            f"{messages.shape_text(r._data.shape)} but expected shape compatible "
            f"with {messages.shape_text(shape)}"
        )
    return unbroadcast(r, Meta(tuple(shape), r._data.dtype))


class FunctionMeta(type):
    """Gives every Function subclass its node class, `<Name>Backward`."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = cls.__module__
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd functions (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions "
            "are all static, so you should invoke them on the class itself. "
            "Instantiating an autograd function will raise an error in a future version "
            "of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(messages.LEGACY_FUNCTION)

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(messages.FUNCTION_NO_BACKWARD)

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom "
            "autograd.Function to use it with forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            import inspect

            params = list(inspect.signature(cls.forward).parameters)
            if cls.setup_context is Function.setup_context:
                params = params[1:]
            bound = dict(zip(params, args))
            bound.update(kwargs)
            args = tuple(bound[p] for p in params if p in bound)
        ctx = cls._backward_cls()
        recording = STATE.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx.needs_input_grad = tuple(
            recording and isinstance(a, Tensor) and a._requires_grad for a in args
        )
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        result = _process_outputs(ctx, args, output, recording)
        if DUAL.on and any_tangent(args):
            _forward_tangents(cls, ctx, args, result)
        return result


def _forward_tangents(cls, ctx, args, result):
    """Forward-mode AD through a custom Function: its `jvp(ctx, *tangents)` (zeros for a
    Tensor input without one), or torch's NotImplementedError when it has none."""
    tangents = []
    for a in args:
        t = tangent_of(a) if isinstance(a, Tensor) else None
        if t is None and isinstance(a, Tensor):
            t = _wrap(devices.xp_of(a._data).zeros_like(a._data))
        tangents.append(t)
    DUAL.on = False
    ctx._in_jvp = True
    try:
        out_tangents = cls.jvp(ctx, *tangents)
    finally:
        DUAL.on = True
        ctx._in_jvp = False
    outs = result if isinstance(result, tuple) else (result,)
    out_tangents = out_tangents if isinstance(out_tangents, tuple) else (out_tangents,)
    for o, t in zip(outs, out_tangents):
        if isinstance(o, Tensor) and t is not None and o._data.dtype.kind in "fc":
            set_tangent(o, t)
    for saved in getattr(ctx, "_saved", None) or ():  # saved outputs keep their tangents
        if isinstance(saved, _SavedOutput):
            t = tangent_of(outs[saved.output_nr])
            saved.fw = (DUAL.epoch, t) if t is not None else None


def _process_outputs(ctx, args, output, recording):
    is_tuple = isinstance(output, tuple)
    outputs = output if is_tuple else (output,)
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    if not recording:
        for t in ctx._dirty:
            t._get_vc().value += 1
        return output
    ctx.next_functions = tuple(
        a._edge() if a._requires_grad else NONE_EDGE for a in args if isinstance(a, Tensor)
    )
    ctx._input_is_tensor = tuple(isinstance(a, Tensor) for a in args)
    ctx._input_metas = tuple(meta_of(a._data) for a in args if isinstance(a, Tensor))
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    results = []
    metas = []
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            results.append(o)
            metas.append(None)
            continue
        metas.append(meta_of(o._data))
        differentiable = id(o) not in non_diff and o._data.dtype.kind in "fc"
        if id(o) in dirty:
            if o._grad_fn is None and o._requires_grad:
                raise RuntimeError(messages.LEAF_DIRTY)
            o._get_vc().value += 1
        elif id(o) in inputs or o._grad_fn is not None or o._requires_grad:
            # an input returned as is becomes a new tensor on the same storage
            shared = _wrap(o._data)
            shared._vc = o._get_vc()
            o = shared
        if differentiable:
            o._grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
        results.append(o)
    ctx._out_metas = tuple(metas)
    saved = ctx._to_save
    if saved is not None:
        returned = {
            id(o): i
            for i, (o, r) in enumerate(zip(outputs, results))
            if isinstance(r, Tensor) and r._grad_fn is ctx
        }
        ctx._saved_versions = tuple(version_of(t) if t is not None else None for t in saved)
        ctx._saved = tuple(
            _SavedOutput(results[returned[id(t)]], returned[id(t)])
            if t is not None and id(t) in returned
            else t
            for t in saved
        )
        for t in saved:
            if t is not None and t._inference and not STATE.inference:
                raise RuntimeError(messages.INFERENCE_SAVED)
        ctx._to_save = None
    return tuple(results) if is_tuple else results[0]


def once_differentiable(fn):
    """Run backward under no_grad; a second derivative through it is an error (torch's)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        edges = tuple(
            a._edge() if a._requires_grad else NONE_EDGE for a in args if isinstance(a, Tensor)
        )
        err = ErrorNode(edges, messages.ONCE_DIFFERENTIABLE)
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        wrapped = []
        for o in tup:
            if isinstance(o, Tensor):
                t = _wrap(o._data)
                t._grad_fn = err
                t._requires_grad = True
                wrapped.append(t)
            else:
                wrapped.append(o)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]

    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass
