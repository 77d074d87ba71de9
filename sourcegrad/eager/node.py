"""Graph nodes: the `grad_fn` objects the engine runs backwards.

* `Node` is the base (`sourcegrad.autograd.graph.Node`): `next_functions`,
  `name()`, hooks, `metadata`.
* `AccumulateGrad` ends every path at a leaf and adds the gradient into `.grad`.
* `RuleNode` is every op's node. It holds what the op's rule needs (see
  `spec.py`) and runs the rule's VJP lambdas from `sourcegrad.ops`, one per input
  that needs a gradient. On the plain path the lambdas get numpy arrays; under
  `create_graph=True` they get Tensors, so the backward is itself recorded.
* The C++ special nodes of torch (`CopySlices`, `CopyBackwards`, `Error`,
  `NotImplemented`) are written out here, since no rule describes them.

Saved values: a Tensor saved by value records its version counter, and backward
refuses to use it once an in-place op has bumped that counter. What an op keeps
only for its shape is kept as a `Meta` (shape and dtype, no data), which is why
`x + 1` saves nothing and can be backpropagated twice, as in torch.

Imports: `tensor`, the leaves, `gpu_helpers` and `sourcegrad.runtime`; never an op
module (the engine and the ops import this one).

Why one module: the graph node and everything it holds (saved values and their version
checks, hooks, the view replay) is one object.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from ..runtime import unbroadcast
from ..runtime import unindex as host_unindex
from . import devices, gpu_helpers, messages
from .anomaly import ANOMALY
from .dual_state import DUAL, set_tangent
from .grad_mode import STATE
from .hooks import add_hook
from .tensor import Tensor

SEQ = itertools.count()
_GPU = devices.DEVICE_TYPES  # cupy.ndarray, once CuPy is loaded
_ndarray = np.ndarray
NONE_EDGE = (None, 0)

# RuleNode._state values
LIVE_SAVED, LIVE_NOTHING_SAVED, RELEASED = 0, 1, 2


def _wrap(data, **kwargs):
    return Tensor._make(data, **kwargs)


class HookSet:
    """The hooks and metadata of one node, created the first time one is registered."""

    __slots__ = ("pre", "post", "tensor", "retained", "metadata")

    def __init__(self):
        self.pre = {}  # fn(grad_outputs) -> new grad_outputs or None
        self.post = {}  # fn(grad_inputs, grad_outputs) -> new grad_inputs or None
        self.tensor = {}  # output_nr -> {id: fn(grad)}: hooks registered on the output tensor
        self.retained = {}  # output_nr -> weakref of a non-leaf output that retains its grad
        self.metadata = None


class Node:
    """A step of the backward graph (torch.autograd.graph.Node)."""

    __slots__ = ("next_functions", "_seq", "_hookset", "__weakref__")
    _cpp_name = None  # the fully qualified name torch gives its C++ special nodes
    # whether tensor hooks may live outside `_hookset` (a leaf's are on the leaf itself);
    # the engine skips its hook step for nodes with neither
    _hooks_on_variable = False
    # the engine calls release() after a node runs only while this is LIVE_SAVED: always, for
    # every node but a RuleNode, whose own slot says whether it still holds saved values (a
    # call per node otherwise, for the nodes that keep nothing: add's, sub's)
    _state = LIVE_SAVED

    def __init__(self, next_functions=()):
        self.next_functions = next_functions
        self._seq = next(SEQ)
        self._hookset = None

    def name(self) -> str:
        return self._cpp_name or type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        hs = self._hooks()
        if hs.metadata is None:
            hs.metadata = {}
        return hs.metadata

    def _hooks(self) -> HookSet:
        if self._hookset is None:
            self._hookset = HookSet()
        return self._hookset

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; it may return new grad_inputs."""
        return add_hook(self._hooks().post, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; it may return new grad_outputs."""
        return add_hook(self._hooks().pre, fn)

    def _register_hook_dict(self, tensor):  # torch API surface; hooks live in the HookSet
        return None

    def _sequence_nr(self) -> int:
        return self._seq

    @property
    def requires_grad(self) -> bool:
        return True

    def tensor_hooks(self, output_nr):
        """Hooks registered on the tensor this node produced as output `output_nr`."""
        hs = self._hookset
        if hs is None:
            return None
        hooks = hs.tensor.get(output_nr)
        return list(hooks.values()) if hooks else None

    def apply(self, grads):
        """Gradients for next_functions, given the gradients of this node's outputs."""
        raise NotImplementedError

    def release(self):
        """Free what was saved for backward (called after a backward without retain_graph)."""

    def __call__(self, *grads):
        """Run this node alone, as `grad_fn(grad)` does in torch."""
        results = self.apply(list(grads))
        return results[0] if len(results) == 1 else tuple(results)


class AccumulateGrad(Node):
    """Adds the gradient reaching a leaf into its `.grad` (in place once `.grad` exists)."""

    __slots__ = ("variable",)
    _cpp_name = "torch::autograd::AccumulateGrad"
    _hooks_on_variable = True

    def __init__(self, variable):
        super().__init__(())
        # Accumulators run as soon as they are ready, as in torch (highest priority)
        self._seq = float("inf")
        self.variable = variable

    def tensor_hooks(self, output_nr):
        hooks = self.variable._hook_dict(create=False)
        return list(hooks.values()) if hooks else None

    def apply(self, grads):
        g = grads[0]
        var = self.variable
        if g is None:
            return ()
        np_dtype = var._data.dtype
        if isinstance(g, Tensor):
            # create_graph: the gradient is part of a graph; accumulate out of place
            if g.dtype.dtype != np_dtype:
                g = g.to(var.dtype)
            if var._grad is None:
                var._grad = _copy_backwards(g) if g._requires_grad else g.detach().clone()
            else:
                var._grad = var._grad + g
        else:
            if g.shape != var._data.shape:
                g = (
                    np.broadcast_to(g, var._data.shape)
                    if g.size == 1
                    else g.reshape(var._data.shape)
                )
            current = var._grad
            if current is None:
                # always an owned, writable copy: the same array may flow to several leaves;
                # laid out as the leaf is where it is contiguous either way (torch's layout
                # contract: a C-contiguous weight's .grad is C-contiguous, whatever the
                # strides of the gradient that reached it)
                if type(g) is np.ndarray:
                    flags = var._data.flags
                    order = "C" if flags.c_contiguous else ("F" if flags.f_contiguous else "K")
                    var._grad = _wrap(np.array(g, dtype=np_dtype, copy=True, order=order))
                else:
                    var._grad = _wrap(devices.xp_of(g).array(g, dtype=np_dtype, copy=True))
            elif current._requires_grad:
                var._grad = current + _wrap(g)
            else:
                np.add(current._data, g, out=current._data, casting="unsafe")
        hooks = var._post_hook_dict(create=False)
        if hooks:
            for fn in list(hooks.values()):
                # torch refuses a result (one that meant to replace .grad would be lost)
                if fn(var) is not None:
                    raise RuntimeError(messages.POST_HOOK_RETURNED)
        return ()


def _copy_backwards(g):
    """What create_graph stores in `.grad`: a copy of g whose grad_fn is CopyBackwards."""
    out = _wrap(g._data.copy())
    node = CopyBackwards(
        (NONE_EDGE, _edge(g)),
        g._data.shape,
        g.dtype,
        g._data.shape,
        g._data if type(g._data) is not np.ndarray else None,
    )
    out._grad_fn = node
    out._requires_grad = True
    return out


def _edge(t):
    return t._edge()


class Meta:
    """Shape and dtype of a value that a rule reads only for its shape (no data kept).

    numpy's `np.shape`/`np.ndim`/`np.size` read the attributes, and `np.zeros_like`
    reads `__array__`, which gives a zero-stride array of the right shape and dtype.
    Under create_graph it becomes a Tensor of the same kind (`proxy`).
    """

    __slots__ = ("shape", "dtype", "ndim", "size")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)
        size = 1
        for n in shape:
            size *= n
        self.size = size

    # what the arrays of this Meta's device are; the engine's gradients are made of these
    array_type = np.ndarray
    device = devices.CPU

    def __array__(self, dtype=None, copy=None):
        return np.broadcast_to(np.zeros((), dtype or self.dtype), self.shape)

    def proxy(self):
        return _wrap(self.__array__())

    def zeros(self, dtype=None):
        """A zero gradient of this shape (and dtype), on this Meta's device."""
        return np.zeros(self.shape, dtype or self.dtype)

    def asarray(self, value):
        """`value` (a number or an array on any device) as an array on this Meta's device."""
        return devices.host(value)

    def like(self, shape, dtype):
        """A Meta of another shape and dtype on the same device."""
        return Meta(tuple(shape), dtype)

    def __repr__(self):
        return f"Meta({self.shape}, {self.dtype})"


class DeviceMeta(Meta):
    """A Meta of an array on a GPU: what numpy functions make from it is made there too.

    `np.zeros_like(meta)`, `np.shape(meta)` and the other functions the rules call on a
    value read for its shape reach `__array_function__`, which answers them with CuPy
    (numpy's own answer, through `__array__`, would be a host array).
    """

    __slots__ = ("xp", "array_type", "device")

    def __init__(self, shape, dtype, xp, array_type, dev):
        super().__init__(shape, dtype)
        self.xp = xp
        self.array_type = array_type
        self.device = dev

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"a value on {self.device} was read as a host array")

    def _stand_in(self, dtype=None):
        with devices.using(self.device):
            return self.xp.broadcast_to(self.xp.zeros((), dtype or self.dtype), self.shape)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if args and args[0] is self:
            if name == "shape":
                return self.shape
            if name == "ndim":
                return self.ndim
            if name == "size" and len(args) == 1 and not kwargs.get("axis"):
                return self.size
            if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
                shape = kwargs.get("shape") or self.shape
                dtype = kwargs.get("dtype") or self.dtype
                with devices.using(self.device):
                    if name == "full_like":
                        fill = args[1] if len(args) > 1 else kwargs["fill_value"]
                        return self.xp.full(shape, fill, dtype)
                    return getattr(self.xp, name[:-5])(shape, dtype)
        args = tuple(self._stand_in() if a is self else a for a in args)
        return func(*args, **kwargs)

    def proxy(self):
        return _wrap(self._stand_in())

    def zeros(self, dtype=None):
        with devices.using(self.device):
            return self.xp.zeros(self.shape, dtype or self.dtype)

    def asarray(self, value):
        if type(value) is self.array_type and devices.same_place(value, self.device):
            return value
        return devices.to_device(value, self.device)

    def like(self, shape, dtype):
        return DeviceMeta(tuple(shape), dtype, self.xp, self.array_type, self.device)

    def __repr__(self):
        return f"Meta({self.shape}, {self.dtype}, device='{self.device}')"


METAS: dict = {}


def meta_of(data) -> Meta:
    """The (shared, cached) Meta of an array."""
    if type(data) is not np.ndarray:
        return _device_meta(data)
    key = (data.shape, data.dtype)
    m = METAS.get(key)
    if m is None:
        m = METAS[key] = Meta(data.shape, data.dtype)
    return m


_DEVICE_METAS: dict = {}


def _device_meta(data) -> Meta:
    dev = devices.device_of(data)
    key = (data.shape, data.dtype, dev)
    m = _DEVICE_METAS.get(key)
    if m is None:
        if dev.type == "cpu":  # not an array type sourcegrad knows: treat it as numpy would
            return Meta(np.shape(data), np.result_type(data))
        m = _DEVICE_METAS[key] = DeviceMeta(
            data.shape, data.dtype, devices.xp_of(data), type(data), dev
        )
    return m


def meta_like(g, shape, dtype) -> Meta:
    """A Meta on the device of array (or Tensor) `g`."""
    data = g._data if isinstance(g, Tensor) else g
    if type(data) is np.ndarray:
        return Meta(tuple(shape), dtype)
    return meta_of(data).like(shape, dtype)


def version_of(t) -> int:
    vc = t._vc
    return vc.value if vc is not None else 0


def modified_error(dtype, shape, expected, current, output_text):
    return RuntimeError(
        messages.MODIFIED_INPLACE.format(
            type="torch." + dtype._tensor_type,
            shape=messages.shape_text(shape),
            output=output_text,
            version=current,
            expected=expected,
            hint=messages.ANOMALY_HINT if ANOMALY.enabled else messages.HINT,
        )
    )


def strip_backward(name: str) -> str:
    """A node as torch's messages name it: "MulBackward0" -> "Mul", "ClampBackward1" ->
    "Clamp1"; "torch::autograd::CopySlices" stays whole."""
    head, sep, tail = name.rpartition("Backward")
    if not sep or not (tail == "" or tail.isdigit()):
        return name
    return head if tail in ("", "0") else head + tail


def check_saved(t, expected, node=None):
    """Raise torch's error if saved tensor `t` was modified in place since it was saved."""
    current = version_of(t)
    if current != expected:
        if t._base is not None:
            # torch names the view's grad_fn as it is now (AsStrided), and a view it does
            # not let an in-place op change (an unbind output) raises that error instead
            t._refresh_view()
        fn = t._grad_fn
        out = (
            f", which is output {t._output_nr} of {strip_backward(fn.name())},"
            if fn is not None
            else ""
        )
        raise modified_error(t.dtype, t._data.shape, expected, current, out)


class RuleNode(Node):
    """The node of an op whose derivative is a rule of the table (`spec.OpSpec`).

    `_args` are the rule's array arguments as saved: a Tensor (kept by value, its
    version in `_versions`), a `Meta` (kept for its shape), a plain value, or None
    (not needed). `_ans` is the op's result when the rule reads it: either a Meta
    or `(data, version_counter, version)` (and a weak reference to the result's grad_fn
    when it is not this node), never the result Tensor itself, which would make a reference
    cycle.
    """

    __slots__ = ("_spec", "_args", "_versions", "_static", "_ans", "_metas", "_state", "_fw_ans")

    def apply(self, grads):
        g = grads[0]
        spec = self._spec
        passes = spec.passes
        if type(g) is not _ndarray or passes is None or STATE.enabled:
            return self._run(grads, False)
        # What `_run` does for a host gradient outside create_graph, the engine's
        # common case, without the steps that only matter on a GPU or under
        # create_graph. `passes`: a VJP that is `unbroadcast(g, x)` gives g itself
        # when g already has x's shape and dtype. (Module-level names, `is` before `==`
        # on dtypes and a counter in place of enumerate: this runs once per node.)
        if self._state == RELEASED:
            raise RuntimeError(messages.BACKWARD_TWICE)
        args = self._args if self._versions is None else self._unpack_args(False)
        ans = self._ans
        if type(ans) is tuple:  # a saved result (not a Meta): check its version
            ans = self._unpack_ans(False)
        static = self._static
        metas = self._metas
        edges = self.next_functions
        shape, dtype = g.shape, g.dtype  # (read once: each read of g.shape makes a tuple)
        results = []
        i = 0
        for vjp in spec.vjps:
            m = metas[i]
            if vjp is None or m is None or edges[i][0] is None:
                results.append(None)
            elif (
                passes[i]
                and shape == m.shape
                and (dtype is m.dtype or dtype == m.dtype)
                and m.array_type is _ndarray
            ):
                results.append(g)
            else:
                gi = vjp(g, ans, *args, **static) if static else vjp(g, ans, *args)
                results.append(_conform(gi, m, False))
            i += 1
        return results

    def _run(self, grads, every_input):
        """The VJPs of the inputs that need a gradient (all of them if `every_input`)."""
        if self._state == RELEASED:
            raise RuntimeError(messages.BACKWARD_TWICE)
        spec = self._spec
        create = STATE.enabled
        g = self._grad_output(grads, create)
        args = self._unpack_args(create)
        ans = self._unpack_ans(create)
        static = self._static
        on_gpu = type(g) in _GPU or (create and isinstance(g, Tensor) and type(g._data) in _GPU)
        if on_gpu:
            args, static = _for_gpu(args, static, g, create)
        results = []
        for i, vjp in enumerate(spec.vjps):
            if (
                vjp is None
                or self._metas[i] is None
                or (not every_input and self.next_functions[i][0] is None)
            ):
                results.append(None)
                continue
            if on_gpu:
                vjp = gpu_helpers.for_gpu(vjp)
            if spec.varargs:
                gi = (
                    vjp(g, ans, *args, argnum=i, **static)
                    if static
                    else vjp(g, ans, *args, argnum=i)
                )
            else:
                gi = vjp(g, ans, *args, **static) if static else vjp(g, ans, *args)
            results.append(_conform(gi, self._metas[i], create))
        return results

    def _grad_output(self, grads, create):
        return grads[0]

    def _unpack_args(self, create):
        args = self._args
        versions = self._versions
        if versions is None and not create:
            return args
        out = list(args)
        for i, a in enumerate(args):
            v = versions[i] if versions is not None else None
            if v is not None:
                check_saved(a, v, self)
                if not create:
                    out[i] = a._data
            elif create:
                if isinstance(a, Meta):
                    out[i] = a.proxy()
                elif type(a) is np.ndarray or type(a) in devices.DEVICE_TYPES:
                    out[i] = _wrap(a)
        return out

    def _unpack_ans(self, create):
        ans = self._ans
        if ans is None:
            return None
        if isinstance(ans, Meta):
            return ans.proxy() if create else ans
        data, vc, expected = ans[:3]
        if vc.value != expected:
            # a 4th entry: a weak reference to the grad_fn torch names while it lives (the
            # AsStridedBackward0 of a view changed in place), else torch names this node
            other = ans[3]() if len(ans) > 3 else None
            name = strip_backward((other if other is not None else self).name())
            raise modified_error(
                Tensor._dtype_of(data),
                data.shape,
                expected,
                vc.value,
                f", which is output 0 of {name},",
            )
        if not create:
            return data
        # torch unpacks a saved output as a tensor whose grad_fn is this very node
        t = _wrap(data)
        t._grad_fn = self
        t._requires_grad = True
        t._vc = vc
        if DUAL.level is not None:  # forward over reverse: the result's tangent, if it had one
            fw = getattr(self, "_fw_ans", None)
            if fw is not None and fw[0] == DUAL.epoch:
                set_tangent(t, fw[1])
        return t

    def release(self):
        if self._state == LIVE_SAVED:
            self._args = None
            self._ans = None
            self._state = RELEASED

    def _saved_value(self, key):
        if self._state == RELEASED:
            raise RuntimeError(messages.BACKWARD_TWICE)
        spec = self._spec
        if key == "result":
            ans = self._ans
            return None if ans is None or isinstance(ans, Meta) else _wrap(ans[0])
        index = {"self": 0, "other": 1, "exponent": 1}.get(key)
        if index is None and key in spec.names:
            index = spec.names.index(key)
        if index is None or index >= len(self._args):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '_saved_{key}'")
        value = self._args[index]
        return None if value is None or isinstance(value, Meta) else value


def expose_saved(names):
    """Give RuleNode torch's `_saved_<name>` attribute for each of `names` (`grad_fn._saved_self`,
    `_saved_other`, `_saved_result`, and the rule's parameter names: `OpSpec` passes its own):
    a property reading `_saved_value`, which raises AttributeError for a node whose spec has
    no such name. Properties, not a class `__getattr__`: CPython specialises no attribute read
    of a class that has one, and the engine reads each node's slots (a fifth of a backward
    through adds went to those reads)."""
    for name in names:
        attr = "_saved_" + name
        if attr not in RuleNode.__dict__:
            setattr(RuleNode, attr, property(lambda self, key=name: self._saved_value(key)))


expose_saved(("self", "other", "exponent", "result"))


class MultiRuleNode(RuleNode):
    """A RuleNode with several outputs (split, unbind): the rule's `g` is a list of gradients.

    Outputs that received no gradient get zeros, so the rule always sees one
    gradient per output; `_outs` keeps the outputs' Metas for that.
    """

    __slots__ = ("_outs",)

    def apply(self, grads):  # the rule's g is a list: no fast path
        return self._run(grads, False)

    def _unpack_ans(self, create):
        """The outputs as the rule reads them (a tuple), when it reads them: each checked for
        in-place changes since; under create_graph each a Tensor whose grad_fn is this node."""
        kept = self._ans
        if type(kept) is not list:
            return super()._unpack_ans(create)
        out = []
        for i, item in enumerate(kept):
            if isinstance(item, Meta):
                out.append(item.proxy() if create else item)
                continue
            data, vc, expected = item
            if vc.value != expected:
                raise modified_error(
                    Tensor._dtype_of(data),
                    data.shape,
                    expected,
                    vc.value,
                    f", which is output {i} of {strip_backward(self.name())},",
                )
            if create:
                t = _wrap(data)
                t._grad_fn = self
                t._output_nr = i
                t._requires_grad = True
                t._vc = vc
                data = t
            out.append(data)
        return tuple(out)

    def _grad_output(self, grads, create):
        out = []
        for i, m in enumerate(self._outs):
            g = grads[i] if i < len(grads) else None
            if g is None:
                g = m.zeros()
                if create:
                    g = _wrap(g)
            out.append(g)
        return out


def _for_gpu(args, static, g, create):
    """A node's rule arguments, ready for a rule run on the GPU.

    Plain path: Python numbers become 0-d arrays there, in g's dtype (the rules call
    numpy on them, `x ** np.where(y, y - 1, 1)` for `x ** 2`, which would give host
    arrays that CuPy refuses to mix with its own). Under create_graph: a GPU array the
    op kept as a static value (nll_loss's class weights) becomes a Tensor, as CuPy
    cannot be indexed by the Tensors it meets in the rule.
    """
    if create:
        if static:
            static = {k: _wrap(v) if type(v) in _GPU else v for k, v in static.items()}
        return args, static
    out = None
    for i, a in enumerate(args):
        t = type(a)
        if t is int or t is float:
            if out is None:
                out = list(args)
            out[i] = devices.xp_of(g).asarray(a, dtype=g.dtype if g.dtype.kind in "fc" else None)
    return (args if out is None else out), static


def _conform(gi, meta, create):
    """A VJP's result as a gradient for an input with `meta`: array type, dtype and shape."""
    if create:
        if not isinstance(gi, Tensor):
            gi = _wrap(meta.asarray(gi).astype(meta.dtype, copy=False))
        if type(gi._data) is not meta.array_type or meta.array_type is not np.ndarray:
            if not devices.same_place(gi._data, meta.device):
                gi = gi.to(meta.device)  # the input lives on another device: copy back
        if gi._data.dtype != meta.dtype:
            gi = gi.to(Tensor._dtype_of_np(meta.dtype))
        if gi._data.shape != meta.shape:
            gi = gi.expand(meta.shape) if gi._data.size == 1 else gi.reshape(meta.shape)
        return gi
    if type(gi) is not meta.array_type or meta.array_type is not np.ndarray:
        gi = meta.asarray(gi)
    if gi.dtype != meta.dtype:
        gi = gi.astype(meta.dtype)
    if gi.shape != meta.shape:
        gi = np.broadcast_to(gi, meta.shape) if gi.size == 1 else gi.reshape(meta.shape)
    return gi


_NODE_CLASSES: dict = {}


def node_class(name: str, base=RuleNode):
    """The node class called `name` (created once): type(grad_fn).__name__ is torch's name."""
    key = (name, base)
    cls = _NODE_CLASSES.get(key)
    if cls is None:
        cls = _NODE_CLASSES[key] = type(name, (base,), {"__slots__": ()})
    return cls


# --- torch's C++ special nodes ------------------------------------------------------------


def _zeros_like_grad(meta, create):
    z = meta.zeros()
    return _wrap(z) if create else z


class CopyBackwards(Node):
    """`dst.copy_(src)`: no gradient to what dst held before; src gets g, cast and summed to its shape."""

    __slots__ = ("_self_meta", "_src_meta")
    _cpp_name = "torch::autograd::CopyBackwards"

    def __init__(self, next_functions, self_shape, src_dtype, src_shape, src_data=None):
        super().__init__(next_functions)
        self._self_meta = Meta(tuple(self_shape), None)
        self._src_meta = (
            Meta(tuple(src_shape), src_dtype.dtype)
            if src_data is None
            else meta_like(src_data, src_shape, src_dtype.dtype)
        )

    def apply(self, grads):
        g = grads[0]
        create = isinstance(g, Tensor)
        self_grad = None
        if self.next_functions[0][0] is not None:
            dt = g.dtype.dtype if create else g.dtype
            self_grad = _zeros_like_grad(meta_like(g, self._self_meta.shape, dt), create)
        src_grad = None
        if self.next_functions[1][0] is not None:
            src_grad = _conform(unbroadcast(g, self._src_meta), self._src_meta, create)
        return [self_grad, src_grad]


class CopySlices(Node):
    """An in-place op on a view, seen from the view's base.

    `fn` is the in-place op's own node (CopyBackwards for `base[i] = v`, MulBackward0
    for `base[i].mul_(2)`, ...). The base's gradient passes through unchanged outside
    the view; inside it, it is replaced by what `fn` gives for the view's old values.
    The other inputs of `fn` get what `fn` gives them. `positions` holds, for each
    element of the view, its flat index in the base.
    """

    __slots__ = ("fn", "positions", "_base_meta", "_overlapping")
    _cpp_name = "torch::autograd::CopySlices"

    def __init__(self, base_edge, fn, positions, base_meta, overlapping=False):
        super().__init__((base_edge,) + tuple(fn.next_functions[1:]))
        self.fn = fn
        self.positions = positions
        self._base_meta = base_meta
        # a fill_ of an expanded view (several elements, one memory location): torch
        # records it and refuses its backward, which would write the view's gradient there
        self._overlapping = overlapping

    def apply(self, grads):
        if self._overlapping:
            raise RuntimeError(messages.INTERNAL_OVERLAP)
        g = grads[0]
        create = isinstance(g, Tensor)
        pos = self.positions
        # a C-ordered copy, so that `flat` is a view of it: a gradient arriving through a
        # transpose or an expand is not C-ordered, and writes into a reshaped copy of it would
        # be lost (the base would get the view's gradient twice)
        flat = g.reshape(-1).clone() if create else devices.contiguous_copy(g).reshape(-1)
        view_grad = flat[pos]
        if isinstance(self.fn, RuleNode):
            fn_grads = self.fn._run([view_grad], True)
        else:
            fn_grads = self.fn.apply([view_grad])
        first = fn_grads[0]
        # inside the view, the base's gradient is what fn gives the view's old values
        flat[pos] = 0.0 if first is None else first
        return [flat.reshape(self._base_meta.shape)] + list(fn_grads[1:])

    def release(self):
        self.fn.release()


class AsStridedBackward0(Node):
    """The grad_fn a view gets after an in-place op changed its base: scatter g into the base."""

    __slots__ = ("positions", "_base_meta")

    def __init__(self, base_edge, positions, base_meta):
        super().__init__((base_edge,))
        self.positions = positions
        self._base_meta = base_meta

    def apply(self, grads):
        g = grads[0]
        create = isinstance(g, Tensor)
        unindex = gpu_helpers.unindex if type(g._data if create else g) in _GPU else host_unindex
        m = self._base_meta
        dt = g.dtype.dtype if create else g.dtype
        flat = meta_like(g, (m.size,), dt)
        out = unindex(g, flat.proxy() if create else flat, self.positions)
        return [out.reshape(m.shape)]


class NotImplementedNode(Node):
    """An op torch records but cannot differentiate (`x // 2`): backward raises."""

    __slots__ = ("_op",)
    _cpp_name = "torch::autograd::NotImplemented"

    def __init__(self, next_functions, op):
        super().__init__(next_functions)
        self._op = op

    def apply(self, grads):
        raise RuntimeError(f"derivative for {self._op} is not implemented")


NotImplementedNode.__name__ = "NotImplemented"
NotImplementedNode.__qualname__ = "NotImplemented"


class ErrorNode(Node):
    """A node whose backward is an error (what @once_differentiable leaves behind)."""

    __slots__ = ("_message",)
    _cpp_name = "torch::autograd::Error"

    def __init__(self, next_functions, message):
        super().__init__(next_functions)
        self._message = message

    def apply(self, grads):
        raise RuntimeError(self._message)


ErrorNode.__name__ = "Error"
ErrorNode.__qualname__ = "Error"


def tensor_edge(t):
    """(node, output_nr) of tensor `t` in a graph: what next_functions lists for it.

    Installed as `Tensor._edge` by methods.py (the tensor module sits below this one). A
    leaf that requires grad gets its `AccumulateGrad`, shared by every use of it in a graph
    while one is alive (a weak reference on the tensor)."""
    if t._base is not None and t._extra.fn_version != t._vc.value:
        t._rebuild_view()  # inplace.refresh_view
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if not t._requires_grad:
        return NONE_EDGE
    acc = t._acc() if t._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return (acc, 0)
