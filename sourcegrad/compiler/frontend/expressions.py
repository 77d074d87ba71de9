"""Lowering expressions to atoms, one primitive call per statement (`emit`): operators,
comparisons (chained, `in` of constants), `and`/`or`/conditional expressions with
Python's short circuit, displays, indices, comprehensions as loops.
"""

from __future__ import annotations

import gast
import numpy as np

from ... import errors
from ...ops import COMPARISONS, OPERATORS, RULES, reads_operand_named
from ..ir import Assign, Call, Const, If, Slc, Tup, Var
from ..names import name_for_call
from .syntax import UNSUPPORTED_EXPRESSIONS, AtomNode, RenameNames, copy_tree, refusal
from .values import (
    FUNCTION_VALUES,
    PY_OPS,
    CallableRef,
    LocalFunction,
    ModuleRef,
    Record,
    Static,
    as_dtype,
    function_label,
    holds_record,
    joined_tuples,
)


class ExpressionsMixin:
    """Lowering expressions (`emit`: one primitive call per statement): a part of `Lowerer`."""

    def emit(self, op, args, kwargs=(), name=None) -> Var:
        """Append `tmp = op(*args, **kwargs)` and return `tmp`, named after the user or the op.

        A non-differentiable primitive of constants is evaluated now (so tests on static
        arguments, such as the depth of an inlined recursion, are decided at compile time).
        """
        rule = RULES[op]
        args = [as_dtype(a) for a in args]
        kwargs = [(k, as_dtype(a)) for k, a in kwargs]
        self.no_function_values(list(args) + [a for _, a in kwargs], op)
        if (
            op == "getitem"
            and isinstance(args[0], Tup)
            and isinstance(args[1], Const)
            and isinstance(args[1].value, int)
        ):
            return args[0].items[args[1].value]  # unpacking a tuple of values: no code
        if (
            op == "getitem"
            and isinstance(args[0], Tup)
            and isinstance(args[1], Const)
            and isinstance(args[1].value, slice)
        ):  # `params[:-1]`: a tuple of its items
            part = args[0].items[args[1].value]
            return Tup(part) if part else Const(())
        if op == "len" and isinstance(args[0], Tup):
            return Const(len(args[0].items))
        if op == "getitem" and isinstance(args[0], (Record, Static)):
            return self.record_item(args[0], args[1])
        if op == "len" and isinstance(args[0], (Record, Static)):
            return Const(len(args[0].values if isinstance(args[0], Record) else args[0].items))
        self.refuse_records(list(args) + [a for _, a in kwargs], RULES[op].spelling)
        if rule.vjps:
            args = self.tuples_as_values(rule, args)
            kwargs = self.keyword_tuples_as_values(rule, kwargs)
        if (
            not rule.differentiable
            and rule.pure
            and not kwargs
            and all(isinstance(a, Const) for a in args)
        ):
            try:
                value = rule.forward(*[a.value for a in args])
            except Exception:
                value = None
            else:
                if isinstance(value, (bool, int, float, np.bool_)):
                    return Const(value.item() if isinstance(value, np.generic) else value)
        call = Call(op, tuple(args), tuple(kwargs))
        if name is not None:
            target = self._version(name)
            if target in call.reads() and self.backward_reads_input(rule, call, target):
                # `y = np.sin(y)` for a variable: compute into a temporary first, so the
                # backward can read the old y (restored) and the new one (the temporary)
                temp = self.ctx.namer.fresh(name_for_call(op, rule.spelling, args))
                self.out.append(Assign(temp, call, self.loc))
                self.out.append(Assign(target, Var(temp), self.loc))
                return Var(target)
        else:
            target = self.ctx.namer.fresh(name_for_call(op, rule.spelling, args))
        self.out.append(Assign(target, call, self.loc))
        return Var(target)

    @staticmethod
    def backward_reads_input(rule, call, target):
        """Would this call's VJP read the value of the input that `target` also names?"""
        return reads_operand_named(rule, call.args, call.kwargs, target)

    def expr(self, node, name=None):
        """Lower an expression to an atom, appending the statements that compute it."""
        if isinstance(node, gast.Constant):
            return Const(node.value)
        if isinstance(node, gast.Name):
            return self.name(node, name)
        if isinstance(node, gast.BinOp):
            op = OPERATORS.get(type(node.op).__name__)
            if op is None:
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"the operator {type(node.op).__name__} is not supported",
                    node,
                )
            left, right = self.expr(node.left), self.expr(node.right)
            if (
                isinstance(left, Const)
                and isinstance(right, Const)
                and all(type(a.value) in (int, float) for a in (left, right))
            ):
                return Const(PY_OPS[op](left.value, right.value))
            joined = joined_tuples(op, left, right)
            if joined is not None:  # `args + (ones,)`: a tuple made while compiling
                return joined
            return self.emit(op, [left, right], name=name)
        if isinstance(node, gast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, gast.USub):
                if isinstance(operand, Const) and isinstance(operand.value, (int, float)):
                    return Const(-operand.value)
                return self.emit("neg_op", [operand], name=name)
            if isinstance(node.op, gast.UAdd):
                return operand
            if isinstance(node.op, gast.Not):
                return self.emit("not_op", [operand], name=name)
            if isinstance(node.op, gast.Invert):
                return self.emit("invert_op", [operand], name=name)
            self.error(
                errors.UnsupportedSyntaxError,
                f"the operator {type(node.op).__name__} is not supported",
                node,
            )
        if isinstance(node, gast.Compare):
            return self.compare(node, name)
        if isinstance(node, gast.BoolOp):
            return self.boolop(node, name)
        if isinstance(node, gast.IfExp):
            return self.ifexp(node, name)
        if isinstance(node, gast.Call):
            return self.call(node, name)
        if isinstance(node, gast.Attribute):
            return self.attribute(node, name)
        if isinstance(node, gast.Subscript):
            return self.subscript(node, name)
        if isinstance(node, (gast.Tuple, gast.List)):
            return self.sequence(node, name)
        if isinstance(node, gast.Dict):
            return self.dict_display(node)
        if isinstance(node, gast.Lambda):  # a function value (`return lambda x: ...`)
            return LocalFunction(node, self, self.defaults_of(node.args))
        if isinstance(node, gast.DictComp):
            return self.dict_comprehension(node)
        if isinstance(node, (gast.ListComp, gast.GeneratorExp)):
            return self.comprehension(node, name)
        what = UNSUPPORTED_EXPRESSIONS.get(type(node), type(node).__name__)
        self.error(errors.UnsupportedSyntaxError, refusal(node, what), node)

    def subscript(self, node, name=None):
        """`x[i]`: numpy's indexing of an array (or a list's, a dict's); `np.s_[...]` an index;
        `np.r_[a, b]` a concatenation; an object's own `__getitem__` refused here (traced)."""
        if isinstance(node.value, gast.Attribute) and node.value.attr in ("s_", "index_exp"):
            base = (
                self.target_of(node.value.value)
                if isinstance(node.value.value, (gast.Name, gast.Attribute))
                else None
            )
            if isinstance(base, ModuleRef):  # np.s_[0, 1:3]: an index, as generated code
                return self.index(node.slice)  # spells one outside a subscript
        trick = self.concatenation_trick(node, name)
        if trick is not None:
            return trick
        if isinstance(node.value, gast.Attribute) and node.value.attr == "flat":
            # `x.flat[i]`, `x.flat[idx]`: an index into the flattened array
            flat = self.emit("ravel", [self.expr(node.value.value)])
            return self.emit("getitem", [flat, self.index(node.slice)], name=name)
        value = self.expr(node.value)
        held = self.ctx.free.get(value.name, _NONE) if isinstance(value, Var) else _NONE
        if held is not _NONE and not _indexed_as_data(held):
            # (its index is no index but its arguments: a gradient through them would be
            # dropped as through an index's. The trace runs its __getitem__ on traced values)
            self.error(
                errors.UnsupportedSyntaxError,
                f"{type(held).__name__} object subscripted: its __getitem__ is Python code "
                "the source front end does not read",
                node,
            )
        return self.emit("getitem", [value, self.index(node.slice)], name=name)

    def concatenation_trick(self, node, name):
        """`np.r_[a, b, 0:3]` and `np.c_[a, b]`: calls of the ops np_r_ / np_c_ on the items,
        a slice made its constant range (np.arange, or np.linspace for a complex step, as
        numpy makes it); None where the subscripted value is not np.r_ or np.c_. A string
        directive ('0,2,1', 'r', 'c') is refused, located."""
        if not isinstance(node.value, (gast.Name, gast.Attribute)):
            return None
        ref = self.target_of(node.value)
        obj = (
            ref.obj
            if isinstance(ref, CallableRef)
            else self.ctx.free.get(ref.name)
            if isinstance(ref, Var)  # (`RR = np.r_`, a global of the user's)
            else None
        )
        if not (obj is np.r_ or obj is np.c_):
            return None
        what = "np.r_" if obj is np.r_ else "np.c_"
        elements = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        items = []
        for element in elements:
            if isinstance(element, gast.Constant) and isinstance(element.value, str):
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"{what} with a string directive ({element.value!r}) is not "
                    "differentiated; write np.concatenate, np.stack or np.column_stack of "
                    "the arrays",
                    node,
                )
            if isinstance(element, gast.Slice):
                bound = self.index(element)
                if not isinstance(bound, Const):
                    self.error(
                        errors.UnsupportedSyntaxError,
                        f"a range in {what}[...] needs bounds known while compiling",
                        node,
                    )
                items.append(self.bind_free(np.r_[bound.value], "index_range"))
                continue
            items.append(self.expr(element))
        return self.emit("np_r_" if obj is np.r_ else "np_c_", items, name=name)

    def no_function_values(self, atoms, use):
        """Refuse a function value where generated code would need it as a run-time value."""
        for atom in atoms:
            items = atom.items if isinstance(atom, Tup) else (atom,)
            for item in items:
                if isinstance(item, CallableRef) and getattr(
                    item.obj, "_sourcegrad_gradient", False
                ):
                    self.error(
                        errors.UnsupportedSyntaxError,
                        "a gradient called inside "
                        "differentiated code is differentiated once (reverse mode); a "
                        "higher derivative through it is not supported",
                        None,
                    )
                if isinstance(item, FUNCTION_VALUES):
                    what = f"the operation {use!r}" if use in RULES else use
                    self.error(
                        errors.UnsupportedSyntaxError,
                        f"the function {function_label(item)!r} is used as a value by "
                        f"{what}; a function value can be called, or passed to a Python "
                        "function that calls it (it is inlined), not stored or computed "
                        "with",
                        None,
                    )

    def comprehension(self, node, name):
        """`[elt for t in it if c]` (and a generator expression, which is consumed whole
        where it is used: `sum(...)`, `np.stack(...)`) as the loop Python runs:

            items = []
            for t in it:
                if c:
                    items.append(elt)

        The comprehension's own names (t) get names of their own, as Python scopes them to
        the comprehension: a variable of the same name outside is not changed."""
        local = self.ctx.namer.fresh(self.local(name or "items"))
        acc = local[len(self.prefix) :]
        self.ctx.user_names.add(local)
        self.mutable.add(acc)
        self.out.append(Assign(local, Const([]), self.loc))
        self.env[acc] = Var(local)
        renamed = {}
        for generator in node.generators:
            if getattr(generator, "is_async", 0):
                self.error(
                    errors.UnsupportedSyntaxError, "an async comprehension is not supported", node
                )
            for target in gast.walk(generator.target):
                if isinstance(target, gast.Name):
                    fresh = self.ctx.namer.fresh(self.local(target.id))
                    renamed[target.id] = fresh[len(self.prefix) :]
        node = RenameNames(renamed).visit(copy_tree(node))

        def at_node(made):  # a statement made here reports the comprehension's line
            return gast.copy_location(made, node)

        items = at_node(gast.Name(id=acc, ctx=gast.Load(), annotation=None, type_comment=None))
        append = at_node(
            gast.Expr(
                value=at_node(
                    gast.Call(
                        func=at_node(gast.Attribute(value=items, attr="append", ctx=gast.Load())),
                        args=[node.elt],
                        keywords=[],
                    )
                )
            )
        )
        body = [append]
        for generator in reversed(node.generators):
            for test in reversed(generator.ifs):
                body = [at_node(gast.If(test=test, body=body, orelse=[]))]
            body = [
                at_node(
                    gast.For(
                        target=generator.target,
                        iter=generator.iter,
                        body=body,
                        orelse=[],
                        type_comment=None,
                    )
                )
            ]
        loop = body[0]
        saved_loc = self.loc
        self.for_(loop)
        self.loc = saved_loc
        return Var(local)

    def branch_value(self, test, body_node, orelse_node, name, negate=False):
        """`target = body if test else orelse`, as an If whose branches assign one variable."""
        target = self.mutable_temp(name or "value")
        body = self.nested(lambda: self.out.append(Assign(target, self.expr(body_node), self.loc)))
        orelse = self.nested(
            lambda: self.out.append(
                Assign(
                    target, self.expr(orelse_node) if orelse_node is not None else test, self.loc
                )
            )
        )
        if negate:
            body, orelse = orelse, body
        self.out.append(If(test, body, orelse, self.loc))
        return Var(target)

    def ifexp(self, node, name):
        test = self.expr(node.test)
        if isinstance(test, Const):
            return self.expr(node.body if test.value else node.orelse, name)
        return self.branch_value(test, node.body, node.orelse, name)

    def boolop(self, node, name):
        """`a and b`, `a or b` with Python's short-circuit: b is evaluated only when needed."""
        is_and = isinstance(node.op, gast.And)
        first = self.expr(node.values[0])
        if len(node.values) > 2:
            rest = gast.BoolOp(op=node.op, values=node.values[1:])
            gast.copy_location(rest, node)
        else:
            rest = node.values[1]
        if isinstance(first, Const):
            if bool(first.value) == is_and:
                return self.expr(rest, name)
            return first
        target = self.mutable_temp(name or ("both" if is_and else "either"))
        self.out.append(Assign(target, first, self.loc))
        more = self.nested(lambda: self.out.append(Assign(target, self.expr(rest), self.loc)))
        # the branch tests `first`, which the branch does not reassign: the backward replays
        # the same decision (testing `target` would see the value the branch gave it)
        test = (
            first
            if not isinstance(first, Var) or not self.is_variable(first.name)
            else self.snapshot(first)
        )
        if is_and:
            self.out.append(If(test, more, [], self.loc))
        else:
            self.out.append(If(test, [], more, self.loc))
        return Var(target)

    def compare(self, node, name):
        ops = [type(o).__name__ for o in node.ops]
        left = self.expr(node.left)
        right = self.expr(node.comparators[0])
        if ops[0] in ("In", "NotIn"):
            if not (isinstance(left, Const) and isinstance(right, Const)):
                self.error(
                    errors.UnsupportedSyntaxError,
                    "a membership test (in, not in) is "
                    "supported where both sides are known when compiling (constants, "
                    "loop names over constants); here one is computed at run time",
                    node,
                )
            found = left.value in right.value
            first = Const(found if ops[0] == "In" else not found)
            if len(ops) == 1:
                return first
            rest = gast.Compare(
                left=node.comparators[0], ops=node.ops[1:], comparators=node.comparators[1:]
            )
            gast.copy_location(rest, node)
            return self.expr(
                gast.copy_location(
                    gast.BoolOp(op=gast.And(), values=[AtomNode(first), rest]), node
                ),
                name,
            )
        if any(o not in COMPARISONS and o not in ("Is", "IsNot", "In", "NotIn") for o in ops):
            self.error(
                errors.UnsupportedSyntaxError, f"the comparison {ops} is not supported", node
            )
        if ops[0] in ("Is", "IsNot"):
            if isinstance(left, Const) and isinstance(right, Const):
                same = left.value is right.value
                return Const(same if ops[0] == "Is" else not same)
            self.error(
                errors.UnsupportedSyntaxError,
                "`is` comparisons of computed values are not supported",
                node,
            )
        first = self.emit(COMPARISONS[ops[0]], [left, right], name=name if len(ops) == 1 else None)
        if len(ops) == 1:
            return first
        rest = gast.Compare(
            left=node.comparators[0], ops=node.ops[1:], comparators=node.comparators[1:]
        )
        gast.copy_location(rest, node)
        both = gast.BoolOp(op=gast.And(), values=[AtomNode(first), rest])
        gast.copy_location(both, node)
        return self.expr(both, name)

    def sequence(self, node, name=None):
        items = tuple(self.expr(e) for e in node.elts)
        if any(map(holds_record, items)):  # a list of dicts: known at compile time
            return Tup(items)
        if all(isinstance(i, Const) for i in items):
            values = [i.value for i in items]
            # a list stays a list: as an index it selects elements, where a tuple selects axes
            return Const(values if isinstance(node, gast.List) else tuple(values))
        if isinstance(node, gast.List):
            return self.emit("make_list", list(items), name=name)
        return Tup(items)

    def index(self, node):
        if isinstance(node, gast.Slice):
            parts = [
                self.expr(p) if p is not None else Const(None)
                for p in (node.lower, node.upper, node.step)
            ]
            if all(isinstance(p, Const) for p in parts):
                return Const(slice(*(p.value for p in parts)))
            return Slc(*parts)
        if isinstance(node, gast.Tuple):
            items = tuple(self.index(e) for e in node.elts)
            if all(isinstance(i, Const) for i in items):
                return Const(tuple(i.value for i in items))
            return Tup(items)
        return self.expr(node)


_NONE = object()


def _indexed_as_data(value) -> bool:
    """Is `value[i]` numpy's or Python's indexing of data (an array, a list, a tuple, a dict,
    a string), whose index carries no gradient? An object with a `__getitem__` of its own
    (np.r_ under another name, a user's table) computes from its "index"."""
    return isinstance(value, (np.ndarray, list, tuple, dict, str, bytes, range)) or (
        hasattr(value, "shape") and hasattr(value, "dtype")  # (CuPy's, Dask's arrays)
    )
