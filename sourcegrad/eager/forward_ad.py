"""Forward-mode AD for the eager Tensor: the tangent of an op's result, from its registry entry.

`propagate(spec, out, args, static, outputs)` takes what `spec.record` takes (the op's
spec, its result, its array arguments in the rule's order, its static arguments) and gives
the result a tangent when an argument carries one at the open dual level
(`dual_state`). Nothing is written per op: the tangent comes from the op's rule
(`sourcegrad.ops.RULES`), as the compiler's forward mode (`sourcegrad.compiler.derive.forward`) takes it:

* explicit JVP lambdas `(t, ans, *inputs)` where the rule has them (max, prod, the linalg
  decompositions);
* an elementwise rule's VJP with `g` set to the input's tangent and `unbroadcast` read
  as the identity (the Jacobian is diagonal up to broadcasting);
* a linear rule applied to the tangents (`joint`: all array inputs at once; `multi`:
  summed over the inputs, each replaced in turn; a tuple: those inputs only);
* for the rest (softmax, the losses, convolution, ...) the VJP transposed: the VJP is
  linear in `g`, so `J t` is the gradient with respect to `g` of `<vjp(g), t>`,
  computed by the reverse engine. Exact, and it needs nothing but the VJP.

Tangents are Tensors computed by eager ops with the level switched off (torch has no
nested levels), under the grad mode of the call, so a tangent is itself differentiable
(reverse over forward) when what it was computed from requires grad.

`inplace(self, data, spec, args, static, self_pos)` is the in-place ops' counterpart
(the tangent computed from the old values, then written into self's tangent, so a view's
tangent, a view of its base's, updates the base's too).

Imports: `tensor`, `engine`, `grad_mode`, `dual_state`, `devices`, `errors`.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from ..errors import ForwardADError
from . import devices
from .dual_state import DUAL, set_tangent, tangent_of
from .engine import grad as _engine_grad
from .grad_mode import STATE, enable_grad
from .tensor import Tensor

_wrap = Tensor._make


def propagate(spec, out, args, static=None, outputs=None):
    """Give `out` (or each of `outputs`) the tangent of the op `spec` ran on `args`."""
    tangents = _tangents(spec, args)
    results = outputs if outputs is not None else (out,)
    if (
        not tangents
        or not spec.rule.differentiable
        or not any(r._data.dtype.kind in "fc" for r in results)
    ):
        return
    DUAL.on = False
    try:
        t_out = tangent(
            spec, out if outputs is None else list(outputs), args, static or {}, tangents
        )
    finally:
        DUAL.on = True
    if t_out is None:  # the inputs carrying tangents are not differentiable ones
        return
    if outputs is None:
        set_tangent(out, _own(conform(t_out, out), out, tangents))
    else:
        for o, t in zip(outputs, t_out):
            set_tangent(o, _own(conform(t, o), o, tangents))


def _own(t, out, tangents):
    """The tangent of a result that is not a view must not share memory with an input's
    tangent (`x + 1`'s JVP is x's tangent itself): an in-place op on one would change the
    other. A view's tangent is a view of its base's, as in torch."""
    if out._base is not None:
        return t
    data = t._data
    for other in tangents.values():
        theirs = other._data
        if (
            data is theirs
            or type(data) is not np.ndarray
            or type(theirs) is not np.ndarray
            or np.may_share_memory(data, theirs)
        ):  # (on a GPU: always copied)
            DUAL.on = False
            try:
                return t.clone()
            finally:
                DUAL.on = True
    return t


def _tangents(spec, args):
    """{position: tangent} of the spec's differentiable arguments that carry one."""
    found = {}
    for p in range(len(args)) if spec.varargs else spec.edges:
        a = args[p]
        if isinstance(a, Tensor):
            t = tangent_of(a)
            if t is not None:
                found[p] = t
    return found


def tangent(spec, ans, args, static, tangents):
    """The tangent of `ans`, the result of `spec`'s rule on `args` (see the module's list)."""
    rule = spec.rule
    varargs = spec.varargs
    if rule.jvps:
        parts = [
            _call_vjp(rule.jvp_for(p), t, ans, args, static, p, varargs)
            for p, t in tangents.items()
            if rule.jvp_for(p) is not None
        ]
    elif rule.kind == "elementwise" and rule.vjps:
        parts = [
            _call_vjp(as_jvp(rule.vjp_for(p)), t, ans, args, static, p, varargs)
            for p, t in tangents.items()
            if rule.vjp_for(p) is not None
        ]
    elif rule.linear == "multi":
        parts = [call_rule(rule, _replaced(args, {p: t}), static) for p, t in tangents.items()]
    elif rule.linear == "joint" or isinstance(rule.linear, tuple):
        parts = [call_rule(rule, _replaced(args, _linear_inputs(spec, args, tangents)), static)]
    elif rule.vjps:
        transposed = _transposed_vjp(spec, ans, args, static, tangents)
        parts = [transposed] if transposed is not None else []
    else:
        raise ForwardADError(
            f"forward-mode AD: {spec.node_cls.__name__} ({rule.name}) has "
            "neither a JVP nor a VJP to derive one from"
        )
    return _sum(parts)


def _call_vjp(fn, t, ans, args, static, p, varargs):
    if varargs:
        return fn(t, ans, *args, argnum=p, **static)
    return fn(t, ans, *args, **static)


def _sum(parts):
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        if isinstance(total, (tuple, list)):
            total = type(total)(a + b for a, b in zip(total, part))
        else:
            total = total + part
    return total


def _replaced(args, replace):
    return tuple(replace.get(i, a) for i, a in enumerate(args))


def _linear_inputs(spec, args, tangents):
    """The inputs a linear rule is applied to: tangents where there are, zeros elsewhere."""
    rule = spec.rule
    linear = None if rule.linear == "joint" else set(rule.linear)
    replace = {}
    for p, a in enumerate(args):
        if linear is not None and p not in linear:
            continue
        if linear is None and not spec.varargs and rule.vjp_for(p) is None:
            continue  # an index or a static argument
        if p in tangents:
            replace[p] = tangents[p]
        elif isinstance(a, Tensor):
            replace[p] = _wrap(devices.xp_of(a._data).zeros_like(a._data))
        elif isinstance(a, (float, int)) and not isinstance(a, bool):
            replace[p] = type(a)(0)
        elif isinstance(a, np.ndarray):
            replace[p] = np.zeros_like(a)
    return replace


def call_rule(rule, args, static):
    """The rule's primitive on `args` and the static arguments: by keyword, as the rules'
    lambdas pass them, except to a primitive that takes them by position only
    (`operator.getitem(x, index)`)."""
    if not static or rule.varargs is not None or not _positional_only(rule.fn):
        return rule.forward(*args, **static)
    positional = list(args)
    rest = dict(static)
    for name in rule.params[len(args) :]:
        if name not in rest:
            break
        positional.append(rest.pop(name))
    return rule.forward(*positional, **rest)


_POSITIONAL_ONLY: dict = {}


def _positional_only(fn) -> bool:
    found = _POSITIONAL_ONLY.get(fn)
    if found is None:
        try:
            params = inspect.signature(fn).parameters.values()
            found = any(p.kind is p.POSITIONAL_ONLY for p in params)
        except (TypeError, ValueError):  # no signature (a ufunc): numpy's keywords
            found = False
        _POSITIONAL_ONLY[fn] = found
    return found


def _identity(g, x):
    return g


_AS_JVP: dict = {}


def as_jvp(vjp):
    """An elementwise VJP read as its JVP: the same code with `unbroadcast` the identity (a
    tangent keeps the shape broadcasting gives it), as the compiler's forward mode reads it."""
    made = _AS_JVP.get(vjp.__code__)
    if made is None:
        env = dict(vjp.__globals__)
        env["unbroadcast"] = _identity
        made = _AS_JVP[vjp.__code__] = types.FunctionType(
            vjp.__code__, env, vjp.__name__, vjp.__defaults__, vjp.__closure__
        )
        made.__kwdefaults__ = vjp.__kwdefaults__
    return made


def _transposed_vjp(spec, ans, args, static, tangents):
    """J t for a rule with only VJPs: the gradient of <vjp(g), t> with respect to g (the VJP
    is linear in g, so this is exact wherever the VJP itself is differentiable)."""
    rule = spec.rule
    outs = ans if isinstance(ans, list) else [ans]
    gs = [_wrap(devices.xp_of(o._data).zeros_like(o._data), requires_grad=True) for o in outs]
    g = gs if isinstance(ans, list) else gs[0]
    connected = any(isinstance(a, Tensor) and a.requires_grad for a in args) or any(
        t.requires_grad for t in tangents.values()
    )
    with enable_grad():
        total = None
        for p, t in tangents.items():
            vjp = rule.vjp_for(p)
            if vjp is None:
                continue
            gi = _call_vjp(vjp, g, ans, args, static, p, spec.varargs)
            if not isinstance(gi, Tensor) or not gi.requires_grad:
                if not np.any(devices.host(gi._data if isinstance(gi, Tensor) else gi)):
                    continue  # a zero VJP (fill_): this input contributes nothing
                raise ForwardADError(
                    f"forward-mode AD: the VJP of {spec.node_cls.__name__} ({rule.name}) for "
                    f"input {p} is not differentiable, so its JVP cannot be derived from it"
                )
            term = (gi * t).sum()
            total = term if total is None else total + term
    if total is None:
        return None
    grads = _engine_grad(total, gs, create_graph=STATE.enabled and connected, allow_unused=True)
    grads = [
        gr if gr is not None else _wrap(devices.xp_of(o._data).zeros_like(o._data))
        for gr, o in zip(grads, outs)
    ]
    return grads if isinstance(ans, list) else grads[0]


def conform(t, out):
    """A tangent as `out` holds it: a Tensor of out's shape (broadcast where an input's
    tangent was smaller) and dtype."""
    if not isinstance(t, Tensor):
        t = _wrap(devices.xp_of(out._data).asarray(t))
    if t._data.dtype != out._data.dtype and out._data.dtype.kind in "fc":
        t = t.to(out.dtype)  # (x.to(float32)'s tangent is float32, as torch's)
    if t._data.shape != out._data.shape:
        t = t.expand(out._data.shape).clone()
    return t


def inplace(self, data, spec, args, static, self_pos):
    """The tangent of `self` after an in-place op that writes `data` into it (computed from
    the values before the write, which the caller makes next)."""
    tangents = _tangents(spec, args)
    own = tangent_of(self)
    if not tangents and own is None:
        return None
    old = _wrap(self._data.copy())
    if own is not None:
        tangents.setdefault(self_pos, own)
    args = list(args)
    args[self_pos] = old
    new = self._data.copy()
    new[...] = data
    ans = _wrap(new)
    if not tangents:
        return None
    DUAL.on = False
    try:
        t = tangent(spec, ans, tuple(args), static or {}, tangents)
        return conform(t, ans) if t is not None else None
    finally:
        DUAL.on = True


def store(self, new_tangent, replay):
    """Give `self` its tangent after an in-place op: written into the tangent it has (so the
    views sharing it see the change), else set. A view without one first gets the same view
    of a zero tangent given to its base, as torch does, so that its base sees the write:
    `replay(array, steps)` takes a view's steps on another array (`shape_ops.apply_steps`)."""
    own = tangent_of(self)
    if new_tangent is None:  # what was written depends on no tangent: zero
        if own is None:
            return
        new_tangent = _wrap(devices.xp_of(self._data).zeros_like(self._data))
    if own is None and self._base is not None:
        base = self._base
        if tangent_of(base) is None:
            set_tangent(base, _wrap(devices.xp_of(base._data).zeros_like(base._data)))
        own = _wrap(replay(tangent_of(base)._data, self._extra.view_steps))
        set_tangent(self, own)
    if own is not None:
        DUAL.on = False
        try:
            own.copy_(new_tangent)
        finally:
            DUAL.on = True
        return
    set_tangent(self, new_tangent)


def copied(self, src):
    """The tangent of `self` after `self.copy_(src)`: src's, broadcast and cast to self's
    shape and dtype (zeros where src has none)."""
    t = tangent_of(src)
    DUAL.on = False
    try:
        if t is None:
            return _wrap(devices.xp_of(self._data).zeros_like(self._data))
        return conform(t.to(self.dtype), self)
    finally:
        DUAL.on = True
