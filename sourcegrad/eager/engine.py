"""The backward engine: an iterative topological traversal of the graph.

`run` never recurses, so a chain of 100,000 ops backpropagates like a short one:

1. discover every node reachable from the roots with an explicit stack, counting
   for each node how many edges lead into it;
2. when only some inputs are wanted (`autograd.grad`, `backward(inputs=...)`),
   keep just the nodes from which one of them can be reached;
3. run the nodes from a heap ordered by sequence number (newest first, and
   `AccumulateGrad` as soon as it is ready, as torch orders them); a node runs
   once all its incoming gradients have arrived and been summed. A node that
   makes a single child ready hands over to it directly when that child would
   be the heap's next anyway, so a chain never touches the heap.

The hot loop checks what only rare graphs need (hooks, anomaly mode, `inputs=`)
with one attribute read per node, and nodes with neither hooks nor anomaly mode
go straight to `node.apply`.

Around each node it runs, in torch's order: the hooks registered on the tensor
that node produced (which may replace the gradient), `retain_grad`, the node's
pre-hooks, the node, its post-hooks. Unless `retain_graph`, each node frees its
saved values once it has run, so a second backward through it raises torch's
"backward through the graph a second time" error.

Gradients flow as numpy arrays on the plain path. Under `create_graph=True`
grad mode stays on and they flow as Tensors, so the backward pass is itself
recorded and can be differentiated again.

Why one module: discovery, pruning, the ready heap and the per-node protocol (hooks,
anomaly mode, retained gradients) are one traversal whose hot loop must see them together.

Imports: `node`, `tensor` and the leaves; never an op module (a batched
`grad` stacks its results with `np.stack`, which numpy_dispatch hands to the stack op).
"""

from __future__ import annotations

import heapq
import itertools
import warnings

import numpy as np

from . import devices, messages
from .anomaly import ANOMALY, check_outputs
from .grad_mode import STATE
from .node import LIVE_SAVED, AccumulateGrad
from .tensor import Tensor

_wrap = Tensor._make


def _as_user_tensor(g):
    """A gradient array as a Tensor a user may modify (hooks, custom backward)."""
    if g is None or isinstance(g, Tensor):
        return g
    if not devices.writeable(g):
        g = g.copy()
    return _wrap(g)


def _from_user(value, create):
    """What a hook or custom backward returned, back in the engine's representation."""
    if value is None:
        return None
    if create:
        return value
    return value._data


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def make_grads(outputs, grad_outputs, create_graph):
    """The seed gradient of each output: `ones` for scalars, or the one the user gave."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    for g in grad_outputs[: len(outputs)]:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"Mismatch in number of gradients: expected {len(outputs)} but got {len(grad_outputs)}"
        )
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._requires_grad and out._data.size != 1:
                raise RuntimeError(messages.SCALAR_ONLY)
            d = out._data
            if out._requires_grad and d.dtype.kind == "c":
                raise RuntimeError(f"{messages.REAL_SCALAR_ONLY} but got {Tensor._dtype_of(d)}")
            g = (
                np.ones(d.shape, d.dtype)
                if type(d) is np.ndarray
                else devices.make(out.device, "ones", d.shape, d.dtype)
            )
            seeds.append(_wrap(g) if create_graph else g)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of "
                f"{messages.size_text(g._data.shape)} and output[{i}] has a shape "
                f"of {messages.size_text(out._data.shape)}."
            )
        if g.device != out.device:
            raise RuntimeError(
                f"invalid gradient at index {i} - expected device {out.device} but got {g.device}"
            )
        seeds.append(g if create_graph else g._data)
    return seeds


def _roots(outputs):
    edges = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(out).__name__}")
        if not out._requires_grad:
            raise RuntimeError(messages.NO_GRAD_FN.format(i))
        edges.append(out._edge())
    return edges


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
):
    """torch.autograd.backward: accumulate gradients into the leaves' `.grad`."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    if isinstance(grad_tensors, Tensor) and len(outputs) == 1:
        grad_tensors = [grad_tensors]
    roots = _roots(outputs)
    seeds = make_grads(outputs, grad_tensors, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(messages.CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    targets = None
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        targets = [t._edge() for t in inputs]
    captured = run(roots, seeds, retain_graph, create_graph, targets, accumulate=True)
    if inputs is not None:
        # listed non-leaves get their .grad like retained ones
        for t, g in zip(inputs, captured):
            if g is not None and t._grad_fn is not None:
                _accumulate_retained(t, g, create_graph)
    return None


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """torch.autograd.grad: the gradients of outputs w.r.t. inputs, as a tuple (no .grad)."""
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when "
            "materialize_grads=True, but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}"
            )
        if not t._requires_grad:
            raise RuntimeError(messages.INPUT_NO_GRAD)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    roots = _roots(outputs)
    seeds = make_grads(outputs, grad_outputs, create_graph)
    targets = [t._edge() for t in inputs]
    captured = run(roots, seeds, retain_graph, create_graph, targets, accumulate=False)
    results = []
    for i, (t, g) in enumerate(zip(inputs, captured)):
        if g is None:
            if materialize_grads:
                results.append(_wrap(np.zeros_like(t._data)))
                continue
            if not allow_unused:
                raise RuntimeError(messages.UNUSED_INPUT.format(i))
            results.append(None)
            continue
        results.append(g if create_graph else _as_user_tensor(g))
    return tuple(results)


def _batched_grad(
    outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
):
    """is_grads_batched: the first dimension of each grad_output is a batch (a loop, not vmap)."""
    grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n = grad_outputs[0]._data.shape[0]
    per_input = [[] for _ in inputs]
    for b in range(n):
        gs = [g[b] for g in grad_outputs]
        keep = retain_graph or b < n - 1
        res = grad(
            outputs,
            inputs,
            gs,
            retain_graph=keep,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
        )
        for i, r in enumerate(res):
            per_input[i].append(r)
    # np.stack of Tensors is the stack op (numpy_dispatch): the engine imports no op module
    return tuple(None if rs[0] is None else np.stack(rs) for rs in per_input)


def _accumulate_retained(t, g, create):
    if create:
        g = g if isinstance(g, Tensor) else _wrap(g)
        t._grad = g if t._grad is None else t._grad + g
        return
    if t._grad is None:
        t._grad = _wrap(devices.xp_of(g).array(g, dtype=t._data.dtype, copy=True))
    else:
        np.add(t._grad._data, g, out=t._grad._data, casting="unsafe")


def _discover(roots):
    """All nodes reachable from the roots (explicit stack), and each node's parents."""
    parents = {}
    seen = set()
    stack = []
    for node, _ in roots:
        if node is not None and node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            parents.setdefault(child, []).append(node)
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen, parents


def _dependencies(roots):
    """{node: number of edges into it} for every node reachable from the roots.

    The common case (`backward()` with no `inputs`): every reachable node runs, so
    the counts are all `run` needs and no parents lists are built.
    """
    deps = {}
    stack = []
    for node, _ in roots:
        if node is not None and node not in deps:
            deps[node] = 0
            stack.append(node)
    get = deps.get
    push = stack.append
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None:
                continue
            n = get(child)
            if n is None:
                deps[child] = 1
                push(child)
            else:
                deps[child] = n + 1
    return deps


def _needed(targets, parents):
    """Nodes from which some target node can be reached (targets included)."""
    needed = set()
    stack = [node for node, _ in targets if node is not None]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack.extend(parents.get(node, ()))
    return needed


def _pass(buffers, child, nr, g):
    """Add gradient `g` for output `nr` of `child` into child's buffer."""
    buf = buffers.get(child)
    if buf is None:
        if nr == 0:
            buffers[child] = [g]
            return
        buf = buffers[child] = []
    while len(buf) <= nr:
        buf.append(None)
    buf[nr] = _add(buf[nr], g)


def _plan(roots, targets, accumulate):
    """(incoming edges that will carry a gradient per node, the nodes on a path to a
    target, the nodes that run): with no targets, every reachable node runs and every
    edge carries a gradient (the last two None)."""
    if targets is None:
        return _dependencies(roots), None, None
    nodes, parents = _discover(roots)
    needed = _needed(targets, parents) & nodes
    target_nodes = {node for node, _ in targets}
    runs = set()
    for node in needed:
        if isinstance(node, AccumulateGrad):
            if accumulate and node in target_nodes:
                runs.add(node)
        elif any(child in needed for child, _ in node.next_functions):
            runs.add(node)
    # incoming edges that will carry a gradient (from nodes that run)
    deps = {}
    for node in runs:
        for child, _ in node.next_functions:
            if child is not None and child in needed:
                deps[child] = deps.get(child, 0) + 1
    return deps, needed, runs


def _seeded(roots, seeds, deps):
    """(the gradient buffers holding the seeds, the heap of the nodes ready, its counter).
    The ready nodes, newest (highest `_seq`) first and, among equal ones (the
    accumulators, all `inf`), first come first served: that is torch's order."""
    buffers = {}
    for (node, nr), g in zip(roots, seeds):
        if node is not None:
            _pass(buffers, node, nr, g)
    counter = itertools.count()
    heap = [(-node._seq, next(counter), node) for node in buffers if deps.get(node, 0) == 0]
    heapq.heapify(heap)
    return buffers, heap, counter


def run(roots, seeds, retain_graph, create_graph, targets=None, accumulate=True):  # noqa: C901 (one case per statement kind)
    """Backpropagate `seeds` from the `roots` edges; return the gradients reaching `targets`.

    The loop over the nodes stays in this one function (a call per node would cost the
    eager backward's hot path); what runs once per backward is in `_plan`."""
    # (long: the hot loop, one piece: a helper per node or per edge costs the backward of
    # every op)
    deps, needed, runs = _plan(roots, targets, accumulate)
    captures = {}
    if targets is not None:
        for i, (node, nr) in enumerate(targets):
            captures.setdefault((node, nr), []).append(i)
    captured = [None] * (len(targets) if targets is not None else 0)

    buffers, heap, counter = _seeded(roots, seeds, deps)
    heappush = heapq.heappush
    heappop = heapq.heappop

    prev_enabled = STATE.enabled
    STATE.enabled = create_graph
    # torch's backward is silent about inf/nan (sqrt'(0), log'(0)); so is numpy here
    errstate = np.errstate(divide="ignore", invalid="ignore", over="ignore")
    errstate.__enter__()
    try:
        node = heappop(heap)[2] if heap else None
        while node is not None:
            grads = buffers.pop(node, None) or []
            hooked = node._hookset is not None
            if hooked or node._hooks_on_variable:
                grads = _pre_node(node, grads, create_graph)
                hooked = node._hookset is not None  # (a tensor hook may have added one)
            if captures:
                for nr, g in enumerate(grads):
                    for i in captures.get((node, nr), ()):
                        captured[i] = g
            if (runs is None or node in runs) and (
                grads[0] is not None if len(grads) == 1 else any(g is not None for g in grads)
            ):
                if not hooked and not ANOMALY.enabled:
                    results = node.apply(grads)
                else:
                    results = _run_node(node, grads, create_graph)
                if not retain_graph and node._state == LIVE_SAVED:
                    node.release()
            else:
                results = ()
            n_results = len(results)
            # The child this node makes ready runs next without a trip through the
            # heap when nothing in the heap comes before it (a chain's every step).
            first = None  # the first child made ready, not yet in the heap
            several = False
            for i, (child, nr) in enumerate(node.next_functions):
                if child is None or (needed is not None and child not in needed):
                    continue
                if i < n_results:
                    g = results[i]
                    if g is not None:
                        # _pass's common cases: a first gradient, or one more for output 0
                        # (a leaf used many times, its AccumulateGrad's)
                        buf = buffers.get(child)
                        if buf is None and nr == 0:
                            buffers[child] = [g]
                        elif nr == 0 and buf[0] is not None:
                            buf[0] = buf[0] + g
                        else:
                            _pass(buffers, child, nr, g)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    if first is None:
                        first = child
                        continue
                    if not several:  # into the heap in the order they became ready
                        heappush(heap, (-first._seq, next(counter), first))
                        several = True
                    heappush(heap, (-child._seq, next(counter), child))
            if first is not None and not several:
                # strictly before the heap's top: an equal `_seq` already waiting goes first
                if not heap or -first._seq < heap[0][0]:
                    node = first
                    continue
                heappush(heap, (-first._seq, next(counter), first))
            node = heappop(heap)[2] if heap else None
    finally:
        errstate.__exit__(None, None, None)
        STATE.enabled = prev_enabled
    return captured


def _pre_node(node, grads, create):
    """Tensor hooks and retain_grad for each output of `node` (they may change the grads)."""
    hs = node._hookset
    if hs is None and not isinstance(node, AccumulateGrad):
        return grads
    grads = list(grads)
    for nr, g in enumerate(grads):
        if g is None:
            continue
        hooks = node.tensor_hooks(nr)
        if hooks:
            for fn in hooks:
                value = _as_user_tensor(g)
                new = fn(value)
                if new is not None:
                    if tuple(new._data.shape) != tuple(value._data.shape):
                        raise RuntimeError(
                            messages.HOOK_CHANGED_SIZE.format(
                                getattr(fn, "__name__", type(fn).__name__)
                            )
                        )
                    g = _from_user(new, create)
                else:
                    g = _from_user(value, create)  # the hook may have changed it in place
            grads[nr] = g
        if hs is not None and hs.retained:
            ref = hs.retained.get(nr)
            t = ref() if ref is not None else None
            if t is not None:
                _accumulate_retained(t, g, create)
    return grads


def _apply_with_anomaly(node, grads):
    """Run a node; on error, first warn where its forward was called (torch's anomaly mode)."""
    try:
        results = node.apply(grads)
        check_outputs(node, results)
        return results
    except Exception:
        name = node.name().rsplit("::", 1)[-1]
        stack = (
            node._hookset.metadata.get("traceback_")
            if (node._hookset is not None and node._hookset.metadata)
            else None
        )
        warnings.warn(
            f"Error detected in {name}. Traceback of forward call that caused the "
            "error:\n" + "".join(stack or ["  (not recorded)\n"]),
            UserWarning,
            stacklevel=4,
        )
        raise


def _run_node(node, grads, create):
    hs = node._hookset
    if hs is not None and hs.pre:
        for fn in list(hs.pre.values()):
            new = fn(tuple(_as_user_tensor(g) for g in grads))
            if new is not None:
                grads = [_from_user(g, create) for g in new]
    if ANOMALY.enabled:
        results = _apply_with_anomaly(node, grads)
    else:
        results = node.apply(grads)
    if hs is not None and hs.post:
        grad_inputs = tuple(_as_user_tensor(g) for g in results)
        grad_outputs = tuple(_as_user_tensor(g) for g in grads)
        for fn in list(hs.post.values()):
            new = fn(grad_inputs, grad_outputs)
            if new is not None:
                grad_inputs = tuple(new)
        results = [_from_user(g, create) for g in grad_inputs]
    return results
