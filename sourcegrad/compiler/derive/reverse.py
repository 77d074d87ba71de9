"""Reverse mode: a primal `ir.Function` -> its gradient `ir.Function`.

`reverse(fn, wrt, env, namer, with_value, as_tuple)` takes the lowered function,
the positions of the parameters to differentiate, the abstract values of every
value (`analysis.infer_shapes`) and returns a function with the same parameters:
the forward sweep (the primal statements, plus what the backward needs saved),
then the adjoint sweep (the primal statements in reverse order, each replaced by
its rule's instantiated VJP templates), then the return of the gradients.

Adjoints. Only active values (`analysis.active_values`) get adjoints. In
straight-line code an adjoint is formed where its value is defined, as the sum
of the contributions its uses made, and named `d_<value>` (`dw` for a
parameter). Inside a loop or branch an adjoint lives in a variable that
accumulates (`d_h = d_h + ...`, in place where the array is the backward's own,
and `d_x[i] += g` for the adjoint of an item); the first contribution after the
value's definition was reversed is an assignment, not an addition to zeros.

Saved values. A value that is overwritten (assigned in a loop, or assigned more
than once) and that the backward reads is pushed on a stack before each
overwrite and popped back after the reverse of that assignment, so the backward
always reads the value the forward had at that point ("restore" semantics).
Values that are never overwritten are read directly, and cheap ones a loop makes
from its index (`x_t = xs[t]`, `t + 1`) are made again in the backward trip
(`Reverser.recomputable`) instead of saved. A loop's trip count is
counted only when the loop cannot be replayed by `reversed(range(...))` (it has
a `break`, or it is a `while`), and pushed only when the loop itself runs inside
another loop. A branch's reverse reads the branch condition, which is saved by
the same rule as any other value (so only inside loops).

Why one module: one pass, whose statement, loop and branch cases share the adjoint state
it builds (the adjoint of each name, what is saved, what is recomputed).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from ... import errors, ops
from ...ops import RULES, has, reads_shape_of
from ..analysis import (
    UNKNOWN,
    AVal,
    abstract_call,
    active_values,
    aval_of,
    holds_complex,
    shift_invariant_maxima,
)
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    Function,
    If,
    Marker,
    Pop,
    Push,
    Return,
    Slc,
    Tup,
    Var,
    While,
    atom_vars,
    child_blocks,
    reads_of,
    walk,
    writes_of,
)
from ..names import adjoint_name, name_for_call
from . import checkpointing
from .templates import Instantiator


def input_positions(rule, call):
    """(position, atom) for every input of `call`, keyword inputs at their parameter's position.

    Only named positional parameters can be passed by keyword; a keyword-only argument
    after *varargs (`axis` of concatenate) is static and has no position."""
    names = list(rule.params)
    positions = list(enumerate(call.args))
    for k, atom in call.kwargs:
        if k in names:
            positions.append((names.index(k), atom))
    return positions


class _Restore:
    """Placeholder in the backward: restore `target` to its value before `site` ran."""

    def __init__(self, target, site, loc):
        self.target, self.site, self.loc = target, site, loc


class _TripPop:
    """Placeholder: pop the trip count of a nested loop before its reverse."""

    def __init__(self, target, loc):
        self.target, self.loc = target, loc


def _assignment_sites(fn):
    """name -> list of (Assign statement, depth in compound statements, inside a loop)."""
    sites = defaultdict(list)

    def visit(stmts, depth, in_loop):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                sites[stmt.target].append((stmt, depth, in_loop))
            elif isinstance(stmt, If):
                visit(stmt.body, depth + 1, in_loop)
                visit(stmt.orelse, depth + 1, in_loop)
            elif isinstance(stmt, For):
                visit(stmt.body, depth + 1, True)
            elif isinstance(stmt, While):
                visit(stmt.test_body, depth + 1, True)
                visit(stmt.body, depth + 1, True)

    visit(fn.body, 0, False)
    return sites


def _loop_targets(fn):
    return {s.target for s in walk(fn.body) if isinstance(s, For)}


def shape_sources(stmts, env, user_names, params):
    """For each value, a value of the same shape for templates to read `.shape` from.

    An elementwise result has the shape of its same-shaped operand, so `exp(z).shape`
    can be read as `z.shape`. The nearest value that has a user's name (or is a
    parameter) is preferred, since it reads best and is usually kept anyway.
    """
    source = {p: p for p in params}
    for stmt in walk(stmts):
        if not isinstance(stmt, Assign):
            continue
        source.setdefault(stmt.target, stmt.target)
        if stmt.target in user_names:
            continue
        value, aval = stmt.value, env.get(stmt.target)
        if not isinstance(value, Call) or aval is UNKNOWN or aval is None:
            continue
        if RULES[value.op].kind != "elementwise":
            continue
        for atom in value.args:
            other = env.get(atom.name) if isinstance(atom, Var) else None
            if (
                other is not UNKNOWN
                and other is not None
                and other.shape == aval.shape
                and not other.is_python_scalar
            ):
                source[stmt.target] = source.get(atom.name, atom.name)
                break
    return source


def _owned(op) -> bool:
    """Does `op` always return a new array (never a view or one of its inputs), so that an
    accumulator holding its result may be updated in place? (The registry's "owned".)"""
    return ops.has(op, "owned")


def _is_sequence(aval) -> bool:
    return aval not in (None, UNKNOWN) and isinstance(aval.stand_in, (list, tuple))


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def holds_integers(aval) -> bool:
    """Is the value an array or numpy scalar of an integer or boolean dtype?"""
    if aval in (None, UNKNOWN):
        return False
    return getattr(getattr(aval.stand_in, "dtype", None), "kind", "f") in "biu"


def zeros_op(aval):
    """np.zeros_like for a known array; the general helper for lists and unknown values."""
    if aval is not UNKNOWN and aval is not None and isinstance(aval.stand_in, np.ndarray):
        return "np_zeros_like"
    return "zeros_adjoint"


def _is_list(aval):
    """Might this be a list (whose adjoint is a list, added item by item)?"""
    return aval is UNKNOWN or aval is None or isinstance(aval.stand_in, (list, tuple))


class Reverser:
    def __init__(self, fn, wrt_names, env, namer):
        self.fn = fn
        self.env = env
        self.namer = namer
        self.params = set(fn.params)
        self.active = active_values(fn, wrt_names) | (set(wrt_names) & self._read_anywhere(fn))
        self.active -= shift_invariant_maxima(fn)  # their derivative contribution is zero
        self.sites = _assignment_sites(fn)
        self.loop_targets = _loop_targets(fn)
        # names whose value can change after it was read: snapshot before keeping them pending
        # (a parameter assigned once is overwritten too: it held the argument before)
        self.overwritten = {
            n
            for n, s in self.sites.items()
            if len(s) + (n in self.params) > 1 or any(s_[2] for s_ in s)
        }
        self.overwritten |= self.loop_targets
        self.inst = Instantiator(
            env, namer, [], shape_sources(fn.body, env, fn.user_names, fn.params)
        )
        # complex values anywhere (ops/complex_values.py: adjoints of real values are made real)
        self.complex_program = any(holds_complex(a) for a in env.values())
        # a primal value assigned once, or a backward temporary, holds one value wherever
        # the backward reads it; loop variables, restored values and accumulators do not
        # (an accumulator, one in self.state, whatever else its name was: see
        # _loop_body_with_constants)
        self.inst.stable = lambda name: (
            name not in self.state
            and (
                name in self.inst.defs
                or (name not in self.overwritten and name not in self.acc.values())
            )
        )
        self.pending = defaultdict(list)  # SSA adjoints: contributions not summed yet
        self.state: dict = {}  # accumulator name -> "explicit" | "zero"
        self.acc: dict = {}  # primal name -> its accumulator variable
        self.counters: dict = {}  # id(loop) -> (counter name, pushed)
        self.loop_depth = 0
        self.owned: set = set()  # accumulators whose array no other name refers to
        self.uses = self._contribution_counts(fn)
        self.given = defaultdict(int)
        self.handed = defaultdict(int)  # adjoint name -> how many inputs it was handed to
        self.placeholders: set = set()  # values a zero reads that may not be bound yet
        self.recomputed: set = set()  # loop values the backward recomputes, not saves

    def _contribution_counts(self, fn):
        """How many adjoint contributions each active value receives (to name them)."""
        counts = defaultdict(int)
        for stmt in walk(fn.body):
            if not (isinstance(stmt, Assign) and stmt.target in self.active):
                continue
            value = stmt.value
            if isinstance(value, Var):
                counts[value.name] += 1
                continue
            if not isinstance(value, Call):
                continue
            rule = RULES[value.op]
            for pos, atom in input_positions(rule, value):
                if (
                    isinstance(atom, Var)
                    and atom.name in self.active
                    and rule.vjps
                    and rule.vjp_for(pos) is not None
                ):
                    counts[atom.name] += 1
        return counts

    @staticmethod
    def _read_anywhere(fn):
        return {n for s in walk(fn.body) for n in reads_of(s)}

    # -- output -------------------------------------------------------------------------------

    @property
    def out(self):
        return self.inst.out

    def nested(self, fn):
        saved = self.inst.out
        self.inst.out = []
        try:
            fn()
            return self.inst.out
        finally:
            self.inst.out = saved

    def assign(self, target, value, loc, note=""):
        """Emit `target = value` for an accumulator or snapshot, recording its abstract value.

        Such a variable is reassigned, so its abstract value never counts as known
        (a template must not fold the zero it starts as)."""
        self.out.append(Assign(target, value, loc, note))
        self.track_ownership(target, value)
        if isinstance(value, Var):
            aval = self.env.get(value.name)
        elif isinstance(value, Call):
            aval = abstract_call(value, self.env)
        else:
            aval = aval_of(value.value)
        if aval in (None, UNKNOWN):
            # an array's adjoint has its shape and dtype, whatever made it (an item of a
            # list's adjoint, a helper's result)
            primal = self.env.get(next((p for p, a in self.acc.items() if a == target), None))
            if primal not in (None, UNKNOWN) and isinstance(primal.stand_in, np.ndarray):
                aval = primal
        if aval is not UNKNOWN and aval is not None:
            aval = AVal(aval.stand_in, known=False)
        previous = self.env.get(target)
        if (
            previous is not None
            and aval is not UNKNOWN
            and previous is not UNKNOWN
            and previous.shape != aval.shape
        ):
            aval = UNKNOWN
        self.env[target] = aval

    # -- adjoints -----------------------------------------------------------------------------

    def accumulator(self, name):
        if name not in self.acc:
            self.acc[name] = self.namer.fresh(adjoint_name(name, name in self.params))
        return self.acc[name]

    def zero(self, name, loc):
        """Code for a zero adjoint of `name` (shaped like its current value)."""
        value = self.zero_value(name)
        if isinstance(value, Const):
            return value
        self.inst.loc, self.inst.note = loc, "zero"
        return self.inst.emit(value.op, list(value.args), list(value.kwargs)).atom

    def zero_value(self, name):
        """A zero adjoint for `name`: 0.0 for a number, else zeros like its value. A value
        that only some branches or loop trips make may be unbound where the zero goes, so
        when its shape is known the zeros are made from the shape instead."""
        aval = self.env.get(name)
        if aval is not UNKNOWN and aval is not None and aval.is_python_scalar:
            return Const(0.0)
        maybe_unbound = name not in self.params and all(
            depth > 0 for _, depth, _ in self.sites.get(name, [(None, 1, None)])
        )
        if maybe_unbound and aval not in (None, UNKNOWN) and isinstance(aval.stand_in, np.ndarray):
            dtype = () if aval.dtype == np.float64 else (("dtype", Const(str(aval.dtype))),)
            return Call("np_zeros", (Const(aval.shape),), dtype)
        if maybe_unbound:
            self.placeholders.add(name)  # bound to None first: zeros_adjoint(None) is 0.0
        return Call(zeros_op(aval), (Var(name),))

    def total(self, parts, name, loc, result_name):
        """Sum of contribution atoms, the last addition named `result_name`."""
        total = parts[0]
        for i, part in enumerate(parts[1:]):
            self.inst.loc, self.inst.note = loc, "accumulate"
            op = "add_adjoints" if _is_list(self.env.get(name)) else "add_op"
            final = i == len(parts) - 2
            total = self.inst.emit(op, [total, part], name=result_name if final else None).atom
        return total

    def take(self, name, loc):
        """The adjoint of `name`'s current value (None: zero); the older value's starts at zero."""
        if name in self.acc and self.state.get(self.acc[name]) is not None:
            acc = self.acc[name]
            if self.state[acc] == "zero":
                return None
            self.state[acc] = "zero"
            return Var(acc)
        parts = self.pending.pop(name, [])
        if not parts:
            return None
        return self.total(parts, name, loc, adjoint_name(name, name in self.params))

    def contribute(self, name, part, loc):
        if name in self.acc and self.state.get(self.acc[name]) is not None:
            acc = self.acc[name]
            if isinstance(part, Var) and part.name == acc and self.state[acc] == "zero":
                self.state[acc] = "explicit"  # `d_x = d_x`: it already holds the value
                return
            if self.state[acc] == "zero":
                self.assign(acc, part, loc, "accumulate")
            elif _is_list(self.env.get(name)):
                self.assign(acc, Call("add_adjoints", (Var(acc), part)), loc, "accumulate")
            else:
                # the part's own computation, read again here only while its operands still
                # hold what it read (`s = s - (2.0 * s - s)` in a loop: the part `-d_s` was
                # made before d_s was updated, so it is not `d_s` negated any more)
                made = self.inst.made_by(part) if isinstance(part, Var) else None
                # d + -(e) -> d - e (`x = x - (x + x)` negates d_x, then adds to it)
                subtract = made is not None and made.op == "neg_op"
                other = made.args[0] if subtract else part
                unsigned = self.unsigned_product(part, made)
                if unsigned is not None:  # d + (-e) * v -> d - e * v
                    subtract, other = True, unsigned
                if made is not None and made.op == "unindex" and self.can_update_item(acc, made):
                    # `d_xs[t] += g`: the item's adjoint added where it goes, not as zeros
                    # the size of xs (which would cost a full array per loop trip)
                    g, _, index = made.args
                    call = Call("iadd_item", (Var(acc), index, g))
                elif self.can_update_in_place(acc, other):
                    call = Call("isub_op" if subtract else "iadd_op", (Var(acc), other))
                else:
                    call = Call("sub_op" if subtract else "add_op", (Var(acc), other))
                self.assign(acc, call, loc, "accumulate")
            self.state[acc] = "explicit"
            return
        if isinstance(part, Var) and (part.name in self.overwritten or part.name in self.state):
            snapshot = self.namer.fresh(part.name + "_now")
            self.assign(snapshot, part, loc)
            part = Var(snapshot)
        self.pending[name].append(part)

    def unsigned_product(self, part, made):
        """`e * v` for a part `(-e) * v` (or `v * (-e)`), emitted here; None for any other
        part. Adding it with `-` skips the negation (the backward of `a = -k * x - c * v`
        negates no adjoint). `made` is the product's call as `made_by` gives it (its
        operands still hold); the negation is looked through the same way, since it was
        made earlier and `e` (an accumulator) may have been updated in between."""
        if made is None or made.op != "mul_op" or made.kwargs:
            return None
        for k, atom in enumerate(made.args):
            negated = self.inst.made_by(atom) if isinstance(atom, Var) else None
            if negated is None or negated.op != "neg_op":
                continue
            operands = (negated.args[0], made.args[1 - k])
            args = (operands[0], operands[1]) if k == 0 else (operands[1], operands[0])
            return self.inst.emit("mul_op", list(args)).atom
        return None

    def can_update_in_place(self, acc, part):
        """`acc += part` is safe when acc's array is ours alone and keeps its shape."""
        if acc not in self.owned:
            return False
        mine, theirs = self.env.get(acc), self.aval_of_atom(part)
        if mine in (None, UNKNOWN) or theirs in (None, UNKNOWN):
            return False
        if not isinstance(mine.stand_in, np.ndarray):
            return False
        try:
            return np.broadcast_shapes(mine.shape, theirs.shape) == mine.shape
        except ValueError:
            return False

    def can_update_item(self, acc, unindex):
        """`acc[index] += g` for `unindex(g, x, index)` is safe when acc's array is ours
        alone, has x's shape, and the index is basic (ints and slices): an integer-array
        index may repeat an element, which `+=` would add only once."""
        if acc not in self.owned:
            return False
        mine, theirs = self.env.get(acc), self.aval_of_atom(unindex.args[1])
        if (
            mine in (None, UNKNOWN)
            or theirs in (None, UNKNOWN)
            or not isinstance(mine.stand_in, np.ndarray)
            or not isinstance(theirs.stand_in, np.ndarray)
            or mine.shape != theirs.shape
        ):
            return False
        return self.basic_index(unindex.args[2])

    def basic_index(self, atom):
        if isinstance(atom, Tup):
            return all(self.basic_index(a) for a in atom.items)
        if isinstance(atom, Slc):
            return all(self.basic_index(a) for a in (atom.lower, atom.upper, atom.step))
        value = (
            atom.value
            if isinstance(atom, Const)
            else getattr(self.aval_of_atom(atom), "stand_in", None)
        )
        if isinstance(value, tuple):
            return all(self.basic_index(Const(v)) for v in value)
        if isinstance(value, slice):
            return all(v is None or _is_int(v) for v in (value.start, value.stop, value.step))
        return value is None or value is Ellipsis or _is_int(value)

    def aval_of_atom(self, atom):
        if isinstance(atom, Var):
            return self.env.get(atom.name)
        if isinstance(atom, Const):
            return aval_of(atom.value)
        return UNKNOWN

    def track_ownership(self, target, value):
        """Which accumulators hold an array nobody else refers to (so `+=` may update it)."""
        if isinstance(value, Var):
            self.owned.discard(value.name)  # now shared by two names
            producer = self.inst.defs.get(value.name)
            # a fresh array handed to one adjoint only: an adjoint that flows unchanged to
            # several inputs (through `+`) is one array, still read by the others' rules
            fresh = (
                producer is not None
                and _owned(producer.op)
                and self.handed[value.name] <= 1
                and not any(value in parts for parts in self.pending.values())
            )
        else:
            fresh = isinstance(value, Call) and _owned(value.op)
        if fresh:
            self.owned.add(target)
        else:
            self.owned.discard(target)

    def materialize(self, names, loc):
        """Move these adjoints into accumulator variables (before a loop or branch)."""
        for name in sorted(names):
            acc = self.accumulator(name)
            if self.state.get(acc) is not None:
                if self.state[acc] == "zero":
                    self.assign(acc, self.zero(name, loc), loc, "zero")
                    self.state[acc] = "explicit"
                continue
            parts = self.pending.pop(name, [])
            value = self.total(parts, name, loc, None) if parts else self.zero(name, loc)
            self.assign(acc, value, loc, "accumulate" if parts else "zero")
            self.state[acc] = "explicit"

    def settle(self, names, loc):
        """Make lazily-zero accumulators explicit (at the end of a branch or loop body)."""
        for name in sorted(names):
            acc = self.acc.get(name)
            if acc is not None and self.state.get(acc) == "zero":
                self.assign(acc, self.zero(name, loc), loc, "zero")
                self.state[acc] = "explicit"

    def carried(self, stmt):
        """Active names a compound statement reads that are defined before it (or loop-carried)."""
        inner = [s for s in walk([stmt])]
        written = {s.target for s in inner if isinstance(s, Assign)}
        read = {n for s in inner for n in reads_of(s)}
        names = set()
        for n in read:
            if n not in self.active:
                continue
            if n not in written or self._live_in(stmt, n):
                names.add(n)
        for n in written & self.active:
            if n in self.pending or (n in self.acc and self.state.get(self.acc[n]) == "explicit"):
                names.add(n)
        return names

    def _live_in(self, stmt, name):
        """Is `name` read in the statement before the statement assigns it (loop-carried, or
        read by one branch of an `if` whose other branch assigns it)?"""
        return _first_use([stmt], name) == "read"

    # -- the sweep ----------------------------------------------------------------------------

    def block(self, stmts):
        for stmt in reversed(stmts):
            if isinstance(stmt, Assign):
                self.assignment(stmt)
            elif isinstance(stmt, If):
                self.if_(stmt)
            elif isinstance(stmt, For):
                self.for_(stmt)
            elif isinstance(stmt, While):
                self.while_(stmt)
            elif isinstance(stmt, ExprStmt):
                continue  # forward-only effect
            else:
                raise AssertionError(stmt)

    def assignment(self, stmt):
        target = stmt.target
        if target in self.active:
            g = self.take(target, stmt.loc)
            if g is not None:
                self.inst.loc = stmt.loc
                self.propagate(stmt, g)
        self.out.append(_Restore(target, stmt, stmt.loc))

    def propagate(self, stmt, g):
        """Contributions of `stmt`'s adjoint `g` to its inputs.

        All contributions are computed before any is added, so `h = f(h)` reads the
        adjoint of the new h from its accumulator before the old h's adjoint replaces it.
        """
        # (long: every refusal a statement's adjoint may meet (complex values, list
        # concatenation, an unnamed tuple, no rule) is checked in this one place before any
        # contribution is added; each is a few lines)
        value = stmt.value
        if not isinstance(value, Call):
            if isinstance(value, Var) and value.name in self.active:
                self.contribute(value.name, g, stmt.loc)
            return
        rule = RULES[value.op]
        if not rule.differentiable:
            return  # `s = np.zeros_like(x)` then `s = s + ...`: s is active, this value is not
        if holds_integers(self.env.get(stmt.target)):
            # an integer or boolean result (`x.astype(int)`, `np.asarray(x, dtype=bool)`) is
            # piecewise constant in its inputs, as int(x) is: no gradient goes back through
            # it (astype's rule alone handed the adjoint back as if the cast were the identity)
            return
        complex_values = holds_complex(self.env.get(stmt.target)) or any(
            isinstance(a, Var) and a.name in self.active and holds_complex(self.env.get(a.name))
            for a in value.args
        )
        # (a value whose type is not known here, one that becomes complex in a loop, may be
        # either where the program has complex values: analysis.check_real_values refused
        # the ops without complex rules, and real_part decides when the backward runs)
        unknown = self.complex_program and any(
            self.env.get(n) in (None, UNKNOWN)
            for n in [stmt.target]
            + [a.name for a in value.args if isinstance(a, Var) and a.name in self.active]
        )
        if complex_values and not has(value.op, "complex"):
            # its rules are written for real numbers: a complex value's adjoint would be
            # silently wrong (numpy's ComplexWarning at most)
            raise errors.ComplexValueError(
                f"{rule.family} of complex values is not differentiated (its rule is written "
                "for real numbers)",
                stmt.loc,
            )
        container = self.env.get(_var_name(value.args[0])) if value.args else None
        if (
            value.op == "np_array"
            and container not in (None, UNKNOWN)
            and not isinstance(container.stand_in, (list, tuple))
        ):
            rule = RULES["asarray"]  # np.array(x) of an array is a copy: its adjoint is g
        if value.op in ("add_op", "mul_op", "iadd_op") and any(
            isinstance(a, Tup) or _is_sequence(self.aval_of_atom(a)) for a in value.args
        ):
            raise errors.UnsupportedSyntaxError(
                f"{'+' if value.op != 'mul_op' else '*'} of lists or tuples (concatenation, "
                "repetition) is not differentiated: build the list from its items ([a, b]) "
                "or with list.append",
                stmt.loc,
            )
        parts = []
        for pos, atom in input_positions(rule, value):
            if (
                isinstance(atom, Tup)
                and rule.vjp_for(pos) is not None
                and self.active.intersection(atom_vars(atom))
            ):
                # (the front end makes such a tuple a value of its own: an adjoint has
                # nowhere to go in an unnamed one, and dropping it would be a zero gradient)
                raise errors.UnsupportedSyntaxError(
                    "a tuple of differentiated values is passed where its gradient cannot "
                    "be followed; build it first (t = (a, b)) and pass t",
                    stmt.loc,
                )
            if not (isinstance(atom, Var) and atom.name in self.active):
                continue
            if not rule.vjps:
                raise errors.NoRuleError(
                    f"{rule.name} has no derivative rule yet (it is used "
                    "only by generated code; higher-order derivatives "
                    "through it are not supported)",
                    stmt.loc,
                )
            if rule.vjp_for(pos) is None:
                continue
            name = self.contribution_name(atom.name)
            try:
                part = self.inst.vjp(rule, pos, value, g, Var(stmt.target), name)
                if complex_values or unknown:
                    part = self.real_part(part, atom, name)
            except errors.SourcegradError as e:
                raise errors.locate(e, stmt.loc) from e
            parts.append((atom.name, part))
        for _, part in parts:
            if isinstance(part, Var):
                self.handed[part.name] += 1  # before any is added: see track_ownership
        for primal, part in parts:
            self.contribute(primal, part, stmt.loc)

    def real_part(self, part, primal, name):
        """The adjoint `part` of `primal` made by a rule of complex values: its real part if
        primal is real (a complex adjoint's imaginary part is the derivative in a direction a
        real value cannot move in); decided when the backward runs where primal's type is not
        known here (it becomes complex in a loop)."""
        made, mine = self.inst.aval(part), self.env.get(primal.name)
        if holds_complex(mine) or (made not in (None, UNKNOWN) and not holds_complex(made)):
            return part
        if mine in (None, UNKNOWN):
            return self.inst.emit("real_like", [part, primal], name=name).atom
        return self.inst.emit("np_real", [part], name=name).atom

    def contribution_name(self, primal):
        base = adjoint_name(primal, primal in self.params)
        if primal in self.acc and self.state.get(self.acc[primal]) is not None:
            return base + "_part"
        if self.uses[primal] <= 1:
            return base
        self.given[primal] += 1
        return f"{base}_{self.given[primal]}"

    def if_(self, stmt):
        names = self.carried(stmt)
        self.materialize(names, stmt.loc)
        before = dict(self.state)
        owned_before = set(self.owned)

        def branch(stmts):
            def run():
                # each branch starts from the state before the `if`: what one branch makes
                # (an accumulator it owns, one it zeroed) says nothing about the other
                self.state = dict(before)
                self.owned = set(owned_before)
                self.block(stmts)
                self.settle(names | self.touched(stmt), stmt.loc)

            return run

        body = self.nested(branch(stmt.body))
        after_body, owned_body = dict(self.state), set(self.owned)
        orelse = self.nested(branch(stmt.orelse))
        after_else = dict(self.state)
        self.owned = owned_body & self.owned  # owned after the `if` only if owned on both paths
        # a branch that left an accumulator lazily zero (or never made it) where the other
        # holds a value: that branch sets it to zero
        merged = dict(after_body)
        for acc in set(after_body) | set(after_else):
            a, b = after_body.get(acc), after_else.get(acc)
            if a != b and "explicit" in (a, b):
                name = next(n for n, v in self.acc.items() if v == acc)
                fix = [Assign(acc, self.zero_value(name), stmt.loc, "zero")]
                (body if a != "explicit" else orelse).extend(fix)
                merged[acc] = "explicit"
            elif a is None:
                merged[acc] = b
        self.state = merged
        self.out.append(If(stmt.test, body, orelse, stmt.loc))

    def touched(self, stmt):
        return {s.target for s in walk([stmt]) if isinstance(s, Assign)} & self.active

    def loop_body(self, stmt, body):
        names = self.carried(stmt)
        # an adjoint that is a constant before the loop and that every trip hands on
        # unchanged (`s = s + f(x)` seeded with 1.0) stays a constant inside the body
        constants = {
            n
            for n in names
            if self.state.get(self.acc.get(n)) is None
            and self.pending.get(n)
            and all(isinstance(p, Const) for p in self.pending[n])
        }
        if constants:
            generated = self._loop_body_with_constants(stmt, body, names, constants)
            if generated is not None:
                return generated
        return self._loop_body(stmt, body, names)

    def _loop_body_with_constants(self, stmt, body, names, constants):
        """The body generated with `constants` left pending, or None (after undoing the
        attempt) when one of them does not come out of a trip as it went in."""
        self.materialize(names - constants, stmt.loc)
        snapshot, out_len, taken = self._snapshot(), len(self.out), set(self.namer.taken)
        defs, env = dict(self.inst.defs), dict(self.env)
        before = {n: list(self.pending[n]) for n in constants}
        generated = self._loop_body(stmt, body, names - constants, materialized=True)
        if all(
            self.pending.get(n) == before[n] and self.state.get(self.acc.get(n)) is None
            for n in constants
        ):
            return generated
        self._restore(snapshot)
        del self.out[out_len:]
        # the names of the attempt are free again, and so is what they were: a name the
        # attempt gave a temporary (`dx = ... + 0.75`, in defs) may name an accumulator
        # next, and a computation looked through under that name would read the
        # accumulator after it changed (fuzz 0-176)
        self.namer.taken = taken
        self.inst.defs = defs
        self.env.clear()
        self.env.update(env)
        return None

    def _loop_body(self, stmt, body, names, materialized=False):
        if not materialized:
            self.materialize(names, stmt.loc)
        start_state = dict(self.state)

        def run():
            self.loop_depth += 1
            try:
                self.block(body)
            finally:
                self.loop_depth -= 1
            self.settle(names, stmt.loc)
            for acc, st in start_state.items():
                if st == "explicit" and self.state.get(acc) == "zero":
                    name = next(n for n, v in self.acc.items() if v == acc)
                    self.settle({name}, stmt.loc)

        # The next iteration starts where this one ended: an accumulator the body rebinds to
        # an array it does not own must not be updated in place at the top of the body. So
        # the body is generated again, owning less, until the ownership it ends with covers
        # the ownership it assumed (usually the first attempt already does).
        snapshot = self._snapshot()
        owned = set(self.owned)
        before = set(owned)
        for _ in range(3):
            self._restore(snapshot)
            self.owned = set(owned)
            generated = self.nested(run)
            if self.owned >= owned:
                self.owned &= before  # the loop may run zero times
                return generated
            owned &= self.owned
        self._restore(snapshot)
        self.owned = set()
        return self.nested(run)

    def _snapshot(self):
        return (
            dict(self.state),
            set(self.owned),
            {k: list(v) for k, v in self.pending.items()},
            dict(self.acc),
            dict(self.counters),
            dict(self.given),
            self.loop_depth,
        )

    def _restore(self, snapshot):
        state, owned, pending, acc, counters, given, depth = snapshot
        self.state, self.owned, self.acc = dict(state), set(owned), dict(acc)
        self.pending = defaultdict(list, {k: list(v) for k, v in pending.items()})
        self.counters, self.given, self.loop_depth = dict(counters), defaultdict(int, given), depth

    def for_(self, stmt):
        written = {s.target for s in walk(stmt.body) if isinstance(s, Assign)}
        bounds_fixed = not any(
            isinstance(a, Var) and (a.name in written or a.name in self.overwritten)
            for a in (stmt.start, stmt.stop, stmt.step)
        )
        recompute = self.recomputable(stmt)
        if stmt.stop_flag is None and bounds_fixed:
            body = self.loop_body(stmt, stmt.body)
            self.out.append(
                For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    recompute + body,
                    stmt.loc,
                    reverse=True,
                )
            )
            return
        counter = self.count_trips(stmt)
        self.unstack_trips(stmt, counter)
        stop = Var(counter)
        if not (stmt.start == Const(0) and stmt.step == Const(1)):
            self.inst.loc, self.inst.note = stmt.loc, "trip count"
            span = self.inst.emit("mul_op", [stop, stmt.step]).atom
            stop = self.inst.emit("add_op", [stmt.start, span]).atom
        body = self.loop_body(stmt, stmt.body)
        self.out.append(
            For(stmt.target, stmt.start, stop, stmt.step, recompute + body, stmt.loc, reverse=True)
        )

    def recomputable(self, loop):
        """Statements of `loop`'s body the backward trip re-runs instead of saving their
        values: `x_t = xs[t]` (an item of an array nothing writes, at the loop's index)
        and number arithmetic on the index (`i + 1`). The backward trip has the same
        index, so computing them again costs less than a push and a pop, and the rows of
        `xs` stay recognisable as `xs` itself (for `optimize.rank_one.batch_rank_one_updates`).
        Each must be made once, read only after it in the same trip, from constants,
        the index, values assigned once outside loops, or values recomputed before it."""
        if loop.target in self.sites:
            return []
        out, recomputed = [], set()

        def fixed(atom):
            if isinstance(atom, Tup):
                return all(fixed(a) for a in atom.items)
            if isinstance(atom, Slc):
                return all(fixed(a) for a in (atom.lower, atom.upper, atom.step))
            if not isinstance(atom, Var):
                return True
            sites = self.sites.get(atom.name, [])
            return (
                atom.name == loop.target
                or atom.name in recomputed
                or (
                    atom.name not in self.loop_targets
                    and all(depth == 0 and not in_loop for _, depth, in_loop in sites)
                    and len(sites) <= 1
                )
            )

        for i, stmt in enumerate(loop.body):
            if not (
                isinstance(stmt, Assign)
                and isinstance(stmt.value, Call)
                and len(self.sites[stmt.target]) == 1
                and RULES[stmt.value.op].pure
            ):
                continue
            aval = self.env.get(stmt.target)
            number = aval not in (None, UNKNOWN) and type(aval.stand_in) in (int, float)
            if not (
                stmt.value.op == "getitem"
                or (number and stmt.value.op in ("add_op", "sub_op", "mul_op"))
            ):
                continue
            if not all(fixed(a) for a in stmt.value.atoms()):
                continue
            reads_before = {n for s in walk(loop.body[:i]) for n in reads_of(s)}
            reads_inside = sum(n == stmt.target for s in walk(loop.body) for n in reads_of(s))
            reads_all = sum(n == stmt.target for s in walk(self.fn.body) for n in reads_of(s))
            if stmt.target in reads_before or reads_inside != reads_all:
                continue
            recomputed.add(stmt.target)
            out.append(Assign(stmt.target, stmt.value, stmt.loc, "recomputed"))
        self.recomputed |= recomputed
        return out

    def while_(self, stmt):
        counter = self.count_trips(stmt)
        self.unstack_trips(stmt, counter)
        body = self.loop_body(stmt, stmt.body)
        self.out.append(
            For(self.namer.fresh("_"), Const(0), Var(counter), Const(1), body, stmt.loc)
        )

    def count_trips(self, stmt):
        counter = self.namer.fresh("trips")
        nested = self.loop_depth > 0
        self.counters[id(stmt)] = (counter, nested)
        return counter

    def unstack_trips(self, stmt, counter):
        counter, nested = self.counters[id(stmt)]
        if nested:
            self.out.append(_TripPop(counter, stmt.loc))


def _first_use(stmts, name):
    """ "read" if some path through `stmts` reads `name` (in a value, not a test) before
    assigning it, "write" if every path assigns it first, None otherwise."""
    for s in stmts:
        if isinstance(s, If):
            uses = (_first_use(s.body, name), _first_use(s.orelse, name))
            if "read" in uses:
                return "read"
            if uses == ("write", "write"):
                return "write"
        elif isinstance(s, (For, While)):  # a loop may run zero times: it assigns nothing surely
            body = s.body if isinstance(s, For) else s.test_body + s.body
            if _first_use(body, name) == "read":
                return "read"
        elif name in reads_of(s):
            return "read"
        elif isinstance(s, Assign) and s.target == name:
            return "write"
    return None


def _keep_old_shapes(fn, env, namer):
    """`h = h.reshape(1, 3)` (or `h = h * W`, broadcasting) where h's shape is known only at
    run time: the backward reads the old h's shape, so the new value is computed into a
    temporary first and then copied to h, which lets the reverse restore the old h before
    the rule reads it. (With static shapes the rule's templates fold the shape instead.)"""

    def split(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, If):
                stmt = If(stmt.test, split(stmt.body), split(stmt.orelse), stmt.loc)
            elif isinstance(stmt, For):
                stmt = dataclasses.replace(stmt, body=split(stmt.body))
            elif isinstance(stmt, While):
                stmt = dataclasses.replace(
                    stmt, test_body=split(stmt.test_body), body=split(stmt.body)
                )
            elif isinstance(stmt, Assign) and _reads_own_shape(stmt, env):
                rule = RULES[stmt.value.op]
                temp = namer.fresh(name_for_call(rule.name, rule.spelling, stmt.value.args))
                env[temp] = env.get(stmt.target)
                out.append(Assign(temp, stmt.value, stmt.loc, stmt.note))
                stmt = Assign(stmt.target, Var(temp), stmt.loc, stmt.note)
            out.append(stmt)
        return out

    return dataclasses.replace(fn, body=split(fn.body))


def _reads_own_shape(stmt, env):
    value = stmt.value
    if not isinstance(value, Call) or env.get(stmt.target) not in (None, UNKNOWN):
        return False
    rule = RULES[value.op]
    params = list(rule.params)
    positions = [(params[i] if i < len(params) else None, a) for i, a in enumerate(value.args)]
    positions += [(k, a) for k, a in value.kwargs]
    return any(
        a == Var(stmt.target) and p is not None and reads_shape_of(rule, p) for p, a in positions
    )


def _var_name(atom):
    return atom.name if isinstance(atom, Var) else None


# --- putting the sweeps together --------------------------------------------------------------


def _recorded(fn, backward, rev):
    """Overwritten names the backward reads: these are pushed and popped."""
    reads = set()
    for s in walk(backward):  # (one walk)
        if type(s) is If and isinstance(s.test, Var):
            reads.add(s.test.name)
        if not isinstance(s, (_Restore, _TripPop)):
            reads.update(reads_of(s))
    counters = {c for c, _ in rev.counters.values()}
    recorded = set()
    for name, sites in rev.sites.items():
        if name in counters or name in rev.loop_targets or name in rev.recomputed:
            continue
        overwrites = len(sites) + (1 if name in fn.params else 0) > 1
        if name in reads and (overwrites or any(in_loop for _, _, in_loop in sites)):
            recorded.add(name)
    return recorded


def _push_sites(fn, recorded, rev):
    """Assignments that must push the old value, and names to bind (to None) at the start."""
    push, init = set(), []
    for name in sorted(recorded):
        sites = rev.sites[name]
        first, depth, in_loop = sites[0]
        is_param = name in fn.params  # a parameter holds a value before any assignment
        for i, (stmt, d, loop) in enumerate(sites):
            if i == 0 and d == 0 and not loop and not is_param:
                continue  # the first definition: there is nothing to restore
            push.add(id(stmt))
        if (depth > 0 or in_loop) and not is_param:
            init.append(name)
    return push, init


def _forward(stmts, push, rev, loc):
    """The forward sweep: primal statements with pushes and trip counters added."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, Assign):
            if id(stmt) in push:
                out.append(Push(Var(stmt.target), stmt.loc))
            out.append(stmt)
        elif isinstance(stmt, If):
            out.append(
                If(
                    stmt.test,
                    _forward(stmt.body, push, rev, loc),
                    _forward(stmt.orelse, push, rev, loc),
                    stmt.loc,
                )
            )
        elif isinstance(stmt, (For, While)):
            counter = rev.counters.get(id(stmt))
            body = _forward(stmt.body, push, rev, loc)
            if counter:
                out.append(Assign(counter[0], Const(0), stmt.loc, "trip count"))
                body = [
                    Assign(
                        counter[0],
                        Call("add_op", (Var(counter[0]), Const(1))),
                        stmt.loc,
                        "trip count",
                    )
                ] + body
            if isinstance(stmt, For):
                out.append(
                    For(
                        stmt.target,
                        stmt.start,
                        stmt.stop,
                        stmt.step,
                        body,
                        stmt.loc,
                        stmt.stop_flag,
                    )
                )
            else:
                out.append(
                    While(_forward(stmt.test_body, push, rev, loc), stmt.test, body, stmt.loc)
                )
            if counter and counter[1]:
                out.append(Push(Var(counter[0]), stmt.loc))
        else:
            out.append(stmt)
    return out


def _finish_backward(stmts, push):
    """Turn restore placeholders into pops where a push was made; drop the others."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, _Restore):
            if id(stmt.site) in push:
                out.append(Pop(stmt.target, stmt.loc))
        elif isinstance(stmt, _TripPop):
            out.append(Pop(stmt.target, stmt.loc))
        elif isinstance(stmt, If):
            out.append(
                If(
                    stmt.test,
                    _finish_backward(stmt.body, push),
                    _finish_backward(stmt.orelse, push),
                    stmt.loc,
                )
            )
        elif isinstance(stmt, For):
            out.append(
                For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    _finish_backward(stmt.body, push),
                    stmt.loc,
                    stmt.stop_flag,
                    stmt.reverse,
                )
            )
        else:
            out.append(stmt)
    return out


def _output_seed(rev, ret, out_aval, cotangent):
    """The output's adjoint: a vjp's cotangent; 1.0 for a scalar; ones of its shape for an
    array of one element ((1,), (1, 1): grad differentiates its element, as autograd's grad
    and torch's backward() do)."""
    if cotangent is not None:
        return Var(cotangent)
    if out_aval in (None, UNKNOWN) or out_aval.shape == ():
        return Const(1.0)
    rev.inst.loc = ret.loc
    rev.inst.note = "an output of one element"
    return rev.inst.emit("np_ones_like", [ret.value], name=adjoint_name(ret.value.name, False)).atom


def _without_aux(fn):
    """(fn returning only its output, that Return, aux) for a function returning
    `(output, aux)`: what only aux reads is not active (no adjoint is made for it)."""
    output, aux = fn.body[-1].value.items
    ret = Return(output, fn.body[-1].loc)
    fn = Function(
        fn.name,
        fn.params,
        fn.body[:-1] + [ret],
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
        fn.stack,
    )
    return fn, ret, aux


def _check_scalar_output(fn, ret, out_aval):
    """grad (no cotangent) differentiates a scalar output, or an array of one element."""
    if out_aval is not UNKNOWN and out_aval is not None and np.size(out_aval.stand_in) != 1:
        raise errors.NonScalarOutputError(
            f"grad needs a function with a scalar output (or one element), but {fn.name} "
            f"returns an array of shape {out_aval.shape}; differentiate a scalar (such as its "
            "sum) or use vjp",
            ret.loc,
        )


def _gradient(rev, fn, name, env):
    """The gradient of the input `name` once the backward is built: its adjoint, zeros if
    it does not reach the output, the conjugate (torch's dL/dRe + 1j dL/dIm) if complex."""
    rev.inst.loc = fn.loc
    g = rev.take(name, fn.loc)
    if g is None:
        rev.inst.note = "does not reach the output"
        return rev.inst.emit("np_zeros_like", [Var(name)], name=adjoint_name(name, True)).atom
    if holds_complex(env.get(name)):
        # the rules pass conjugated adjoints of complex values (ops/complex_values.py);
        # the user gets torch's gradient dL/dRe + 1j dL/dIm
        rev.inst.note = "the gradient of a complex input"
        op, args = (
            ("np_conjugate", [g])
            if holds_complex(rev.inst.aval(g))
            else ("cast_like", [g, Var(name)])
        )  # (a real adjoint: np.real(z) alone was used)
        return rev.inst.emit(op, args, name=adjoint_name(name, True)).atom
    return g


def _forward_and_backward(fn, rev):
    """(the forward, pushing what the backward reads, the backward, popping it, the push
    sites) once the reverse sweep `rev` has run over fn's body."""
    backward = rev.out
    recorded = _recorded(fn, backward, rev)
    push, init = _push_sites(fn, recorded, rev)
    forward = [Assign(n, Const(None), fn.loc, "saved") for n in init]
    forward += [
        Assign(n, Const(None), fn.loc, "placeholder")
        for n in sorted(rev.placeholders - set(init))
        if n in rev.sites
    ]
    forward += _forward(fn.body[:-1], push, rev, fn.loc)
    return forward, _finish_backward(backward, push), push


def _kept(value, rev, namer, forward, loc):
    """A returned variable the backward restores (pops) copied at the end of the forward
    (the value the forward ended with); any other value as it is."""
    if isinstance(value, Var) and value.name in rev.overwritten:
        kept = namer.fresh(value.name + "_value")
        forward.append(Assign(kept, value, loc))
        return Var(kept)
    return value


def reverse(
    fn: Function,
    wrt: list,
    env: dict,
    namer,
    with_value: bool = False,
    as_tuple: bool = False,
    cotangent: str | None = None,
    has_aux: bool = False,
    memory_plan=None,
) -> Function:
    """See the module docstring. With `cotangent` (a name), the adjoint of the output is that
    name instead of 1.0, the output may be an array, and the value is returned too: the
    body is then forward + Marker + backward, ready for `split_vjp`. With `has_aux`, fn
    returns the pair `(output, aux)` (a `Tup`): only the output is differentiated, and the
    function returns `(aux, grads)`, or `((value, aux), grads)` with `with_value`."""
    wrt_names = [fn.params[i] for i in wrt]
    fn, ret, aux = _without_aux(fn) if has_aux else (fn, fn.body[-1], None)
    assert isinstance(ret, Return)
    out_aval = env.get(ret.value.name) if isinstance(ret.value, Var) else aval_of(ret.value.value)
    if cotangent is None:
        _check_scalar_output(fn, ret, out_aval)
    fn = _keep_old_shapes(fn, env, namer)
    rev = Reverser(fn, wrt_names, env, namer)
    if cotangent is not None:
        env[cotangent] = (
            AVal(out_aval.stand_in, known=False) if out_aval not in (None, UNKNOWN) else UNKNOWN
        )
        with_value = True
    if isinstance(ret.value, Var) and ret.value.name in rev.active:
        rev.pending[ret.value.name].append(_output_seed(rev, ret, out_aval, cotangent))
    rev.block(fn.body[:-1])
    grads = [_gradient(rev, fn, name, env) for name in wrt_names]
    forward, backward, push = _forward_and_backward(fn, rev)
    # the values of sourcegrad.checkpoint(f) calls are made again, not saved (checkpointing)
    forward, backward = checkpointing.recompute_regions(fn, forward, backward, namer, env)
    if memory_plan is not None:  # recompute loops' trips instead of saving them all
        forward, backward, _ = checkpointing.segment_loops(
            memory_plan, fn, forward, backward, namer, env, checkpointing.known_trip_counts(fn, env)
        )

    result = grads[0] if len(grads) == 1 and not as_tuple else Tup(tuple(grads))
    value = _kept(ret.value, rev, namer, forward, ret.loc) if with_value else ret.value
    aux = _kept(aux, rev, namer, forward, ret.loc)
    if has_aux:
        result = Tup((Tup((value, aux)) if with_value else aux, result))
    elif with_value:
        result = Tup((value, result))
    if memory_plan is not None:  # and, under a budget, values made once, cheapest first
        forward, backward, _ = checkpointing.recompute_under_budget(
            memory_plan,
            fn,
            forward,
            backward,
            namer,
            env,
            Return(result, ret.loc),
            blocks=wrt_names if cotangent is None else None,
        )
    body = forward + [Marker()] + backward + [Return(result, ret.loc)]
    suffix = "_".join(f"d{n}" for n in wrt_names)
    name = f"d{fn.name}_{suffix}" if not with_value else f"value_and_d{fn.name}_{suffix}"
    stack = (
        namer.fresh("saved")
        if push
        or any(c[1] for c in rev.counters.values())
        or any(isinstance(s, Push) for s in walk(forward))
        else "saved"
    )
    return Function(
        name,
        list(fn.params),
        body,
        fn.source_file,
        fn.loc,
        dict(fn.free),
        set(fn.user_names),
        list(fn.dependencies),
        stack,
    )


__all__ = ["reverse", "split_vjp"]


def split_vjp(fn: Function, cotangent: str):
    """(forward, backward) functions from a VJP-mode gradient (`reverse(..., cotangent=)`).

    forward(*params) returns (value, residuals); backward(*residuals, cotangent) returns the
    gradients. The residuals are exactly what the backward reads from the forward: the
    saved values, and the stack when loops saved values on it.
    """
    body = fn.body
    cut = next(i for i, s in enumerate(body) if isinstance(s, Marker))
    forward, backward, ret = body[:cut], body[cut + 1 : -1], body[-1]
    defined = set(fn.params) | {n for s in walk(forward) for n in writes_of(s)}
    uses_stack = any(isinstance(s, Push) for s in walk(forward))
    value, grads = ret.value.items
    residuals = []
    listed = set()  # (residuals as a set: a list's `in` made this quadratic in its length)
    # what the backward reads, and gradients the forward already holds (a zero made there);
    # not a loop counter the backward reads only in its own loop over it (the forward's may
    # not exist: a loop of no trips)
    returned = atom_vars(grads)
    outside = _reads_outside_own_loops(backward) | set(returned)
    for n in [n for s in walk(backward) for n in reads_of(s)] + returned:
        if n in defined and n not in listed and n in outside:
            residuals.append(n)
            listed.add(n)
    # a residual the forward assigns only in a branch or loop starts as None (as a variable
    # the backward restores does): the backward reads it only where it was assigned
    certain = set(fn.params) | {n for s in forward for n in writes_of(s) if type(s) is not For}
    forward = [
        Assign(n, Const(None), fn.loc, "placeholder") for n in residuals if n not in certain
    ] + forward
    if uses_stack:
        residuals.append(fn.stack)
    fwd = Function(
        f"{fn.name}_forward",
        list(fn.params),
        forward + [Return(Tup((value, Tup(tuple(Var(n) for n in residuals)))), ret.loc)],
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
        fn.stack,
    )
    bwd = Function(
        f"{fn.name}_backward",
        residuals + [cotangent],
        [Marker()] + backward + [Return(grads, ret.loc)],
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
        fn.stack,
    )
    return fwd, bwd, residuals


def _reads_outside_own_loops(stmts, counters=frozenset()) -> set:
    """The names `stmts` read, but a loop's counter where the loop over it reads it."""
    found = set()
    for stmt in stmts:
        found.update(n for n in reads_of(stmt) if n not in counters)
        inner = counters | {stmt.target} if isinstance(stmt, For) else counters
        for block in child_blocks(stmt):
            found |= _reads_outside_own_loops(block, inner)
    return found
