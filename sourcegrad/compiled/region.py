"""A compiled region inside eager code (`sourcegrad.compile` of a numpy function).

`@sourcegrad.compile` on a numpy function makes it callable on Tensors: the call runs the
function's generated forward (plain numpy, no per-op graph) and adds ONE node to the eager
graph, `Compiled<name>Backward`, whose backward runs the generated backward code on the
residuals the forward kept. It composes with the rest of the eager graph: leaves and
accumulation, hooks, `no_grad` (under which no node is made), retain_graph and inputs that
need no gradient. (`module.compile` picks this for a numpy function; modules and
torch-style functions are rewritten into numpy functions first.)

`outputs` (the shapes of several arrays) is for a function returning them raveled end to
end, one vector (`module` makes such a function of a forward returning a tuple):
the node then has one output per array, and its backward joins their gradients into the
vector's cotangent.

The node is made directly (`RegionNode`, not through autograd.Function's machinery: a
training step of a small model makes one such node per call, and Function's general
bookkeeping cost as much as the generated code). It keeps the version of each Tensor
argument whose memory the backward reads (as torch saves a tensor for its backward) and
raises torch's error where one was modified in place before the backward. Unless the
backward retains the graph, the node hands the residuals to the generated backward
(`api.gradient.HandingVJP`), which frees each after its last use, as torch's backward frees
saved tensors: the backward's own arrays reuse that memory. Forward-mode AD
(a tangent on an argument) takes the autograd.Function, which has no jvp and raises
torch's error.
"""

from __future__ import annotations

import functools

import numpy as np

from ..api.gradient import HandingVJP
from ..eager import messages
from ..eager.dual_state import DUAL, any_tangent
from ..eager.grad_mode import STATE
from ..eager.node import ErrorNode, Node, check_saved, meta_of
from ..eager.tensor import Tensor
from ..errors import NonScalarOutputError


class CompiledRegion:
    def __init__(self, fn, backend="auto", outputs=None, name=None):
        from ..autograd import Function

        self.fn = fn
        self.backend = backend
        self.outputs = outputs
        self._vjps: dict = {}
        self.node_cls = None  # the node's class, named as `function`'s node
        functools.update_wrapper(self, fn, updated=())
        region = self

        def forward(ctx, wrt, *args):
            arrays = [_array(a) for a in args]
            value, pullback = region.vjp_for(wrt)(*arrays)
            ctx.pullback, ctx.wrt, ctx.count = pullback, wrt, len(args)
            if outputs is not None:
                return tuple(_tensor_like(v, args) for v in _split(value, outputs))
            return _tensor_like(value, args)

        def backward(ctx, *grad_outputs):
            if outputs is None:
                cotangent = grad_outputs[0].detach().numpy()
            else:  # (torch's Function gives zeros, not None, for an output not used)
                cotangent = np.concatenate([np.ravel(g.detach().numpy()) for g in grad_outputs])
            grads = ctx.pullback(cotangent)
            grads = grads if isinstance(grads, tuple) else (grads,)
            by_position = dict(zip(ctx.wrt, grads))
            out = [None]  # for `wrt`
            for i in range(ctx.count):
                g = by_position.get(i)
                out.append(None if g is None else _tensor_like(np.asarray(g), ()))
            return tuple(out)

        # a Function named after the user's function: its node is Compiled<Name>Backward
        self.function = type(
            f"Compiled{_camel(name or fn.__name__)}",
            (Function,),
            {"forward": staticmethod(forward), "backward": staticmethod(backward)},
        )

    def vjp_for(self, wrt):
        last = self._vjps.get(wrt)
        if last is None:
            last = self._vjps[wrt] = HandingVJP(self.fn, wrt, False, self.backend)
        self._last = last
        return last

    @property
    def source(self):
        """The generated forward and backward of the last call that made a node."""
        last = getattr(self, "_last", None)
        if last is None:
            return f"# {self.fn.__qualname__}: not called with inputs requiring grad yet\n"
        return last.source

    def __call__(self, *args):
        return self.keyed(args)

    def keyed(self, args, arrays=None, key=None):
        """The call on `args`; `arrays`: their arrays (a Tensor's data, others as they are)
        and `key` the `signature_key` of those, where the caller has them (a compiled
        module's call keys them to find its region), else None."""
        wrt = tuple([i for i, a in enumerate(args) if isinstance(a, Tensor) and a._requires_grad])
        if not wrt or not STATE.enabled:
            value = self.fn(*[_array(a) for a in args])
            if self.outputs is not None:
                return tuple(_tensor_like(v, args) for v in _split(value, self.outputs))
            if isinstance(value, (tuple, list, dict)):  # (as the node's VJP refuses it)
                raise NonScalarOutputError(
                    f"sourcegrad.compile: {self.fn.__qualname__} returns a "
                    f"{type(value).__name__}; a compiled region returns one array"
                )
            return _tensor_like(value, args)
        if DUAL.on and any_tangent(args):
            return self.function.apply(wrt, *args)
        return self.node(wrt, args, arrays, key)

    def node(self, wrt, args, arrays=None, key=None):
        """The forward on `args` (Tensors among them; those at `wrt` require grad), its
        outputs attached to one node (`RegionNode`); `arrays` and `key` as `keyed`'s."""
        if arrays is None:
            arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        vjp = self.vjp_for(wrt)
        if key is None or len(arrays) < len(vjp._params):  # (defaults to fill in: __call__)
            value, pullback = vjp(*arrays)
        else:
            value, pullback = vjp.keyed(key, tuple(arrays))
        saved = _read_tensors(args, pullback.residuals)
        pullback.residuals = None  # (the pullback holds them, for its backward to free)
        if self.node_cls is None:
            self.node_cls = type(
                self.function._backward_cls.__name__, (RegionNode,), {"__slots__": ()}
            )
        node = self.node_cls()
        node.pullback, node.saved = pullback, saved
        node.next_functions = tuple([args[i]._edge() for i in wrt])
        if self.outputs is None:
            outs = (_tensor_like(value, args),)
        else:
            outs = tuple(_tensor_like(v, args) for v in _split(value, self.outputs))
        node.metas = [meta_of(o._data) for o in outs]
        for i, o in enumerate(outs):
            o._grad_fn, o._output_nr, o._requires_grad = node, i, True
        return outs[0] if self.outputs is None else outs

    def __repr__(self):
        return f"<sourcegrad compiled region {self.fn.__qualname__}>"


def _split(value, shapes):
    """The arrays of `shapes` that the vector `value` holds end to end (views: `_tensor_like`
    copies each into a Tensor of its own)."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        parts.append(value[start : start + size].reshape(shape))
        start += size
    return parts


def _array(value):
    return value.detach().numpy() if isinstance(value, Tensor) else value


def _tensor_like(value, args):
    """A Tensor of its own holding `value` (a copy: the generated code may keep the array
    for its backward, or return an argument's), in the dtype of the first Tensor argument
    where both are floats of different kinds."""
    array = np.array(value, copy=True)
    if array.dtype.kind == "f":
        for a in args:
            if isinstance(a, Tensor):
                dtype = a._data.dtype
                if dtype != array.dtype and dtype.kind == "f":
                    array = array.astype(dtype)
                break
    return Tensor._make(array)


def _version(tensor):
    vc = tensor._vc
    return vc.value if vc is not None else 0


def _read_tensors(args, residuals):
    """[(tensor, version)] of the Tensor arguments whose memory the backward reads: that of
    an array among the residuals, or in the saved-value stacks (lists) among them
    (`_owner`). Run per call: a residual with no `base` (an argument's array, or one the
    forward made) costs one lookup, not `_owner`'s loop (a GPT's ~100 residuals: ~50 µs
    that way)."""
    owners = []
    for a in args:
        if isinstance(a, Tensor):
            data = a._data
            owners.append((a, id(data) if data.base is None else id(_owner(data))))
    ids = {owner for _, owner in owners}
    read, todo, ndarray = set(), list(residuals), np.ndarray
    while todo:
        r = todo.pop()
        if type(r) is ndarray or isinstance(r, ndarray):  # (the exact type first: cheaper)
            owner = id(r) if r.base is None else id(_owner(r))
            if owner in ids:
                read.add(owner)
        elif isinstance(r, (list, tuple)):
            todo.extend(r)
    return [(a, _version(a)) for a, owner in owners if owner in read]


def _owner(array):
    """The array owning `array`'s memory (numpy's `base` of a view of a view is the first
    one's base already; the loop is for a base that is itself a view, as from_dlpack's)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


_NOT_TWICE = (
    "sourcegrad.compile: the backward of {name} is generated numpy code and cannot be "
    "differentiated again (a second derivative through a compiled module or function); "
    "compute it without sourcegrad.compile"
)


class RegionNode(Node):
    """`pullback(cotangent)` gives the gradients of the arguments that require grad
    (its next_functions, in order); `saved` the Tensor arguments and their versions; `metas`
    the outputs' (an output the loss does not use gets a zero cotangent)."""

    __slots__ = ("pullback", "saved", "metas")

    def apply(self, grads):
        pullback = self.pullback
        if pullback is None:
            raise RuntimeError(messages.BACKWARD_TWICE)
        for tensor, version in self.saved:
            check_saved(tensor, version, self)
        retain = STATE.retain_graph
        if not retain:  # (the engine's release() after this call, done now: see below)
            self.release()
        gs = [
            m.zeros() if g is None else g._data if isinstance(g, Tensor) else g
            for g, m in zip(list(grads) + [None] * (len(self.metas) - len(grads)), self.metas)
        ]
        cotangent = gs[0] if len(gs) == 1 else np.concatenate([np.ravel(g) for g in gs])
        # without retain_graph the pullback hands the residuals to the backward, which frees
        # each after its last use (torch frees saved tensors as its backward goes): the
        # backward's own arrays reuse that memory (all of them held to its end, a GPT step's
        # heap grew and was trimmed back every step, ~1,000 page faults a step)
        out = pullback(cotangent, retain)
        out = out if isinstance(out, tuple) else (out,)
        if not STATE.enabled:
            return list(out)
        # create_graph: the generated backward is numpy code, not differentiable again; its
        # gradients hang from a node that raises if a second derivative reaches it (as
        # torch's @once_differentiable), never constants that would drop that derivative
        edges = self.next_functions + tuple(
            g._edge() for g in grads if isinstance(g, Tensor) and g._requires_grad
        )
        error = ErrorNode(edges, _NOT_TWICE.format(name=type(self).__name__))
        results = []
        for g in out:
            t = Tensor._make(np.asarray(g))
            t._grad_fn, t._requires_grad = error, True
            results.append(t)
        return results

    def release(self):
        self.pullback = None
        self.saved = ()


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))
