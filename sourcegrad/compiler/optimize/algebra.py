"""Algebraic rewrites: scalar factors sunk, negations folded, what a call makes.

`sink_scalar_factors(body, params, shapes, dtypes, numbers)` moves a scalar factor of a
product of arrays onto its smallest operand (`(a * s) @ b` computed as `a @ (b * s)` when
b is smaller); `negate_products(body, ...)` folds a negation into a product's operand.
Both take and return statement lists. `makes_new_value(call)` says whether a call always
makes a new array (never an input, a view or a value another name holds).
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ops import RULES
from ..ir import Assign, Call, Const, Function, Marker, Var, read_counts, reads_of, walk
from .cleanup import assign_counts, namer

NEGATE_PRODUCTS_MIN_BYTES = 1 << 19  # (negate_products, measured at 800 KB)


def ufunc_rule(op):
    """The rule spelled as the numpy ufunc for `op` (mul_op -> multiply), or None."""
    rule = RULES[op]
    if rule.kind != "elementwise":
        return None
    for candidate in (rule, RULES.get(rule.family)):
        if candidate is not None and isinstance(candidate.fn, np.ufunc):
            return candidate.name
    return None


def fresh_result(value) -> bool:
    """A call whose result is a new array no other name refers to: an op the registry marks
    "fresh" (a matrix product's; not einsum's: np.einsum("ij->ji", a) is a view of a) or a
    ufunc's. (For lists and tuples, `+` and unindex make a new sequence holding the same
    items: `_last_uses` asks for an array result too.)"""
    return (
        isinstance(value, Call)
        and not value.kwargs
        and (ops.has(value.op, "fresh") or ufunc_rule(value.op) is not None)
    )


def makes_new_value(value) -> bool:
    """Whether this call always returns a value nothing else refers to: a new array (or
    a scalar) from a ufunc written without out=, a product, or a reduction."""
    return fresh_result(value) or (
        isinstance(value, Call)
        and ops.has(value.op, "reduction")
        and all(k not in ("out", "where") for k, _ in value.kwargs)
    )


def _family(op) -> str | None:
    """The computation an op spells (`x * y` and np.multiply: "multiply"), from the registry."""
    return ops.get(op).family if op in ops.RULES else None


# a sum or difference, and the operator that writes it
_SUM_OPERATORS = {"add": "add_op", "subtract": "sub_op"}


def _bilinear(op) -> bool:
    """Linear in each of its inputs separately (matmul, dot, outer, inner, tensordot)."""
    return op in ops.RULES and ops.get(op).linear == "multi"


def sink_scalar_factors(
    body: list, params, shapes: dict, dtypes: dict, numbers: frozenset = frozenset()
) -> list:
    """Multiply an adjoint by its constant factors once, where it is needed, instead of at
    every rule that contributes one: `d * 2.0`, `-d`, `d * math.log(2.0)`, `d / (2.0 * v)`.

    The backward is linear in the adjoint, so a number factor commutes with the rest of
    a chain of products and quotients: each array op that only scales is dropped, its
    factor carried with the value and folded into one product, which is applied when
    the value is read by anything that is not a product, a quotient or a sum with the
    same factor (the return, a matrix product, a loop). What an expert does by hand on
    an elementwise chain (`g *= ln2 / ln10` at the end). Backward statements at the top
    level only, values read once (a value read twice would carry its factor into both
    readers), and only constants: number literals and calls of numbers (`math.log(2.0)`).
    Floating arrays, and the floating numbers named in `numbers` (on Python floats a
    negation is an operation too: `a / b * -2.0` instead of `-a / b * 2.0`). Reordering a
    product changes its rounding, as any reassociation does.
    """
    marker = next((i for i, s in enumerate(body) if isinstance(s, Marker)), None)
    if marker is None:
        return body
    facts = _FactorFacts(body, marker, params, shapes, dtypes, set(numbers))
    _, bound = _FactorSinking(facts, set()).run()
    return _FactorSinking(facts, bound).run()[0]


class _FactorFacts:
    """What `sink_scalar_factors` knows of the backward before rewriting it: its
    single-assignment names, read counts, and which names are constant factors."""

    def __init__(self, body, marker, params, shapes, dtypes, numbers):
        self.body, self.marker, self.shapes, self.dtypes = body, marker, shapes, dtypes
        self.numbers = numbers
        self.counts = counts = assign_counts(body, params)
        self.uses = read_counts(body)
        self.taken = set(params) | set(counts) | set(self.uses)
        self.constants = {
            s.target
            for s in body
            if isinstance(s, Assign)
            and isinstance(s.value, Call)
            and RULES[s.value.op].pure
            and not s.value.kwargs
            and counts[s.target] == 1
            and s.value.args
            and all(_number(a) for a in s.value.args)
            and not shapes.get(s.target)
        }

    def factor(self, atom):
        return _number(atom) or (isinstance(atom, Var) and atom.name in self.constants)

    def array(self, name):
        # floating values only: a boolean mask times a factor is a float array (a sum of two
        # masks carrying one factor would be a logical or, a negated mask an error)
        if name in self.numbers:
            return name not in self.constants  # (a constant is a factor, not a value scaled)
        dtype = self.dtypes.get(name)
        return len(self.shapes.get(name) or ()) > 0 and dtype is not None and _inexact(dtype)

    def sinkable(self, stmt):
        """A statement whose value may carry its operands' factors on (read once, or a sum:
        a + -b leaves no factor)."""
        value = stmt.value if isinstance(stmt, Assign) else None
        return (
            isinstance(value, Call)
            and not stmt.in_place
            and (not value.kwargs or ops.has(value.op, "linear_in_first"))
            and all(k != "out" for k, _ in value.kwargs)
            and self.counts[stmt.target] == 1
            and self.array(stmt.target)
            and (self.uses[stmt.target] == 1 or _family(value.op) in _SUM_OPERATORS)
        )


class _FactorSinking:
    """One pass of `sink_scalar_factors`: `run()` returns the rewritten backward, and the
    names bound to a value with factors applied. A value keeps its name while it carries
    factors unless it is bound later (in `materialized`: then the value without them is
    `<name>_unscaled`)."""

    def __init__(self, facts, materialized):
        self.facts, self.materialized = facts, materialized
        self.carried: dict = {}  # name -> (the name holding its value without the factors, factors)
        self.bound: set = set()
        self.held_names: set = set()  # arrays this pass names (values without their factors)
        self.out = list(facts.body[: facts.marker + 1])
        self.fresh = namer(set(facts.taken))

    def run(self):
        facts, carried = self.facts, self.carried
        for stmt in facts.body[facts.marker + 1 :]:
            sinkable = facts.sinkable(stmt)
            sunk = self.sink(stmt) if sinkable else None
            if sunk is not None:
                for a in stmt.value.args:  # (each was read once: here)
                    if isinstance(a, Var):
                        carried.pop(a.name, None)
                if sunk[1]:
                    carried[stmt.target] = sunk
                continue
            if carried:
                read = {n for s in walk([stmt]) for n in reads_of(s)}  # (in nested blocks too)
                for n in sorted(n for n in read if n in carried):
                    self.materialize(n, stmt.loc)
            self.out.append(stmt)
        for name in sorted(carried):  # (nothing reads them: dead-code elimination drops them)
            self.materialize(name, None)
        return self.out, self.bound

    def held_name(self, target):
        facts = self.facts
        name = self.fresh(f"{target}_unscaled") if target in self.materialized else target
        self.held_names.add(name)
        if target in facts.numbers:
            facts.numbers.add(name)
        facts.shapes[name], facts.dtypes[name] = facts.shapes.get(target), facts.dtypes.get(target)
        return name

    def value_of(self, atom):
        """(the atom holding it without factors, its factors)."""
        if isinstance(atom, Var) and atom.name in self.carried:
            name, factors = self.carried[atom.name]
            return Var(name), factors
        return atom, ()

    def materialize(self, name, loc):
        """Bind `name` to its value, the factors applied: one product of numbers, then
        one array op."""
        held, factors = self.carried.pop(name)
        self.bound.add(name)
        number, scale = 1.0, None  # the numbers folded now; the named constants' product
        for atom, power in factors:
            if isinstance(atom, Const):
                number = number * atom.value if power > 0 else number / atom.value
            elif scale is None and power > 0:
                scale = atom
            else:
                scale = self.emit(
                    name,
                    Call("mul_op" if power > 0 else "div_op", (scale or Const(1.0), atom)),
                    loc,
                )
        if scale is None:
            value = (
                Var(held)
                if number == 1.0
                else Call("neg_op", (Var(held),))
                if number == -1.0
                else Call("mul_op", (Var(held), Const(number)))
            )
        else:
            if number == -1.0:
                scale = self.emit(name, Call("neg_op", (scale,)), loc)
            elif number != 1.0:
                scale = self.emit(name, Call("mul_op", (Const(number), scale)), loc)
            value = Call("mul_op", (Var(held), scale))
        self.out.append(Assign(name, value, loc, "constant factors"))

    def emit(self, name, call, loc):
        target = self.fresh(f"{name}_scale")
        self.out.append(Assign(target, call, loc, "constant factors"))
        return Var(target)

    def held(self, stmt, call):
        """Compute `call` without the factors into a held name for stmt's target."""
        held = self.held_name(stmt.target)
        self.out.append(Assign(held, call, stmt.loc, stmt.note))
        return held

    def sink(self, stmt):
        """(held name, factors) for a statement that scales or combines carried values,
        emitting what it computes without the factors; None if it reads them as is.
        `arrays`: per operand, whether it is an array that may stand for the result (a
        value carried as `-x` stands for x, read later where it is used: only a name
        assigned once holds the same value there)."""
        facts, op = self.facts, stmt.value.op
        args = [self.value_of(a) for a in stmt.value.args]
        arrays = [
            isinstance(a, Var)
            and (facts.array(a.name) or a.name in self.held_names)
            and (facts.counts[a.name] == 1 or a.name in self.held_names)
            for a, _ in args
        ]
        family = _family(op)
        if family == "multiply" and len(args) == 2:
            return self.sink_product(stmt, op, args, arrays)
        if family == "negative" and len(args) == 1 and arrays[0]:
            ((a, fa),) = args
            return a.name, fa + ((Const(-1.0), 1),)
        if family == "divide" and len(args) == 2:
            return self.sink_quotient(stmt, op, args, arrays)
        if family in _SUM_OPERATORS and len(args) == 2:
            sunk = self.sink_sum(stmt, family, args)
            if sunk is not None:
                return sunk
        if _bilinear(op) and len(args) == 2 and bool(args[0][1]) != bool(args[1][1]):
            (a, fa), (b, fb) = args  # X.T @ (d * k) = (X.T @ d) * k: k on the smaller side
            return self.held(stmt, Call(op, (a, b))), fa or fb
        if (
            ops.has(op, "linear_in_first")
            and args
            and args[0][1]
            and not any(f for _, f in args[1:])
        ):
            (a, fa) = args[0]  # sum(a * k) = sum(a) * k
            call = Call(op, (a,) + tuple(x for x, _ in args[1:]), stmt.value.kwargs)
            return self.held(stmt, call), fa
        return None

    def sink_product(self, stmt, op, args, arrays):
        """`a * k` carries k on; a product of carried values carries both's factors."""
        (a, fa), (b, fb) = args
        if self.facts.factor(b) and arrays[0]:
            return a.name, fa + fb + ((b, 1),)
        if self.facts.factor(a) and arrays[1]:
            return b.name, fb + fa + ((a, 1),)
        if fa or fb:
            return self.held(stmt, Call(op, (a, b))), fa + fb
        return None

    def sink_quotient(self, stmt, op, args, arrays):
        """`a / k` carries 1/k on; a quotient of carried values carries fa / fb."""
        (a, fa), (b, fb) = args
        if self.facts.factor(b) and arrays[0]:
            return a.name, fa + tuple((f, -p) for f, p in fb) + ((b, -1),)
        if fa or fb:
            return self.held(stmt, Call(op, (a, b))), fa + tuple((f, -p) for f, p in fb)
        return None

    def sink_sum(self, stmt, family, args):
        """`a * k + b * k` = `(a + b) * k`; `a + -b` = `a - b` (and `a - -b` = `a + b`)."""
        if args[0][1] and args[0][1] == args[1][1] and self.facts.uses[stmt.target] == 1:
            (a, fa), (b, _) = args
            return self.held(stmt, Call(_SUM_OPERATORS[family], (a, b))), fa
        if not args[0][1] and args[1][1] == ((Const(-1.0), 1),):
            (a, _), (b, _) = args
            flipped = "sub_op" if family == "add" else "add_op"
            self.out.append(Assign(stmt.target, Call(flipped, (a, b)), stmt.loc, stmt.note))
            return stmt.target, ()
        return None


def _inexact(dtype) -> bool:
    """A floating or complex dtype (asked per statement: numpy's answer remembered)."""
    known = _INEXACT.get(dtype)
    if known is None:
        known = _INEXACT[dtype] = np.dtype(dtype).kind in "fc"
    return known


_INEXACT: dict = {}


def _number(atom) -> bool:
    return (
        isinstance(atom, Const)
        and isinstance(atom.value, (int, float))
        and not isinstance(atom.value, bool)
    )


def negate_products(fn: Function, env: dict) -> Function:
    """`t = -a; u = t * b` -> `p = a * b; u = -p`, for an array `a` the function did not make
    (an input: `-y * (X @ w)`) and a product of `t`'s shape. The same numbers (negation
    is exact and commutes with the product), but the negation is of a value the function
    made, so it can be done in that value's buffer, and the backward reads `a`, which it
    has anyway, instead of keeping `-a`: one array less to allocate and hold. Only for
    arrays of at least NEGATE_PRODUCTS_MIN_BYTES: a small array costs little to allocate,
    and the negation its backward then applies separately would cost more. Top-level
    statements of the primal, before differentiation.
    """
    counts = assign_counts(fn.body, fn.params)
    reads = read_counts(fn.body)
    made = {s.target for s in walk(fn.body) if isinstance(s, Assign)}
    fresh = namer(set(fn.params) | set(fn.free) | made | set(reads))

    def shape(atom):
        """The shape of a large array (None for anything else)."""
        aval = env.get(atom.name) if isinstance(atom, Var) else None
        value = getattr(aval, "stand_in", None)
        return (
            value.shape
            if isinstance(value, np.ndarray)
            and value.size * value.itemsize >= NEGATE_PRODUCTS_MIN_BYTES
            else None
        )

    negated = {
        s.target: s.value.args[0]
        for s in fn.body
        if isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op == "neg_op"
        and counts[s.target] == 1
        and reads[s.target] == 1
        and isinstance(s.value.args[0], Var)
        and s.value.args[0].name not in made
    }
    body, dropped = [], set()
    for stmt in fn.body:
        value = stmt.value if isinstance(stmt, Assign) else None
        if isinstance(value, Call) and value.op == "mul_op" and counts[stmt.target] == 1:
            for k, t in enumerate(value.args):
                a = negated.get(t.name) if isinstance(t, Var) else None
                if a is None or shape(t) is None or shape(t) != shape(Var(stmt.target)):
                    continue
                args = list(value.args)
                args[k] = a
                other = args[1 - k]
                product = fresh(f"{a.name}_{other.name if isinstance(other, Var) else 'c'}")
                body.append(Assign(product, Call("mul_op", tuple(args)), stmt.loc))
                stmt = Assign(stmt.target, Call("neg_op", (Var(product),)), stmt.loc, stmt.note)
                dropped.add(t.name)
                break
        body.append(stmt)
    if not dropped:
        return fn
    body = [s for s in body if not (isinstance(s, Assign) and s.target in dropped)]
    return Function(
        fn.name, fn.params, body, fn.source_file, fn.loc, fn.free, fn.user_names, fn.dependencies
    )
