"""How an eager op uses a rule of the table, and how its node is recorded.

An `OpSpec` ties a torch node name (`MulBackward0`) to a rule of
`sourcegrad.ops.RULES` (`multiply`): which of the rule's parameters are the op's
array arguments, and which of those are *edges* of the node (one `next_functions`
entry each). `where` has three array arguments but two edges (the condition
gets none); `1 - x` uses `subtract` with a single edge for `x`.

What a node saves comes from the rules themselves. Each VJP lambda is read once
(by the registry's analysis, `ops.reads`, which the compiler uses too): a name it reads only for its shape
(`unbroadcast(g, x)`, `x.shape`, `np.zeros_like(x)`, ...) is saved as a `Meta`;
a name it reads for its values is saved by value. Only the VJPs of inputs that
need a gradient count, so `x * w` with `w` constant keeps `w` and only the shape
of `x`, as torch's MulBackward0 does.

Imports: `node`, `tensor`, the leaves, and `sourcegrad.ops`/`runtime`; the op
modules import it.

Why one module: the general recording path (`record`) and its fast paths (`record_pair`,
the operators' forward; `record_one`, the views') must build the same node field by field
(tests/eager/test_pair_record.py, test_one_record.py); kept side by side, a change to one
is read beside the others.
"""

from __future__ import annotations

import os
import traceback

import gast
import numpy as np

from .. import errors, ops
from ..ops import RULES, vjp_template
from ..runtime import unbroadcast
from . import messages
from .anomaly import ANOMALY
from .devices import DEVICE_TYPES
from .dual_state import DUAL, tangent_of
from .forward_ad import propagate
from .grad_mode import STATE
from .node import (
    LIVE_NOTHING_SAVED,
    LIVE_SAVED,
    METAS,
    NONE_EDGE,
    Meta,
    MultiRuleNode,
    RuleNode,
    expose_saved,
    meta_of,
    node_class,
)
from .tensor import Tensor as TENSOR
from .tensor import stale_view_requires_grad

NONE, SHAPE, VALUE = 0, 1, 2
_EAGER_MODE = {ops.NONE: NONE, ops.SHAPE: SHAPE, ops.META: SHAPE, ops.VALUE: VALUE}
_READS: dict = {}


def reads(vjp) -> dict:
    """{parameter name: SHAPE or VALUE} for the names a VJP's body reads: the registry's one
    analysis of it (`ops.reads`), where a name read for its shape or dtype only is kept
    as a Meta."""
    key = id(vjp.__code__)
    found = _READS.get(key)
    if found is None:
        found = _READS[key] = {name: _EAGER_MODE[level] for name, level in ops.reads(vjp).items()}
    return found


def _passes_through(vjp, param) -> bool:
    """Is `vjp` exactly `lambda g, ans, ...: unbroadcast(g, param)` (add's, sub's first)?

    Such a VJP gives `g` itself when `g` already has the input's shape and dtype, so
    the engine can skip calling it.
    """
    if vjp is None or vjp.__globals__.get("unbroadcast") is not unbroadcast:
        return False
    body = vjp_template(vjp).body
    return (
        isinstance(body, gast.Call)
        and isinstance(body.func, gast.Name)
        and body.func.id == "unbroadcast"
        and len(body.args) == 2
        and not body.keywords
        and all(isinstance(a, gast.Name) for a in body.args)
        and body.args[0].id == "g"
        and body.args[1].id == param
    )


ALL_SPECS: list = []  # every OpSpec made, so tests can check each rule the eager mode uses


class OpSpec:
    """One eager op's use of one rule: its node class, array arguments and edges."""

    __slots__ = (
        "node_cls",
        "rule",
        "names",
        "edges",
        "vjps",
        "varargs",
        "passes",
        "_modes",
        "_table",
        "_pair",
    )

    def __init__(self, node_name, rule_name, n_arrays=None, edges=None, multi_output=False):
        rule = RULES[rule_name]
        self.rule = rule
        self.varargs = rule.varargs is not None
        if self.varargs:  # (its static parameters first: einsum's subscripts)
            self.names = tuple(rule.params) + (rule.varargs,)
            self.edges = None  # one edge per element of the sequence
            self.vjps = None
        else:
            n = len(rule.params) if n_arrays is None else n_arrays
            self.names = tuple(rule.params[:n])
            self.edges = tuple(range(n)) if edges is None else tuple(edges)
            self.vjps = tuple(rule.vjp_for(p) for p in self.edges)
        # per edge: is its VJP `unbroadcast(g, <that input>)`? (None: no fast path, see
        # RuleNode.apply)
        self.passes = (
            None
            if self.varargs
            else tuple(_passes_through(v, self.names[p]) for v, p in zip(self.vjps, self.edges))
        )
        self.node_cls = node_class(node_name, MultiRuleNode if multi_output else RuleNode)
        expose_saved(self.names)  # (grad_fn._saved_<name>)
        self._modes = {}
        # what to save for each set of edges that need a gradient, worked out once
        self._table = (
            None
            if self.varargs
            else [self._work_out(mask, len(self.names)) for mask in range(1 << len(self.edges))]
        )
        self._pair = self._pair_plan()
        ALL_SPECS.append(self)

    @classmethod
    def of(cls, rule_name, n_arrays=None, edges=None, multi_output=False) -> OpSpec:
        """The spec recording the entry's own torch node (`Torch.node` of `rule_name`'s entry:
        `OpSpec.of("flip")` records FlipBackward0), the node name written once, there. A
        variant torch records with another node (SumBackward1 for a sum over dims) names it:
        `OpSpec("SumBackward1", "sum")`."""
        torch = RULES[rule_name].torch
        if torch is None or torch.node is None:
            raise ValueError(f"op {rule_name!r} has no torch node: name it, OpSpec(node, op)")
        return cls(torch.node, rule_name, n_arrays, edges, multi_output)

    def modes(self, mask, n_args):
        """(mode of each array argument, mode of ans) when the edges in `mask` need grads."""
        return self.plan(mask, n_args)[:2]

    def plan(self, mask, n_args):
        """`modes`, plus whether values are kept and what `_kept` gives (for record)."""
        if self._table is not None:
            return self._table[mask]
        key = (mask, n_args)
        found = self._modes.get(key)
        if found is None:
            found = self._modes[key] = self._work_out(mask, n_args)
        return found

    def _work_out(self, mask, n_args):
        needed: dict = {}
        if self.varargs:
            vjps = [self.rule.vjp_for(len(self.names) - 1)] if mask else []
        else:
            vjps = [v for bit, v in enumerate(self.vjps) if v is not None and mask >> bit & 1]
        for vjp in vjps:
            for name, mode in reads(vjp).items():
                needed[name] = max(needed.get(name, NONE), mode)
        if self.varargs:
            leading = tuple(needed.get(name, NONE) for name in self.names[:-1])
            arg_modes = leading + (needed.get(self.names[-1], NONE),) * (n_args - len(leading))
        else:
            arg_modes = tuple(needed.get(name, NONE) for name in self.names)
        ans_mode = needed.get("ans", NONE)
        keeps_values = VALUE in arg_modes or ans_mode == VALUE
        return arg_modes, ans_mode, keeps_values, self._kept(arg_modes)

    def _pair_plan(self):
        """For a two-operand op with an edge each (add, mul, ...): per mask of the edges that
        need a gradient, what `record_pair` needs: (what the node keeps of the first operand,
        of the second, the mode of ans, the node's `_state`). What it keeps of an operand is
        NONE, SHAPE (its Meta: only for an operand that needs a gradient, whose Meta
        `record_pair` has at hand) or VALUE; None in place of the whole plan where it keeps a
        Meta of an operand that needs none (the general `_saved_arguments`). None for every
        other kind of op (`record_pair` then falls back)."""
        if self.varargs or self.edges != (0, 1) or len(self.names) != 2:
            return None
        plans = []
        for mask, (_, ans_mode, keeps_values, kept) in enumerate(self._table):
            keep = [NONE, NONE]
            for i, mode, j in kept:
                if mode == SHAPE and (j < 0 or not mask >> j & 1):
                    keep = None
                    break
                keep[i] = mode
            state = LIVE_SAVED if keeps_values else LIVE_NOTHING_SAVED
            plans.append(None if keep is None else (keep[0], keep[1], ans_mode, state))
        return tuple(plans)

    def _kept(self, arg_modes):
        """(argument, mode, its edge or -1) for each argument record() keeps."""
        edges = range(len(arg_modes)) if self.edges is None else self.edges  # varargs: all
        edge_of = {p: j for j, p in enumerate(edges)}
        return tuple(
            (i, mode, edge_of.get(i, -1)) for i, mode in enumerate(arg_modes) if mode != NONE
        )


def record(spec, out, args, static=None, outputs=None):
    """Make `spec`'s node for an op with array arguments `args`, and attach it to `out`.

    `args` are in the rule's order: Tensors, arrays or plain values. Call only when
    grad mode is on and some edge argument requires grad. `outputs` lists all the
    outputs of a multi-output op (`out` is then None).

    While a dual level is open, the result also gets its tangent (`forward_ad.propagate`);
    callers then call this when an argument carries a tangent too, and no node is made
    unless grad mode is on and an edge requires grad (None is returned).
    """
    # (long: every op records through here, so the common path stays inline; the saved
    # arguments and a multi-output op's outputs are helpers)
    Tensor = TENSOR  # a local name: the loop below is the hot path of every op
    n = len(args)
    edges = []
    metas = []
    mask = 0
    bit = 1
    complex_values = out is not None and out._data.dtype.kind == "c"
    for p in range(n) if spec.varargs else spec.edges:
        a = args[p]
        if isinstance(a, Tensor) and (
            a._requires_grad or (a._base is not None and stale_view_requires_grad(a))
        ):
            fn = a._grad_fn
            edges.append((fn, a._output_nr) if fn is not None and a._base is None else a._edge())
            d = a._data
            m = METAS.get((d.shape, d.dtype)) if type(d) is np.ndarray else None
            metas.append(m if m is not None else meta_of(d))
            mask |= bit
            if d.dtype.kind == "c":
                complex_values = True
        else:
            edges.append(NONE_EDGE)
            metas.append(None)
        bit <<= 1
    if not mask or not STATE.enabled:  # only a tangent to propagate
        if DUAL.on:
            propagate(spec, out, args, static, outputs)
        return None
    table = spec._table
    _, ans_mode, keeps_values, kept = table[mask] if table is not None else spec.plan(mask, n)
    if kept:
        saved, versions = _saved_arguments(kept, args, metas, n)
    else:
        saved, versions = (None,) * n, None
    cls = spec.node_cls
    node = _new(cls)
    node.next_functions = tuple(edges)
    node._seq = next(_seq_counter)
    node._hookset = None
    node._spec = spec if not spec.varargs else _VarargsView(spec, n)
    if complex_values or (outputs is not None and any(o._data.dtype.kind == "c" for o in outputs)):
        node._spec = _ComplexView(node._spec, metas)
    node._args = saved
    node._versions = versions
    node._static = static
    node._metas = metas
    if outputs is not None:
        _attach_outputs(node, outputs, ans_mode)
    else:
        _attach_output(node, out, ans_mode)
    node._state = LIVE_SAVED if keeps_values else LIVE_NOTHING_SAVED
    if ANOMALY.enabled:
        node.metadata["traceback_"] = _user_stack()
    if DUAL.on:
        propagate(spec, out, args, static, outputs)
        if ans_mode == VALUE and out is not None:
            keep_tangent(node, out)
    return node


_ndarray = np.ndarray


def _saved_version(a):
    """The version a node keeping operand `a` by value records (None for a number or an
    array: only a Tensor has one), raising torch's error for an inference tensor."""
    if not isinstance(a, TENSOR):
        return None
    if a._inference and not STATE.inference:
        raise RuntimeError(messages.INFERENCE_SAVED)
    vc = a._vc
    return vc.value if vc is not None else 0


def record_pair(spec, out, a, b):
    """`record(spec, out, (a, b))` for a two-operand op with an edge each (`x + y`, `x * y`):
    the eager mode's most common node, made without `record`'s loops over arguments.

    Call it whenever grad mode is on: it returns None, having made no node, when neither
    operand requires grad. Anything this path does not handle itself (forward AD, anomaly
    mode, complex values, views whose base came to require grad, GPU arrays, the Meta of an
    operand that needs no gradient) goes to `record`, which it must give the same node as.
    Its callers promote both operands to `out`'s dtype (`operands.promote`), so a complex
    operand means a complex `out`: only out is checked.

    Each operand's edge and Meta are worked out inline, once for `a` and once for `b`: a
    helper's call and its tuple cost a tenth of the whole op (the chain of adds of
    sourcegrad/bench/eager.py).
    """
    plans = spec._pair
    if plans is None or DUAL.on or ANOMALY.enabled:
        return record(spec, out, (a, b))
    if isinstance(a, TENSOR) and a._requires_grad:
        d = a._data
        if type(d) is not _ndarray:  # (on a GPU)
            return record(spec, out, (a, b))
        ma = METAS.get((d.shape, d.dtype))
        if ma is None:
            ma = meta_of(d)
        fn = a._grad_fn
        ea = (fn, a._output_nr) if fn is not None and a._base is None else a._edge()
    elif not isinstance(a, TENSOR) or a._base is None or not stale_view_requires_grad(a):
        ea, ma = NONE_EDGE, None
    else:  # a view whose base came to require grad
        return record(spec, out, (a, b))
    if isinstance(b, TENSOR) and b._requires_grad:
        d = b._data
        if type(d) is not _ndarray:
            return record(spec, out, (a, b))
        mb = METAS.get((d.shape, d.dtype))
        if mb is None:
            mb = meta_of(d)
        fn = b._grad_fn
        eb = (fn, b._output_nr) if fn is not None and b._base is None else b._edge()
    elif not isinstance(b, TENSOR) or b._base is None or not stale_view_requires_grad(b):
        eb, mb = NONE_EDGE, None
    else:
        return record(spec, out, (a, b))
    mask = (ma is not None) | (mb is not None) << 1
    if not mask:
        return None
    plan = plans[mask]
    if plan is None or out._data.dtype.kind == "c":
        return record(spec, out, (a, b))
    ka, kb, ans_mode, state = plan
    versions = None
    if ka == VALUE or kb == VALUE:  # (mul, div: the operands themselves)
        va = _saved_version(a) if ka == VALUE else None
        vb = _saved_version(b) if kb == VALUE else None
        if va is not None or vb is not None:  # (numbers alone have none: as record)
            versions = [va, vb]
    node = _new(spec.node_cls)
    node.next_functions = (ea, eb)
    node._seq = next(_seq_counter)
    node._hookset = None
    node._spec = spec
    node._args = (
        ma if ka == SHAPE else (a if ka == VALUE else None),
        mb if kb == SHAPE else (b if kb == VALUE else None),
    )
    node._versions = versions
    node._static = None
    node._metas = [ma, mb]
    node._state = state
    if ans_mode == NONE:  # (add, sub: _attach_output's first case, without the call)
        node._ans = None
        out._grad_fn = node
        out._output_nr = 0
        out._requires_grad = True
    else:
        _attach_output(node, out, ans_mode)
    return node


def record_one(spec, out, x, static=None):
    """`record(spec, out, (x,), static)` for an op of one Tensor x, its one edge (the views:
    `view`, `transpose`, `expand`, ... , a third of a GPT's forward nodes), made without
    `record`'s loops over arguments and its call to `_saved_arguments`.

    Anything this path does not handle itself (grad mode off, forward AD, anomaly mode, an
    x that does not itself require grad (a view whose base came to), complex values, GPU
    arrays) goes to `record`, which it must give the same node as."""
    d = x._data
    if (
        not x._requires_grad
        or len(spec.names) != 1  # (pow's exponent, nll_loss's target: record's)
        or spec.edges != (0,)
        or spec.varargs
        or not STATE.enabled
        or DUAL.on
        or ANOMALY.enabled
        or type(d) is not _ndarray
        or d.dtype.kind == "c"
        or out._data.dtype.kind == "c"
    ):
        return record(spec, out, (x,), static)
    m = METAS.get((d.shape, d.dtype))
    if m is None:
        m = meta_of(d)
    fn = x._grad_fn
    edge = (fn, x._output_nr) if fn is not None and x._base is None else x._edge()
    table = spec._table
    _, ans_mode, keeps_values, kept = table[1] if table is not None else spec.plan(1, 1)
    versions = None
    if not kept:
        saved = (None,)
    elif kept[0][1] == SHAPE:  # (its Meta is at hand: x is the edge that needs a gradient)
        saved = (m,)
    else:  # (VALUE)
        versions = [_saved_version(x)]
        saved = (x,)
    node = _new(spec.node_cls)
    node.next_functions = (edge,)
    node._seq = next(_seq_counter)
    node._hookset = None
    node._spec = spec
    node._args = saved
    node._versions = versions
    node._static = static
    node._metas = [m]
    node._state = LIVE_SAVED if keeps_values else LIVE_NOTHING_SAVED
    if ans_mode == NONE:  # (_attach_output's first case, without the call)
        node._ans = None
        out._grad_fn = node
        out._output_nr = 0
        out._requires_grad = True
    else:
        _attach_output(node, out, ans_mode)
    return node


def _attach_output(node, out, ans_mode):
    """Make `node` the grad_fn of its one output `out`, keeping what its VJPs read of it
    (`ans_mode`: its value with its version, its Meta, or nothing); record ends here, and
    record_pair for a node that keeps its result or its Meta."""
    if ans_mode == VALUE:
        node._ans = _kept_output(out)
    elif ans_mode == SHAPE:
        node._ans = meta_of(out._data)
    else:
        node._ans = None
    out._grad_fn = node
    out._output_nr = 0
    out._requires_grad = True


def _saved_arguments(kept, args, metas, n):
    """(what the node keeps of each argument, their versions or None) for the arguments
    `kept` lists as (argument, mode, edge or -1): a Tensor's value, or only its Meta."""
    Tensor = TENSOR
    versions = None
    saved = [None] * n
    for i, mode, j in kept:
        a = args[i]
        if mode == SHAPE and j >= 0 and metas[j] is not None:
            saved[i] = metas[j]  # an edge that needs a gradient: its Meta is at hand
        elif mode == VALUE:
            if isinstance(a, Tensor):
                if a._inference and not STATE.inference:
                    raise RuntimeError(messages.INFERENCE_SAVED)
                if versions is None:
                    versions = [None] * n
                vc = a._vc
                versions[i] = vc.value if vc is not None else 0
            saved[i] = a
        elif isinstance(a, Tensor):
            d = a._data
            m = METAS.get((d.shape, d.dtype)) if type(d) is np.ndarray else None
            saved[i] = m if m is not None else meta_of(d)
        elif type(a) is np.ndarray or type(a) in DEVICE_TYPES:
            saved[i] = meta_of(a)
        else:
            saved[i] = a
    return tuple(saved), versions


def _attach_outputs(node, outputs, ans_mode):
    """A multi-output op's node made the grad_fn of each output. A rule that reads its
    results (eigh's, svd's) gets them all: the node keeps each output's data and version,
    as torch's LinalgEighBackward0 saves its outputs."""
    node._outs = [meta_of(o._data) for o in outputs]
    if ans_mode == VALUE:
        node._ans = [_kept_output(o) for o in outputs]
    elif ans_mode == SHAPE:
        node._ans = list(node._outs)
    else:
        node._ans = None
    for i, o in enumerate(outputs):
        o._grad_fn = node
        o._output_nr = i
        o._requires_grad = True


def keep_tangent(node, out):
    """A node that saves its result keeps the result's tangent too, for a backward run under
    forward mode (forward over reverse: `jacfwd(jacrev(f))`)."""
    t = tangent_of(out)
    if t is not None:
        node._fw_ans = (DUAL.epoch, t)


_new = object.__new__


def _kept_output(out):
    """(data, version counter, version) of an output its own node keeps."""
    if out._inference and not STATE.inference:
        raise RuntimeError(messages.INFERENCE_SAVED)
    vc = out._vc
    if vc is None:  # (made on first use: most tensors never need one)
        vc = out._get_vc()
    return (out._data, vc, vc.value)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stack():
    """The forward call's stack without sourcegrad's own frames (for anomaly mode)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE_DIR)]
    return traceback.format_list(frames)


class _VarargsView:
    """A varargs spec (cat, stack) seen with a fixed number of inputs: one VJP per input."""

    __slots__ = ("vjps", "varargs", "names", "rule")
    passes = None  # no fast path (RuleNode.apply)

    def __init__(self, spec, n):
        leading = len(spec.names) - 1  # (static parameters: no VJP)
        vjp = spec.rule.vjp_for(leading)
        self.vjps = (None,) * leading + (vjp,) * (n - leading)
        self.varargs = True
        self.names = spec.names
        self.rule = spec.rule


class _ComplexView:
    """A spec whose node has complex values: its VJPs in torch's convention.

    The rules pass the conjugates of torch's gradients of complex values
    (`sourcegrad/ops/complex_values.py`), so each VJP here takes conj(g) and gives the
    conjugate of what the rule gives; a real input gets its real part. An op whose rules
    hold for real numbers only (no "complex" property) is refused when it is recorded."""

    __slots__ = ("vjps", "varargs", "names", "rule")
    passes = None  # no fast path (RuleNode.apply)

    def __init__(self, spec, metas):
        if not ops.has(spec.rule.name, "complex"):
            raise errors.ComplexValueError(
                f"{spec.rule.family} of complex values is not differentiated (its rule is "
                "written for real numbers)"
            )
        self.vjps = tuple(
            None if v is None or m is None else _torch_convention(v, m.dtype.kind != "c")
            for v, m in zip(spec.vjps, metas)
        )
        self.varargs = spec.varargs
        self.names = spec.names
        self.rule = spec.rule


def _torch_convention(vjp, real_input):
    def converted(g, ans, *args, **kwargs):
        gi = vjp(_conj(g), ans, *args, **kwargs)
        return np.real(gi) if real_input else np.conj(gi)

    return converted


def _conj(g):
    if isinstance(g, list):  # (a multi-output node's gradients)
        return [_conj(item) for item in g]
    return np.conj(g)


from .node import SEQ as _seq_counter  # noqa: E402 - shared sequence numbers

__all__ = ["OpSpec", "record", "record_pair", "reads", "Meta"]
