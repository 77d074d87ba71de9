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
"""

from __future__ import annotations

import functools

import numpy as np

from ..api import VJP
from ..errors import NonScalarOutputError


class CompiledRegion:
    def __init__(self, fn, backend="auto", outputs=None, name=None):
        from ..autograd import Function

        self.fn = fn
        self.backend = backend
        self.outputs = outputs
        self._vjps: dict = {}
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
        if wrt not in self._vjps:
            self._vjps[wrt] = VJP(self.fn, wrt, False, self.backend)
        self._last = self._vjps[wrt]
        return self._last

    @property
    def source(self):
        """The generated forward and backward of the last call that made a node."""
        last = getattr(self, "_last", None)
        if last is None:
            return f"# {self.fn.__qualname__}: not called with inputs requiring grad yet\n"
        return last.source

    def __call__(self, *args):
        from ..eager import Tensor, is_grad_enabled

        wrt = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
        if not wrt or not is_grad_enabled():
            value = self.fn(*[_array(a) for a in args])
            if self.outputs is not None:
                return tuple(_tensor_like(v, args) for v in _split(value, self.outputs))
            if isinstance(value, (tuple, list, dict)):  # (as the node's VJP refuses it)
                raise NonScalarOutputError(
                    f"sourcegrad.compile: {self.fn.__qualname__} returns a "
                    f"{type(value).__name__}; a compiled region returns one array"
                )
            return _tensor_like(value, args)
        return self.function.apply(wrt, *args)

    def __repr__(self):
        return f"<sourcegrad compiled region {self.fn.__qualname__}>"


def _split(value, shapes):
    """The arrays of `shapes` that the vector `value` holds end to end (copies: each output
    a Tensor of its own)."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        parts.append(value[start : start + size].reshape(shape).copy())
        start += size
    return parts


def _array(value):
    from ..eager import Tensor

    return value.detach().numpy() if isinstance(value, Tensor) else value


def _tensor_like(value, args):
    from ..eager import Tensor, tensor

    dtypes = [a.dtype for a in args if isinstance(a, Tensor)]
    result = tensor(np.asarray(value))
    if dtypes and result.dtype != dtypes[0] and result.dtype.is_floating_point:
        result = result.to(dtypes[0])
    return result if isinstance(result, Tensor) else tensor(value)


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))
