"""Instantiate a rule's VJP template as IR statements.

`Instantiator.vjp(rule, argnum, call, g, ans, name)` reads the VJP lambda's source
(`ops.vjp_template`), binds its parameters to the atoms of the forward call, and partially
evaluates its body; its other names stand for what they are where the lambda runs
(`ops.template_name`: its module's helpers, its closure's constants; there is no shared
namespace). Conditions on ranks and static arguments (`x.ndim == 2`, `axis is None`) are
decided now, constant sub-expressions are folded, `x * 1` and friends simplify, and
`unbroadcast`/`broadcast_to`/`reshape` disappear where the shapes already agree. What is
left is emitted as A-normal-form statements, each with its abstract value recorded, and
the atom holding the result is returned.

Why one module: one evaluator of rule templates (binding, folding, the run-time facts).
"""

from __future__ import annotations

import numbers
import warnings

import gast
import numpy as np

from ... import errors
from ...ops import OPERATORS, RULES, rule_for_function, template_name, vjp_template
from ..analysis import UNKNOWN, AVal, abstract_call
from ..ir import Assign, Call, Const, Tup, Var, atom_vars
from ..names import name_for_call
from .template_replay import canonical, replay, shape_key

_NO_VALUE = object()

_PY_BINOPS = {
    gast.Add: lambda a, b: a + b,
    gast.Sub: lambda a, b: a - b,
    gast.Mult: lambda a, b: a * b,
    gast.Div: lambda a, b: a / b,
    gast.Pow: lambda a, b: a**b,
    gast.FloorDiv: lambda a, b: a // b,
    gast.Mod: lambda a, b: a % b,
    gast.BitAnd: lambda a, b: a & b,
    gast.BitOr: lambda a, b: a | b,
}
_COMPARES = {
    gast.Lt: ("lt", lambda a, b: a < b),
    gast.LtE: ("le", lambda a, b: a <= b),
    gast.Gt: ("gt", lambda a, b: a > b),
    gast.GtE: ("ge", lambda a, b: a >= b),
    gast.Eq: ("eq", lambda a, b: a == b),
    gast.NotEq: ("ne", lambda a, b: a != b),
    gast.Is: (None, lambda a, b: a is b),
    gast.IsNot: (None, lambda a, b: a is not b),
}
# `&`/`|` of masks in templates become numpy calls
_MASK_OPS = {gast.BitAnd: "logical_and", gast.BitOr: "logical_or"}


class PV:
    """A partially evaluated value: an atom or a namespace object, plus its static value if known."""

    __slots__ = ("atom", "static", "obj", "foldable")

    def __init__(self, atom=None, static=_NO_VALUE, obj=None, foldable=True):
        # `foldable` is False for values read from shapes (x.size): known, so they can decide
        # a rule's conditions, but printed by name so the code does not hard-wire one shape
        self.atom, self.static, self.obj, self.foldable = atom, static, obj, foldable

    @property
    def known(self):
        return self.static is not _NO_VALUE


class _RunTimeFact(Exception):
    """A template needs a static fact (a rank) that only the running program knows."""


def _reads_rank(node) -> bool:
    """Whether a template's condition reads a rank or a size (known when the code runs)."""
    return any(
        isinstance(n, gast.Attribute) and n.attr in ("ndim", "size") for n in gast.walk(node)
    )


def _printable(value) -> bool:
    if value is None or value is Ellipsis or isinstance(value, (bool, str)):
        return True
    if isinstance(value, numbers.Number):
        return len(repr(value)) <= 10
    if isinstance(value, tuple):
        return all(_printable(v) for v in value)
    if isinstance(value, slice):
        return all(_printable(v) for v in (value.start, value.stop, value.step))
    return False


def _python(value):
    """numpy scalars and 0-d arrays as Python numbers (so they print as literals)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _whole_of_a_number(pvs) -> bool:
    """`number[...]` or `number[()]`: the whole of a Python number, which numpy indexes as a
    0-d array (a rule's `g[index]` where the gradient is the literal seed `1.0`)."""
    base, index = pvs
    return (
        base.known
        and isinstance(base.static, numbers.Number)
        and index.known
        and (index.static is Ellipsis or (type(index.static) is tuple and not index.static))
    )


_EVAL_METHODS: dict = {}  # gast node class -> Instantiator.eval_<class name> (one lookup a node)


class Instantiator:
    """Emits backward statements into `out`, keeping `env` (name -> AVal) up to date.

    `shape_source` maps a value to an earlier value of the same shape, so that
    `x.shape` in a template reads the shape of something already kept.
    """

    def __init__(self, env: dict, namer, out: list, shape_source: dict):
        self.env = env
        self.namer = namer
        self.out = out
        self.shape_source = shape_source
        self.loc = None
        self.note = ""
        self.start = 0
        self.jvp_mode = False  # instantiating VJPs as JVPs (forward mode): no unbroadcast
        self.defs: dict = {}  # backward temp -> the Call that computed it
        # whether a name holds one value wherever it is read (the caller knows its program:
        # reverse.Reverser says which primal values and accumulators are reassigned)
        self.stable = lambda name: name in self.defs
        # instantiations recorded per shape of their operands, replayed for the next operands
        # of that shape (template_replay); `log` collects the one being evaluated
        self.recordings: dict = {}
        self.log = None

    def made_by(self, atom):
        """The Call that computed the temporary `atom`, when the values it read still hold
        (so it may be rewritten in terms of them here): they are assigned once, or nothing
        emitted since in this block assigns them; else None."""
        call = self.defs.get(atom.name) if isinstance(atom, Var) else None
        if call is None:
            return None
        read = {n for a in call.atoms() for n in atom_vars(a)}
        if all(self.stable(n) for n in read):
            return call
        for stmt in reversed(self.out):  # (emitted since, in this block: nothing writes them)
            if isinstance(stmt, Assign) and stmt.target == atom.name:
                return call
            if getattr(stmt, "target", None) in read or not hasattr(stmt, "target"):
                return None
        return None

    # -- entry point ---------------------------------------------------------------------------

    def vjp(self, rule, argnum, call, g, ans, name):
        if rule.run_time_vjp:  # Python code, not a template: called when the backward runs
            args = [Const(rule.name), Const(argnum), g, ans, *call.args]
            return self.emit("vjp_at_run_time", args, list(call.kwargs), name).atom
        return self.template(rule.vjp_for(argnum), rule, call, g, ans, name, argnum)

    def template(self, fn, rule, call, first, ans, name, argnum):
        """Instantiate a rule lambda whose first two parameters are the incoming adjoint (a VJP's
        `g`) or tangent (a JVP's `t`) and `ans`, bound to `first` and `ans`: evaluated, or
        replayed from an instantiation for operands of the same shape (template_replay)."""
        keyed = shape_key(self, fn, rule, call, first, ans, argnum)
        if keyed is None:
            return self.evaluate(fn, rule, call, first, ans, name, argnum)
        key, names = keyed
        recording = self.recordings.get(key)
        if recording is not None:
            self.start, self.note = len(self.out), rule.family
            return replay(self, recording, names, name)
        self.log = log = []
        try:
            result = self.evaluate(fn, rule, call, first, ans, name, argnum)
        finally:
            self.log = None
        recording = canonical(log, names, result, name, self.loc, rule.family)
        if recording is not None:
            self.recordings[key] = recording
        return result

    def evaluate(self, fn, rule, call, first, ans, name, argnum):
        """Instantiate the template by partial evaluation (see `template`)."""
        lam = vjp_template(fn)
        first_name, ans_name = (a.id for a in lam.args.args[:2])
        bindings = {
            first_name: PV(first, self.static_of(first)),
            ans_name: PV(ans, self.static_of(ans)),
        }
        if not call.kwargs and rule.varargs is None and len(call.args) == len(rule.params):
            # (the common case, as Signature.bind would map it, without inspect's cost:
            # every positional parameter given, keyword-only ones at their defaults)
            bound = dict(zip(rule.params, call.args))
            for pname, default in rule.defaults.items():
                if pname not in bound:
                    bound[pname] = default
        else:
            bound = rule.bind(call.args, dict(call.kwargs))
        for pname, atom in bound.items():
            if pname == rule.varargs:
                items = tuple(atom)
                statics = [self.static_of(a) for a in items]
                if all(s is not _NO_VALUE for s in statics) and _printable(tuple(statics)):
                    bindings[pname] = PV(Const(tuple(statics)), tuple(statics))
                else:
                    bindings[pname] = PV(Tup(items), _NO_VALUE)
                continue
            if isinstance(atom, str) or (
                not isinstance(atom, (Var, Const, Tup)) and not hasattr(atom, "lower")
            ):  # (a Slc has .lower)
                atom = Const(atom)  # a default value filled in by bind()
            bindings[pname] = PV(atom, self.static_of(atom))
        bindings["argnum"] = PV(Const(argnum), argnum)
        self.bindings, self.scope = bindings, fn
        self.start = len(self.out)  # statements from here on belong to this instantiation
        self.note = rule.family
        try:
            result = self.eval(lam.body, top_name=name)
        except _RunTimeFact:
            # the rule chooses its formula by a fact known only when it runs (the rank of a
            # value whose shape changes from one loop trip to the next): call it then
            del self.out[self.start :]
            if self.log is not None:
                self.log.append(("truncate",))
            op = "jvp_at_run_time" if fn in rule.jvps else "vjp_at_run_time"
            args = [Const(rule.name), Const(argnum), first, ans, *call.args]
            return self.emit(op, args, list(call.kwargs), name).atom
        if result.atom is None:
            raise errors.SourcegradError(f"the VJP template of {rule.name} did not produce a value")
        return result.atom

    # -- static values ------------------------------------------------------------------------

    def static_of(self, atom):
        if isinstance(atom, Const):
            return atom.value
        if isinstance(atom, Var):
            aval = self.env.get(atom.name)
            if aval is not UNKNOWN and aval is not None and aval.known:
                return aval.stand_in
        return _NO_VALUE

    def aval(self, atom):
        if isinstance(atom, Var):
            return self.env.get(atom.name)
        if isinstance(atom, Const):
            return AVal(atom.value, known=True)
        return UNKNOWN

    def shape_of(self, pv):
        aval = self.aval(pv.atom) if pv.atom is not None else None
        return aval.shape if aval is not UNKNOWN and aval is not None else None

    # -- emission -----------------------------------------------------------------------------

    def emit(self, op, args, kwargs=(), name=None) -> PV:
        call = Call(op, tuple(args), tuple(kwargs))
        rule = RULES[op]
        target = self.namer.fresh(name or name_for_call(op, rule.spelling, args))
        stmt = Assign(target, call, self.loc, self.note)
        self.out.append(stmt)
        self.defs[target] = call
        aval = abstract_call(call, self.env)
        self.env[target] = aval
        if self.log is not None:  # (recording an instantiation: see template_replay)
            how = ("lit", name) if name else ("call", op, tuple(args))
            self.log += [("fresh", how, target), ("emit", stmt, target, aval)]
        static = aval.stand_in if aval is not UNKNOWN and aval.known else _NO_VALUE
        return PV(Var(target), static, foldable=False)

    def call(self, op, pvs, kwargs=(), name=None) -> PV:
        """Emit (or fold, or simplify away) `op(*pvs, **kwargs)`."""
        rule = RULES[op]
        kw = tuple((k, v) for k, v in kwargs)
        if rule.type_fact:
            aval = abstract_call(Call(op, tuple(p.atom for p in pvs)), self.env)
            value = bool(aval.stand_in) if aval is not UNKNOWN else True
            return PV(Const(value), value)
        if op == "getitem" and _whole_of_a_number(pvs):
            return pvs[0]  # `g[...]` of a gradient that is a Python number (a 0-d seed)
        if (
            rule.pure
            and all(p.known and p.foldable for p in pvs)
            and all(v.known and v.foldable for _, v in kw)
        ):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                value = _python(
                    rule.forward(*[p.static for p in pvs], **{k: v.static for k, v in kw})
                )
            if _printable(value):
                return PV(Const(value), value)
        op, pvs = self.unbroadcast_scalars(op, pvs, kw)
        pvs = self.float_operands(op, pvs)
        simplified = self.simplify(op, pvs, kw)
        if simplified is not None:
            return self.rename_last(simplified, name) if name is not None else simplified
        return self.emit(op, [p.atom for p in pvs], [(k, v.atom) for k, v in kw], name)

    def float_operands(self, op, pvs):
        """`g * 2.0` for `g * 2` (the 2 of the user's `x ** 2`) when g is floating: the same
        number and the same result dtype (Python numbers are weak scalars to numpy), and
        float-with-float arithmetic is the fast path for Python floats and numpy alike."""
        spelling = RULES[op].spelling
        if spelling.kind != "binop" or spelling.text not in ("+", "-", "*", "/") or len(pvs) != 2:
            return pvs  # (Python's + - * / only: `x ** 2` and `x ** 2.0` are computed differently)
        out = []
        for pv, other in zip(pvs, reversed(pvs)):
            if (
                isinstance(pv.atom, Const)
                and type(pv.atom.value) is int
                and abs(pv.atom.value) < 2**53
                and self.floating(other)
            ):
                pv = PV(Const(float(pv.atom.value)), float(pv.atom.value), foldable=pv.foldable)
            out.append(pv)
        return out

    def floating(self, pv) -> bool:
        aval = self.aval(pv.atom) if pv.atom is not None else None
        if aval in (None, UNKNOWN):
            return False
        value = aval.stand_in
        return type(value) is float or (
            isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f"
        )

    def scalar_broadcast(self, pv):
        """The operand `c` if `pv` was emitted as `np.broadcast_to(c, shape)`, else None."""
        if not isinstance(pv.atom, Var):
            return None
        call = self.made_by(pv.atom)
        if call is None or call.op != "broadcast_to":
            return None
        c = call.args[0]
        aval = self.aval(c)
        if aval is UNKNOWN or aval is None:
            return None
        return PV(c, self.static_of(c), foldable=False)

    def unbroadcast_scalars(self, op, pvs, kw):
        """(op, operands) to compute instead: use the broadcast operand itself where
        broadcasting it first changes nothing.

        Sums and means produce `np.broadcast_to(c, shape)`; an elementwise operation
        with an operand of that shape broadcasts `c` anyway, a second broadcast of it is
        a broadcast of c, and a reshape of one number broadcast is that number broadcast
        to the new shape.
        """
        rule = RULES[op]
        if op in ("broadcast_to", "expand_dims", "reshape") and not kw:
            scalar = self.scalar_broadcast(pvs[0])
            if scalar is None:
                return op, pvs
            if op == "broadcast_to":
                return op, [scalar, pvs[1]]
            aval = self.aval(scalar.atom)
            if aval in (None, UNKNOWN) or np.size(aval.stand_in) != 1:
                # a reshape of an array broadcast along some axes moves its values: only a
                # single value broadcast is the same broadcast to the new shape (fuzz 61-1577)
                return op, pvs
            out = abstract_call(Call(op, tuple(p.atom for p in pvs)), self.env)
            if out is UNKNOWN:
                return op, pvs
            return "broadcast_to", [scalar, PV(Const(out.shape), out.shape)]
        if rule.kind != "elementwise" or kw or not rule.differentiable:
            return op, pvs
        pushed = self.push_broadcast_out(op, pvs)
        if pushed is not None:
            return "broadcast_to", pushed
        scalars = [self.scalar_broadcast(pv) for pv in pvs]
        if all(scalar is None for scalar in scalars):
            return op, pvs  # (no operand broadcast: the common case, decided before numpy)
        original = abstract_call(Call(op, tuple(p.atom for p in pvs)), self.env)
        if original is UNKNOWN:
            return op, pvs
        new = list(pvs)
        for i, _pv in enumerate(pvs):
            scalar = scalars[i]
            if scalar is None:
                continue
            trial = list(new)
            trial[i] = scalar
            aval = abstract_call(Call(op, tuple(p.atom for p in trial)), self.env)
            if (
                aval is not UNKNOWN
                and aval.shape == original.shape
                and aval.dtype == original.dtype
            ):
                new = trial
        return op, new

    def push_broadcast_out(self, op, pvs):
        """`broadcast_to(c, s) * 2` -> `broadcast_to(c * 2, s)`: compute on the small operand.

        Returns the operands of that broadcast_to, or None."""
        for i, pv in enumerate(pvs):
            call = self.made_by(pv.atom)
            if call is None or call.op != "broadcast_to":
                continue
            others = [p for j, p in enumerate(pvs) if j != i]
            if not all(
                self.aval(p.atom) not in (None, UNKNOWN) and self.aval(p.atom).ndim == 0
                for p in others
            ):
                continue
            operand = PV(call.args[0], self.static_of(call.args[0]), foldable=False)
            inner = self.call(op, [operand if j == i else p for j, p in enumerate(pvs)])
            shape = PV(call.args[1], self.static_of(call.args[1]), foldable=False)
            return [inner, shape]
        return None

    def rename_last(self, pv, name):
        """Give the statement just emitted for `pv` the name meant for the call it replaces."""
        last = self.out[-1] if len(self.out) > self.start else None
        if isinstance(pv.atom, Var) and isinstance(last, Assign) and last.target == pv.atom.name:
            target = self.namer.fresh(name)
            if self.log is not None:
                self.log += [("fresh", ("lit", name), target), ("rename", last.target, target)]
            self.env[target] = self.env.pop(last.target)
            if last.target in self.defs:
                self.defs[target] = self.defs.pop(last.target)
            last.target = target
            return PV(Var(target), pv.static, foldable=pv.foldable)
        return pv

    def simplify(self, op, pvs, kw):
        """Algebra that needs no code: x * 1, x + 0, x ** 1, and no-op shape fixes."""

        # (long: a table of algebraic identities, one `if` per op; split, each piece would
        # be one test)
        def is_const(pv, value):
            return (
                pv.known
                and isinstance(pv.static, numbers.Number)
                and not isinstance(pv.static, bool)
                and pv.static == value
            )

        if kw:
            return None
        if op == "mul_op":
            a, b = pvs
            if is_const(b, 1) and self.keeps_shape(a, b):
                return a
            if is_const(a, 1) and self.keeps_shape(b, a):
                return b
            if is_const(a, -1) and self.keeps_shape(b, a):
                return self.call("neg_op", [b])  # -1.0 * x -> -x
            for r, other in ((a, b), (b, a)):  # (1.0 / y) * x -> x / y (then CSE can share it)
                made = self.made_by(r.atom)
                if (
                    made is not None
                    and made.op == "div_op"
                    and not made.kwargs
                    and isinstance(made.args[0], Const)
                    and made.args[0].value == 1
                    and not isinstance(made.args[0].value, bool)
                ):
                    divisor = made.args[1]
                    return self.call("div_op", [other, PV(divisor, self.static_of(divisor))])
        if op in ("div_op",) and is_const(pvs[1], 1) and self.keeps_shape(*pvs):
            return pvs[0]
        if op == "pow_op" and is_const(pvs[1], 1) and self.keeps_shape(*pvs):
            return pvs[0]
        if op in ("add_op", "sub_op") and is_const(pvs[1], 0) and self.keeps_shape(*pvs):
            return pvs[0]
        if op == "add_op" and is_const(pvs[0], 0) and self.keeps_shape(pvs[1], pvs[0]):
            return pvs[1]
        if op == "unbroadcast":
            a, b = pvs
            sa, sb = self.shape_of(a), self.shape_of(b)
            if self.jvp_mode or (sa is not None and sa == sb):
                return a  # forward mode: a tangent keeps the shape broadcasting gives it
            avals = [self.aval(p.atom) for p in (a, b)]
            if all(
                v not in (None, UNKNOWN) and not isinstance(v.stand_in, (list, tuple))
                for v in avals
            ):
                reduced = self.explicit_reduction(a, sa, sb)
                if reduced is not None:
                    return reduced
        if op == "T" and isinstance(pvs[0].atom, Var):
            made = self.made_by(pvs[0].atom)
            if made is not None and made.op == "T":  # x.T.T -> x
                inner = made.args[0]
                return PV(inner, self.static_of(inner))
            if (
                made is not None
                and made.op == "matmul_op"
                and not made.kwargs
                and all(
                    self.shape_of(PV(a)) is not None and len(self.shape_of(PV(a))) == 2
                    for a in made.args
                )
            ):
                # (a @ b).T -> b.T @ a.T: a product laid out in order, not a transposed view
                a, b = (PV(x, self.static_of(x)) for x in made.args)
                return self.call("matmul_op", [self.call("T", [b]), self.call("T", [a])])
        if op in ("broadcast_to", "reshape"):
            a, shape = pvs
            sa = self.shape_of(a)
            if (
                shape.known
                and sa is not None
                and tuple(np.atleast_1d(shape.static)) == sa
                or (shape.known and shape.static == () and sa == ())
            ):
                return a
        return None

    def explicit_reduction(self, g, g_shape, x_shape):
        """`unbroadcast(g, x)` spelled as the sum it is, when both shapes are known:
        `np.sum(g, axis=0)` for a bias, `np.sum(g, axis=1, keepdims=True)` for a column."""
        if g_shape is None or x_shape is None or len(g_shape) < len(x_shape):
            return None
        extra = len(g_shape) - len(x_shape)
        kept = tuple(
            i for i, (n, m) in enumerate(zip(g_shape[extra:], x_shape)) if m == 1 and n != 1
        )
        if any(m not in (1, n) for n, m in zip(g_shape[extra:], x_shape)):
            return None
        if not x_shape and extra:  # down to a scalar
            return self.emit("sum", [g.atom])
        if extra and kept:
            return None  # two reductions: leave it to the runtime helper
        if extra:
            axis = 0 if extra == 1 else tuple(range(extra))
            return self.emit("sum", [g.atom], [("axis", Const(axis))])
        if kept:
            axis = kept[0] if len(kept) == 1 else kept
            return self.emit("sum", [g.atom], [("axis", Const(axis)), ("keepdims", Const(True))])
        return None

    def keeps_shape(self, a, other):
        """True when combining `a` with the scalar `other` leaves `a` unchanged: the same shape,
        and a floating type (`1.0 * mask` is a float array, not the boolean mask itself)."""
        sa = self.shape_of(a)
        if sa is None or np.ndim(other.static) != 0:
            return False
        aval = self.aval(a.atom)
        if aval in (None, UNKNOWN):
            return False
        if aval.is_python_scalar:  # a number stays a number (a bool would not)
            return not isinstance(aval.stand_in, bool)
        if not isinstance(aval.stand_in, (np.ndarray, np.generic)):
            return False  # a tuple (a shape) or a list is not an array a product keeps
        return np.result_type(aval.stand_in).kind in "fc"

    # -- partial evaluation --------------------------------------------------------------------

    def eval(self, node, top_name=None) -> PV:
        kind = type(node)
        method = _EVAL_METHODS.get(kind)
        if method is None:
            method = getattr(Instantiator, "eval_" + kind.__name__, None)
            if method is None:
                raise errors.SourcegradError(f"rule templates cannot use {kind.__name__}")
            _EVAL_METHODS[kind] = method
        return method(self, node, top_name)

    def eval_Constant(self, node, name):
        return PV(Const(node.value), node.value)

    def eval_Name(self, node, name):
        if node.id in self.bindings:
            return self.bindings[node.id]
        # (as the lambda finds it when it runs: its closure, its module's globals, a builtin)
        try:
            obj = template_name(self.scope, node.id)
        except NameError:
            raise errors.SourcegradError(f"rule template uses unknown name {node.id!r}") from None
        if (
            obj is None
            or isinstance(obj, (bool, int, float, complex, str))
            or (isinstance(obj, tuple) and _printable(obj))
        ):
            return PV(Const(obj), obj)  # (a constant of the rule's family: a closure's `kind`)
        return PV(obj=obj)

    def eval_Tuple(self, node, name):
        items = [self.eval(e) for e in node.elts]
        if all(i.known for i in items):
            value = tuple(i.static for i in items)
            if _printable(value):
                return PV(Const(value), value)
        return PV(Tup(tuple(i.atom for i in items)))

    eval_List = eval_Tuple

    def eval_Attribute(self, node, name):
        base = self.eval(node.value)
        if base.obj is not None:
            return PV(obj=getattr(base.obj, node.attr))
        aval = self.aval(base.atom)
        if node.attr == "ndim" and aval is not UNKNOWN and aval is not None:
            return PV(Const(aval.ndim), aval.ndim)
        if node.attr == "ndim":
            raise _RunTimeFact()
        if node.attr in ("shape", "size") and aval not in (None, UNKNOWN) and aval.is_python_scalar:
            value = () if node.attr == "shape" else 1  # a Python number: no .shape to read
            return PV(Const(value), value)
        if node.attr in ("shape", "size") and isinstance(base.atom, Var):
            source = self.shape_source.get(base.atom.name, base.atom.name)
            if aval in (None, UNKNOWN) or not hasattr(aval.stand_in, "shape"):
                # it may be a Python number at run time: np.shape(x) reads one, x.shape not
                return self.emit(f"np_{node.attr}", [Var(source)], name=name)
            return self.emit(node.attr, [Var(source)], name=name)
        if node.attr == "T":
            return self.call("T", [base], name=name)
        raise errors.SourcegradError(f"rule templates cannot read .{node.attr}")

    def eval_Subscript(self, node, name):
        base = self.eval(node.value)
        index = self.eval_index(node.slice)
        if isinstance(base.atom, Tup) and index.known and isinstance(index.static, int):
            item = base.atom.items[index.static]
            return PV(item, self.static_of(item))
        return self.call("getitem", [base, index], name=name)

    def eval_index(self, node):
        if isinstance(node, gast.Slice):
            parts = [
                self.eval(p) if p is not None else PV(Const(None), None)
                for p in (node.lower, node.upper, node.step)
            ]
            if all(p.known for p in parts):
                value = slice(*(p.static for p in parts))
                return PV(Const(value), value)
            from ..ir import Slc

            return PV(Slc(*(p.atom for p in parts)))
        if isinstance(node, gast.Tuple):  # `x[..., :m, m:]`: slices among the items
            items = [self.eval_index(e) for e in node.elts]
            if all(i.known for i in items):
                value = tuple(i.static for i in items)
                return PV(Const(value), value)
            return PV(Tup(tuple(i.atom for i in items)))
        return self.eval(node)

    def eval_UnaryOp(self, node, name):
        operand = self.eval(node.operand)
        if isinstance(node.op, gast.Not):
            if not operand.known:
                raise errors.ShapeError("a rule's condition could not be decided statically")
            return PV(Const(not operand.static), not operand.static)
        if isinstance(node.op, gast.USub):
            if operand.known and isinstance(operand.static, numbers.Number):
                return PV(Const(-operand.static), -operand.static)
            return self.call("neg_op", [operand], name=name)
        if isinstance(node.op, gast.Invert):
            # (`~mask` was read as `mask`: a rule's `g * ~m` gave the gradient `g * m`, the
            # one for the other elements; second outsider probes)
            if operand.known and operand.foldable and _printable(~operand.static):
                return PV(Const(~operand.static), ~operand.static)
            return self.call("invert_op", [operand], name=name)
        if isinstance(node.op, gast.UAdd):
            return operand
        raise errors.SourcegradError(
            f"rule templates cannot apply the operator {type(node.op).__name__}"
        )

    def eval_BinOp(self, node, name):
        left, right = self.eval(node.left), self.eval(node.right)
        op_type = type(node.op)
        if (
            left.known
            and right.known
            and left.foldable
            and right.foldable
            and not isinstance(left.static, np.ndarray)
            and not isinstance(right.static, np.ndarray)
        ):
            value = _PY_BINOPS[op_type](left.static, right.static)
            if _printable(value):
                return PV(Const(value), value)
        if op_type in _MASK_OPS:
            return self.call(_MASK_OPS[op_type], [left, right], name=name)
        return self.call(OPERATORS[op_type.__name__], [left, right], name=name)

    def eval_BoolOp(self, node, name):
        is_and = isinstance(node.op, gast.And)
        for value_node in node.values:
            value = self.eval(value_node)
            if not value.known:
                raise errors.ShapeError("a rule's condition could not be decided statically")
            if bool(value.static) != is_and:
                return value
        return value

    def eval_Compare(self, node, name):
        left = self.eval(node.left)
        right = self.eval(node.comparators[0])
        op_name, fn = _COMPARES[type(node.ops[0])]
        if left.known and right.known:
            value = fn(left.static, right.static)
            if isinstance(value, (bool, np.bool_)):
                return PV(Const(bool(value)), bool(value))
        if op_name is None:
            if right.known and right.static is None:  # `x is None` for an array: False
                result = isinstance(node.ops[0], gast.IsNot)
                return PV(Const(result), result)
            raise errors.ShapeError("a rule's identity test could not be decided statically")
        return self.call(op_name, [left, right], name=name)

    def eval_IfExp(self, node, name):
        test = self.eval(node.test)
        if not test.known:
            if _reads_rank(node.test):
                raise _RunTimeFact()
            raise errors.ShapeError(
                "a rule's condition could not be decided before running "
                "(the ranks of its operands are unknown)"
            )
        return self.eval(node.body if test.static else node.orelse, name)

    def eval_Call(self, node, name):
        func = self.eval(node.func)
        args = [self.eval(a) for a in node.args]
        kwargs = [(k.arg, self.eval(k.value)) for k in node.keywords]
        obj = func.obj
        rule = rule_for_function(obj)
        if rule is None:
            raise errors.SourcegradError(f"rule template calls {obj!r}, which has no rule")
        if rule.sequence_input:
            items = args[0].static if args[0].known else args[0].atom.items
            args = [PV(Const(i), i) if args[0].known else PV(i) for i in items] + args[1:]
        return self.call(rule.name, args, kwargs, name=name)
