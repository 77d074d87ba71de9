"""`sourcegrad.utils.checkpoint`: activation checkpointing for eager tensors, as torch's.

`checkpoint(function, *args, use_reentrant=False, preserve_rng_state=True, **kwargs)` returns
what `function(*args, **kwargs)` returns, but keeps none of the intermediates the function
made: its backward runs the function again (with the random state it first ran with) and
backpropagates through that second run. Gradients reach the tensor arguments and every leaf
tensor the function reads from its closure (a module's parameters), as with torch's
`use_reentrant=False`, and `autograd.grad` works through it.

How: the first run records its graph as usual; the graph is walked once from the outputs to
find where it leaves the region (the arguments' edges and the leaves it read), then dropped,
so its saved tensors are freed as soon as the call returns. A `CheckpointBackward` node
(a custom `autograd.Function`) stands for the region, its inputs the arguments and those
leaves. The region's peak memory is that of one un-checkpointed run; what outlives the call
is only the arguments and outputs.

Differences from torch, each refused or documented rather than silently different: a
region that reads a non-leaf tensor made outside it without taking it as an argument raises
(pass it as an argument); `create_graph=True` through a checkpoint is not differentiable
again; the output's `grad_fn` is `CheckpointBackward` (torch's non-reentrant variant shows
the region's last node); `use_reentrant=True` runs the same mechanism (the gradients of a
`.backward()` are the same as torch's).
"""

from __future__ import annotations

import warnings

from ..eager.engine import grad as _grad
from ..eager.factories import get_rng_state, set_rng_state
from ..eager.function import Function
from ..eager.grad_mode import enable_grad, is_grad_enabled
from ..eager.node import SEQ, AccumulateGrad
from ..eager.tensor import Tensor

__all__ = ["checkpoint"]


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=None,
    determinism_check="default",
    debug=False,
    early_stop=True,
    **kwargs,
):
    """Run `function(*args, **kwargs)` keeping none of its intermediates for the backward
    (they are recomputed there). See the module docstring."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if context_fn is not None or debug:
        raise NotImplementedError("checkpoint: context_fn and debug are not supported")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    rng_state = get_rng_state() if preserve else None
    start = next(SEQ)
    outputs = function(*args, **kwargs)
    single = isinstance(outputs, Tensor)
    flat = (outputs,) if single else tuple(outputs) if isinstance(outputs, tuple) else None
    if flat is None:
        raise TypeError(
            "checkpoint: the function must return a Tensor or a tuple, got "
            f"{type(outputs).__name__}"
        )
    leaves = _leaves_read(flat, args, start)
    tensors = [a for a in args if isinstance(a, Tensor)] + leaves
    if not any(t.requires_grad for t in tensors):
        return outputs
    region = _Region(
        function,
        args,
        kwargs,
        rng_state,
        len(leaves),
        tuple(o.detach() if isinstance(o, Tensor) else o for o in flat),
        single,
    )
    del outputs, flat  # the first run's graph (and what it saved) goes with them
    return _Checkpoint.apply(region, *args, *leaves)


class _Region:
    """What the backward needs to run the region again (and nothing it made)."""

    def __init__(self, function, args, kwargs, rng_state, n_leaves, values, single):
        self.function, self.kwargs, self.rng_state = function, kwargs, rng_state
        self.n_args, self.n_leaves = len(args), n_leaves
        self.values, self.single = values, single


def _leaves_read(outputs, args, start):
    """The leaf tensors requiring grad that the region's graph (nodes newer than `start`)
    reads and that are not arguments; raises if it reads another tensor made outside it."""
    own_edges = {a._edge() for a in args if isinstance(a, Tensor) and a.requires_grad}
    arg_ids = {id(a) for a in args if isinstance(a, Tensor)}
    leaves, seen_leaves, seen = [], set(), set()
    todo = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if id(leaf) not in arg_ids and id(leaf) not in seen_leaves:
                seen_leaves.add(id(leaf))
                leaves.append(leaf)
            continue
        if node._sequence_nr() <= start:
            continue  # an argument's own history: the outer graph goes on from there
        for child, nr in node.next_functions:
            if child is None:
                continue
            if (
                not isinstance(child, AccumulateGrad)
                and child._sequence_nr() <= start
                and (child, nr) not in own_edges
            ):
                raise RuntimeError(
                    "checkpoint: the function reads a tensor that requires grad, was computed "
                    f"outside it ({child.name()}) and is not one of its arguments; pass it as "
                    "an argument"
                )
            todo.append(child)
    return leaves


class _Checkpoint(Function):
    """The node standing for a checkpointed region (`CheckpointBackward`)."""

    @staticmethod
    def forward(ctx, region, *tensors):
        ctx.region, ctx.inputs = region, tensors
        values = region.values
        return values[0] if region.single else values

    @staticmethod
    def backward(ctx, *grads):
        region = ctx.region
        args = list(ctx.inputs)
        n = region.n_args
        rerun = [
            a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
            for a in args[:n]
        ]
        leaves = args[n:]
        with enable_grad():
            current = None
            if region.rng_state is not None:
                current = get_rng_state()
                set_rng_state(region.rng_state)
            try:
                outputs = region.function(*rerun, **region.kwargs)
            finally:
                if current is not None:
                    set_rng_state(current)
        outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
        pairs = [
            (o, g)
            for o, g in zip(outputs, grads)
            if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        wanted = [t for t in rerun[:n] + leaves if isinstance(t, Tensor) and t.requires_grad]
        found = iter(
            _grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True)
            if pairs and wanted
            else [None] * len(wanted)
        )
        return (None,) + tuple(
            next(found) if isinstance(t, Tensor) and t.requires_grad else None
            for t in rerun[:n] + leaves
        )
