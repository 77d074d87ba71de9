"""Lowering statements: the function body, blocks with their exits (return, break,
continue as flags), if, for (counted, over sequences, unrolled over constants and
containers), while, nested definitions and assert.

Why one module: one mixin of the Lowerer (see frontend/lowerer.py), the statements; the
block-exit flags (return, break, continue) are shared by every compound statement here.
"""

from __future__ import annotations

import inspect
import types

import gast

from ... import errors
from ...ops import RULES, rule_for_function, runs_forward_only
from ...ops.numpy_functions import ufunc_at_entry
from ..ir import Assign, Call, Const, ExprStmt, For, Function, If, Return, Tup, Var, While, walk
from .syntax import (
    UNSUPPORTED_EXPRESSIONS,
    UNSUPPORTED_STATEMENTS,
    AtomNode,
    as_load,
    assigned_names,
    callee_name,
    describe,
    exits,
    loop_call,
    refusal,
    scan_statement,
    walk_no_defs,
)
from .values import (
    IN_PLACE_OPERATORS,
    CallableRef,
    LocalFunction,
    Loop,
    MethodRef,
    Record,
    first_record,
    holds_record,
    is_plain_object,
    nests_containers,
    structure_atom,
    unique_dependencies,
)


class StatementsMixin:
    """Lowering statements: a part of `Lowerer`."""

    def lower(self, static=None, structure=None) -> Function:
        """Lower the function being differentiated (`static`: values of some arguments;
        `structure`: the `trees.TreeDef` of each argument passed as its leaves, which
        become the function's parameters)."""
        # (long: the parameters bound in the order Python binds them (a receiver, trees,
        # static values, a wrapper's own signature), then the body lowered and its return
        # checked, on the lowerer's shared state)
        static = static or {}
        structure = structure or {}
        tree = self.parsed.tree
        args = tree.args
        own = [a.id for a in args.args]
        plain = not (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs)
        params, keyword_only = (own, set()) if plain else self.declared_parameters(tree)
        self.prepare(tree.body, own if plain else self.bound_parameters(args))
        receiver = self.receiver_parameter(params, tree) if plain else None
        lowered_params = []
        atoms = []
        for name in params:
            self.ctx.namer.reserve(name)
            self.ctx.user_names.add(name)
            if name == receiver:
                self.bind_receiver(name)
                atoms.append(self.env[name])
                continue
            if name in structure:  # a parameter tree: its leaves are the parameters
                leaves = self.leaf_parameters(name, structure[name], params, lowered_params)
                lowered_params += leaves
                atoms.append(
                    structure_atom(
                        structure[name],
                        iter(map(Var, leaves)),
                        name,
                        self.ctx.tuple_names,
                        self.ctx.list_tuples,
                    )
                )
                continue
            lowered_params.append(name)
            atom = Var(name)
            # an argument lowered as its value (an int that bounds a recursion) is a constant
            # where the body does not assign it
            if name in static and (name not in self.assigned or not plain):
                value = static[name]
                # a function argument is resolved now and inlined where it is called
                atom = self.classify(value, name, tree) if callable(value) else Const(value)
            atoms.append(atom)
        if plain:
            self.env.update(zip(params, atoms))
        else:
            # a wrapper (`def wrapper(*args, **kwargs)` under functools.wraps): called with
            # the parameters its signature declares, bound to its own as Python binds them
            positional = [a for n, a in zip(params, atoms) if n not in keyword_only]
            keywords = [(n, a) for n, a in zip(params, atoms) if n in keyword_only]
            _, bound = self.bind_call(args, positional, keywords, self.own_defaults(tree), tree)
            for name, atom in bound.items():
                self.env[name] = atom
                if name in self.mutable:
                    self.bind(name, atom)
        result = self.function_body(tree.body, tree)
        self.no_function_values([result], "the differentiated function's return")
        if isinstance(result, Tup) and any(map(holds_record, result.items)):
            # `return loss, {"acc": acc}`: a dict among returned values (has_aux's aux; grad
            # refuses a returned tuple otherwise) is built at run time, never differentiated
            result = Tup(
                tuple(self.built(item) if holds_record(item) else item for item in result.items)
            )
        if holds_record(result):
            self.error(
                errors.UnsupportedSyntaxError,
                f"the function returns "
                f"{first_record(result).describe()}; a differentiated function returns "
                "a number (or, with has_aux=True, a pair whose aux is a tuple of values)",
                tree.body[-1],
            )
        self.out.append(Return(result, self.loc))
        fn = Function(
            tree.name,
            lowered_params,
            self.ctx.blocks[0],
            self.parsed.file,
            self.parsed.loc(tree),
            self.ctx.free,
            self.ctx.user_names,
        )
        # modules (np, math) are not expected to be rebound; everything else is checked
        fn.dependencies = [
            d
            for d in unique_dependencies(self.ctx.dependencies)
            if not isinstance(d[3], types.ModuleType)
        ]
        return fn

    def declared_parameters(self, tree) -> tuple:
        """(names, the keyword-only among them): the parameters a function with `*args`,
        `**kwargs`, keyword-only or positional-only parameters is called with: those of its signature as `inspect.signature` gives it
        (for a wrapper under `functools.wraps`, the wrapped function's), each a plain named
        parameter. Refused, located, where the signature itself has `*args` or `**kwargs`."""
        if self.parsed.receiver is not None:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{tree.name} is a method taking *args, **kwargs, keyword-only or "
                "positional-only parameters: differentiate a function calling it instead",
                tree,
            )
        signature = inspect.signature(self.parsed.fn)
        kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        if any(p.kind in kinds for p in signature.parameters.values()):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{tree.name} takes *args or **kwargs: a differentiated function is called "
                "with named parameters (a wrapper made with functools.wraps takes the wrapped "
                "function's); give it named parameters",
                tree,
            )
        declared = list(signature.parameters)
        clash = sorted(
            set(declared) & (self.assigned_names_of(tree) - set(self.bound_parameters(tree.args)))
        )
        if clash:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{tree.name} assigns {clash[0]!r}, a parameter of the signature it is called "
                "with (functools.wraps): rename that variable",
                tree,
            )
        keyword_only = {
            n for n, p in signature.parameters.items() if p.kind == inspect.Parameter.KEYWORD_ONLY
        }
        return declared, keyword_only

    @staticmethod
    def bound_parameters(arguments) -> list:
        """Every name a def's parameters bind, `*args` and `**kwargs` included."""
        names = [a.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        names += [a.id for a in (arguments.vararg, arguments.kwarg) if a is not None]
        return names

    @staticmethod
    def assigned_names_of(tree) -> set:
        return {n for stmt in tree.body for n in scan_statement(stmt)[0]}

    def own_defaults(self, tree) -> dict:
        """The defaults of the function being lowered, as atoms (from the function object)."""
        fn = self.parsed.fn
        names = [a.id for a in tree.args.posonlyargs + tree.args.args]
        values = fn.__defaults__ or ()
        defaults = {
            name: self.classify(value, name, tree)
            for name, value in zip(names[len(names) - len(values) :], values)
        }
        for name, value in (fn.__kwdefaults__ or {}).items():
            defaults[name] = self.classify(value, name, tree)
        return defaults

    def augmented_target(self, stmt):
        """The target of `t op= v` read as a value (`t op v` is assigned to it); refused,
        located at the statement, where t is not a name or an item of one."""
        try:
            return as_load(stmt.target)
        except errors.UnsupportedSyntaxError as exc:
            raise errors.locate(exc, self.parsed.loc(stmt)) from None

    def receiver_parameter(self, params, tree):
        """The first parameter of a bound method being differentiated (`grad(model.loss)`:
        `self`), or None for a plain function. Its object is a value known when compiling,
        as that of a method the code calls on an object it reads (`model.loss(w)`): its
        attributes are read then, and the compiled code depends on them (rebinding one
        compiles again); a method of an object whose attributes cannot be read so is
        refused here."""
        receiver = self.parsed.receiver
        if receiver is None:
            return None
        if not params:
            self.error(errors.UnsupportedSyntaxError, f"{tree.name} takes no self argument", tree)
        if isinstance(receiver, type):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{tree.name} is a classmethod of {receiver.__name__}: one is not "
                "differentiated yet; make it a staticmethod or a function taking what it "
                "reads of the class",
                tree,
            )
        if not is_plain_object(receiver):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{tree.name} is a method of a {type(receiver).__name__} object, whose "
                "attributes sourcegrad does not read while compiling (it reads those of "
                "instances of your own classes)",
                tree,
            )
        return params[0]

    def bind_receiver(self, name):
        """`self` of a bound method: its object, as a method inlined binds it."""
        atom = self.bind_free(self.parsed.receiver, name)
        self.env[name] = atom
        if name in self.mutable:
            self.bind(name, atom)

    def prepare(self, body, params):
        """Find the names this function assigns, and which must stay mutable variables.

        `a[i] = v` and `xs.append(v)` assign `a` and `xs` too: the compiler turns them
        into new values bound to the same name.
        """
        scans = [scan_statement(stmt) for stmt in body]  # (one walk of each statement)
        self.assigned = {n for names, _, _ in scans for n in names}
        self.assignments = {}
        for _, counted, _ in scans:
            for name in counted:
                self.assignments[name] = self.assignments.get(name, 0) + 1
        self.yielded = next((y for _, _, y in scans if y is not None), None)
        compound = set()
        self.compound_counts = {}  # name -> how many loops and branches of the body assign it
        for stmt, (names, _, _) in zip(body, scans):
            if isinstance(stmt, (gast.If, gast.For, gast.While)):
                compound |= names
                for n in names:
                    self.compound_counts[n] = self.compound_counts.get(n, 0) + 1
        non_tail = any(exits([s], {"return"}) for s in body[:-1])
        self.early_return = non_tail
        # Names assigned in a loop or branch keep one name (a variable that is overwritten);
        # everything else gets a fresh name per assignment. After an early return every
        # statement runs under a guard, so then every name is a variable.
        self.mutable = set(self.assigned) if non_tail else compound
        for name in sorted(self.assigned | set(params)):
            self.ctx.namer.reserve(self.local(name))

    def function_body(self, body, node):
        """Lower a function body; return the atom holding its result."""
        yielded = self.yielded  # (found by prepare, which runs first)
        if yielded is not None:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{getattr(node, 'name', 'the function')} "
                "is a generator (yield): generators are not supported in differentiated "
                "code; return a list instead",
                yielded,
            )
        if not body or not exits(body, {"return"}):
            raised = next(
                (
                    n
                    for s in body
                    if not isinstance(s, gast.FunctionDef)
                    for n in walk_no_defs(s, False)
                    if isinstance(n, gast.Raise)
                ),
                None,
            )
            if raised is not None:  # it ends by raising: say so, not that a return is missing
                self.error(
                    errors.UnsupportedSyntaxError,
                    "a raise statement is not supported "
                    "in differentiated code (this function never returns a value)",
                    raised,
                )
            self.error(
                errors.UnsupportedSyntaxError,
                f"{getattr(node, 'name', 'the function')} has no return statement, so it "
                "has no output to differentiate",
                node,
            )
        tail = isinstance(body[-1], gast.Return) and not exits(body[:-1], {"return"})
        if tail:
            self.block(body[:-1])
            self.loc = self.parsed.loc(body[-1])
            if body[-1].value is None:
                self.error(errors.UnsupportedSyntaxError, "return without a value", body[-1])
            return self.expr(body[-1].value)
        self.result = self.ctx.namer.fresh(self.local("result"))
        self.returned = self.ctx.namer.fresh(self.local("returned"))
        self.out.append(Assign(self.returned, Const(False), self.loc))
        self.block(body)
        return Var(self.result)

    def block(self, stmts) -> bool:
        """Lower a statement list; statements after a possible exit run under a guard.

        Returns True when the list certainly exits (an unconditional return, break or
        continue, also inside a branch decided at compile time): the rest is unreachable.
        """
        for i, stmt in enumerate(stmts):
            if self.statement(stmt):
                return True
            if i + 1 == len(stmts):
                return False
            flags = self.exit_flags(stmt)
            if flags:  # (the rest, sliced only here: slicing per statement was quadratic)
                self.guarded(flags, stmts[i + 1 :])
                return False
        return False

    def exit_flags(self, stmt):
        kinds = exits([stmt], {"break", "continue", "return"})
        flags = []
        if self.loops:
            loop = self.loops[-1]
            if kinds & {"break", "return"} and loop.brk:
                flags.append(loop.brk)
            if "continue" in kinds and loop.cont:
                flags.append(loop.cont)
        elif "return" in kinds and self.returned:
            flags.append(self.returned)
        return flags

    def guarded(self, flags, rest):
        """`if not flag: rest` for each flag, nested."""
        flag = flags[0]
        test = self.emit("not_op", [Var(flag)])
        body = self.nested(lambda: self.guarded(flags[1:], rest) if flags[1:] else self.block(rest))
        self.out.append(If(test, body, [], self.loc))

    def nested(self, lower_fn) -> list:
        """Lower into a fresh statement list and return it."""
        self.ctx.blocks.append([])
        try:
            lower_fn()
        finally:
            block = self.ctx.blocks.pop()
        return block

    def in_place_operator_assignment(self, stmt):
        """`a = operator.iadd(a, x)` as the `a += x` it is (whatever a holds: an array is
        changed in place, a number rebound), or None for any other assignment."""
        target, value = stmt.targets[0], stmt.value
        if not (
            isinstance(target, gast.Name)
            and isinstance(value, gast.Call)
            and isinstance(value.func, (gast.Name, gast.Attribute))
            and len(value.args) == 2
            and not value.keywords
            and isinstance(value.args[0], gast.Name)
            and value.args[0].id == target.id
            and not isinstance(value.args[1], gast.Starred)
        ):
            return None
        if isinstance(value.func, gast.Name) and (
            value.func.id in self.env or self.lookup(value.func.id) is not None
        ):
            return None  # (a local or enclosing name: not the operator module's function)
        found = self.target_of(value.func)
        op = IN_PLACE_OPERATORS.get(found.obj) if isinstance(found, CallableRef) else None
        if op is None:
            return None
        augmented = gast.AugAssign(target=target, op=op(), value=value.args[1])
        return gast.copy_location(augmented, stmt)

    def statement(self, stmt) -> bool:
        """Lower one statement; True when it certainly exits the enclosing block."""
        self.loc = self.parsed.loc(stmt)
        if isinstance(stmt, gast.Assign):
            if len(stmt.targets) != 1:
                self.error(
                    errors.UnsupportedSyntaxError,
                    "chained assignment (a = b = ...) is not supported yet",
                    stmt,
                )
            augmented = self.in_place_operator_assignment(stmt)
            if augmented is not None:
                return self.statement(augmented)
            self.assign(stmt.targets[0], stmt.value, stmt)
        elif isinstance(stmt, gast.AugAssign):
            load = self.augmented_target(stmt)
            if self.holds_items(stmt.target):
                self.item_augassign(stmt, load)
                return False
            value = gast.copy_location(gast.BinOp(left=load, op=stmt.op, right=stmt.value), stmt)
            start = len(self.out)
            self.assign(stmt.target, value, stmt)
            if isinstance(stmt.target, gast.Name):
                self.mark_in_place(self.env.get(stmt.target.id), start)
        elif isinstance(stmt, gast.Return):
            self.return_(stmt)
            return True
        elif isinstance(stmt, gast.Expr):
            self.expression_statement(stmt)
        elif isinstance(stmt, gast.If):
            return self.if_(stmt)
        elif isinstance(stmt, gast.For):
            self.for_(stmt)
        elif isinstance(stmt, gast.While):
            self.while_(stmt)
        elif isinstance(stmt, gast.Break):
            self.out.append(Assign(self.loops[-1].brk, Const(True), self.loc))
            return True
        elif isinstance(stmt, gast.Continue):
            self.out.append(Assign(self.loops[-1].cont, Const(True), self.loc))
            return True
        elif isinstance(stmt, gast.FunctionDef):
            self.define_function(stmt)
        elif isinstance(stmt, gast.Pass):
            pass
        elif isinstance(stmt, gast.Assert):
            self.assert_(stmt)
        else:
            what = UNSUPPORTED_STATEMENTS.get(type(stmt), type(stmt).__name__)
            self.error(
                errors.UnsupportedSyntaxError,
                f"{what} is not supported in differentiated code",
                stmt,
            )
        return False

    def holds_items(self, target) -> bool:
        """Is `target` an item of a dict or a list (`d["k"]`, `lst[0]`), not of an array?"""
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
            return False
        held = self.env.get(target.value.id)
        if isinstance(held, (Record, Tup)):
            return True
        if not isinstance(held, Var):
            return False
        made = [
            s
            for block in self.ctx.blocks
            for s in walk(block)
            if isinstance(s, Assign) and s.target == held.name
        ]
        return bool(made) and isinstance(made[-1].value, Call) and made[-1].value.op in _LISTS

    def item_augassign(self, stmt, load):
        """`d["k"] += v`, `lst[0] *= v`: Python runs `d["k"] = d["k"].__iadd__(v)`, which
        changes the array the item is in place (every other name holding it sees the
        change: a dict's item may be an argument, a list may hold one array twice) and
        rebinds a number. So the sum is an update in place of the item: the in-place check
        (analysis.check_in_place_updates) refuses a read of another name for that array
        afterwards, where the compiler's new value would differ from Python's."""
        item = self.expr(load)
        value = gast.copy_location(
            gast.BinOp(left=AtomNode(item), op=stmt.op, right=stmt.value), stmt
        )
        result = self.expr(value)
        self.assign(stmt.target, AtomNode(result), stmt)
        if isinstance(result, Var) and isinstance(item, Var):
            # the item's array changed, said once the container holds the new value (the
            # store may rebuild a list from its items, the old one among them): a copy the
            # optimizer drops, marked as the update in place of what the sum read
            changed = Assign(self.ctx.namer.fresh(f"{item.name}_changed"), result, self.loc)
            changed.in_place = True
            self.out.append(changed)

    def return_(self, stmt):
        if stmt.value is None:
            self.error(errors.UnsupportedSyntaxError, "return without a value", stmt)
        value = self.expr(stmt.value)
        self.no_function_values([value], "a return that is not the function's last statement")
        self.refuse_records([value])
        if isinstance(value, Tup):  # (a pair returned from several places: a value, whose
            value = self.emit("make_tuple", list(value.items))  # items have adjoints)
        self.out.append(Assign(self.result, value, self.loc))
        self.out.append(Assign(self.returned, Const(True), self.loc))
        for loop in self.loops:
            self.out.append(Assign(loop.brk, Const(True), self.loc))

    def expression_statement(self, stmt):
        value = stmt.value
        if isinstance(value, gast.Constant) and isinstance(value.value, str):
            return  # a docstring
        if (
            isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr == "append"
            and isinstance(value.func.value, gast.Name)
            and value.func.value.id in self.env
        ):
            self.list_append(value)
            return
        if isinstance(value, gast.Call) and self.ufunc_at(value):
            return
        if isinstance(value, gast.Call):
            target = self.target_of(value.func)
            if (
                isinstance(target, MethodRef)
                and runs_forward_only(target.fn)
                and isinstance(target.receiver, Var)
            ):  # `log.info(...)` of a Logger: its bound method, called as it is
                owner = self.ctx.free[target.receiver.name]
                target = CallableRef(getattr(owner, target.fn.__name__))
            if isinstance(target, CallableRef) and (
                runs_forward_only(target.obj)
                or rule_for_function(target.obj) is None
                and not isinstance(target.obj, types.FunctionType)
            ):
                # print() and other calls made for their effect: forward pass only (refused
                # where a differentiated value reaches one that may write into it: the fence,
                # analysis.check_unmodelled_calls)
                args = [self.expr(a) for a in value.args]
                kwargs = tuple((k.arg, self.expr(k.value)) for k in value.keywords)
                self.refuse_records(args + [a for _, a in kwargs])
                callee = self.bind_free(target.obj, callee_name(value.func))
                self.out.append(ExprStmt(Call("pycall", tuple([callee] + args), kwargs), self.loc))
                return
            result = self.expr(value)  # a call of a user function: its effects are inlined
            last = self.out[-1] if self.out else None
            if (
                isinstance(last, Assign)
                and result == Var(last.target)
                and isinstance(last.value, Call)
                and not RULES[last.value.op].pure
            ):  # a primitive called for its effect (track_running_stats): no name for None
                self.out[-1] = ExprStmt(last.value, last.loc)
            return
        what = UNSUPPORTED_EXPRESSIONS.get(type(value))
        if what is not None:
            self.error(errors.UnsupportedSyntaxError, refusal(value, what), stmt)
        self.error(
            errors.UnsupportedSyntaxError,
            "an expression statement that is not a call has no effect",
            stmt,
        )

    def ufunc_at(self, call) -> bool:
        """`np.add.at(x, index, values)` (or np.subtract.at): x rebound to
        `add_at(x, index, values)`, an update in place of x, as `x[index] += values` is but
        adding at a repeated index each time. False where the call is not one of them."""
        func = call.func
        if not (
            isinstance(func, gast.Attribute)
            and func.attr == "at"
            and isinstance(func.value, (gast.Name, gast.Attribute))
        ):
            return False
        ufunc = getattr(self.target_of(func.value), "obj", None)
        op = ufunc_at_entry(ufunc)
        if op is None:
            self.error(
                errors.NoRuleError,
                f"{describe(func)}() has no derivative rule (np.add.at, np.subtract.at and "
                "np.multiply.at have)",
                call,
            )
        if len(call.args) != 3 or call.keywords or not isinstance(call.args[0], gast.Name):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{describe(func)} takes an array's name, an index and the values to add",
                call,
            )
        name = call.args[0].id
        if name not in self.env:
            if self.enclosing is None:
                self.refuse_outside_change(name)  # `np.add.at(TABLE, ...)` of a global TABLE
            self.error(errors.NameResolutionError, f"{name!r} is not defined", call)
        array = self.env[name]
        self.refuse_aliases(name, array, call)
        index = self.expr(call.args[1])
        values = self.expr(call.args[2])
        start = len(self.out)
        self.bind(name, self.emit(op, [array, index, values], name=self.local(name)))
        self.mark_in_place(self.env.get(name), start)
        return True

    def list_append(self, call):
        name = call.func.value.id
        if len(call.args) != 1 or call.keywords:
            self.error(errors.UnsupportedSyntaxError, "list.append takes one argument", call)
        lst = self.env[name]
        item = self.expr(call.args[0])
        self.bind(name, self.emit("list_append", [lst, item], name=self.local(name)))

    def if_(self, stmt):
        test = self.expr(stmt.test)
        self.refuse_records([test])
        if isinstance(test, Const):  # decided now (static arguments, inlined recursion)
            return self.block(stmt.body if test.value else stmt.orelse)
        body = self.nested(lambda: self.block(stmt.body))
        orelse = self.nested(lambda: self.block(stmt.orelse))
        self.loc = self.parsed.loc(stmt)
        self.out.append(If(test, body, orelse, self.loc))
        return False

    def for_(self, stmt):
        if stmt.orelse:
            self.error(errors.UnsupportedSyntaxError, "for ... else is not supported", stmt)
        loc = self.parsed.loc(stmt)
        evaluated = self.iterated_parts(stmt.iter, stmt)
        if evaluated is not None and (
            any(map(holds_record, evaluated))
            or (
                any(map(nests_containers, evaluated))
                and all(
                    isinstance(e, Tup)
                    or isinstance(e, Const)
                    and isinstance(e.value, (tuple, list))
                    for e in evaluated
                )
                and not exits(stmt.body, {"break", "continue", "return"})
            )
        ):
            self.unrolled_loop(stmt, evaluated)
            return
        if evaluated is not None and self.unrolled_constants(stmt, evaluated):
            return
        start, stop, step, prelude = self.iteration(stmt.iter, stmt.target, stmt, evaluated)
        kinds = exits(stmt.body, {"break", "continue", "return"})
        brk = self.ctx.namer.fresh("stop") if kinds & {"break", "return"} else None
        cont = self.ctx.namer.fresh("skip") if "continue" in kinds else None
        if brk:
            self.out.append(Assign(brk, Const(False), loc))
        index = prelude[0]

        def body():
            if cont:
                self.out.append(Assign(cont, Const(False), loc))
            for bind in prelude[1]:
                bind()
            self.loops.append(Loop(brk, cont))
            try:
                self.block(stmt.body)
            finally:
                self.loops.pop()

        block = self.nested(body)
        self.loc = loc
        if any(isinstance(s, Assign) and s.target == index for s in walk(block)):
            # the body rebinds the loop variable (`t = t + 1`): the loop counts with a name
            # of its own, so the backward sees an ordinary variable it saves and restores
            trip = self.ctx.namer.fresh(index)
            block = [Assign(index, Var(trip), loc)] + block
            index = trip
        self.out.append(For(index, start, stop, step, block, loc, brk))

    def unrolled_constants(self, stmt, evaluated) -> bool:
        """`for key in ("W", "b"):` over constants that are not numbers: the body once per
        item, with the item a constant (so `params[key]` and `key in ...` are known when
        compiling). Numbers keep a loop: the code would grow with the count."""
        if (
            loop_call(stmt.iter, self.env) in ("enumerate", "zip")
            or len(evaluated) != 1
            or exits(stmt.body, {"break", "continue", "return"})
        ):
            return False
        sequence = evaluated[0]
        if not (isinstance(sequence, Const) and isinstance(sequence.value, (tuple, list))):
            return False
        items = [Const(v) for v in sequence.value]
        if not items or all(type(i.value) in (int, float, bool) for i in items):
            return False
        names = [t.id for t in gast.walk(stmt.target) if isinstance(t, gast.Name)]
        for item in items:
            self.loc = self.parsed.loc(stmt)
            self.constant_target(stmt.target, item.value, stmt)
            self.block(stmt.body)
        for name in names:  # after the loop, the names hold the last item, as in Python
            self.bind(name, self.env[name])
        return True

    def constant_target(self, target, value, stmt):
        """Bind the names of a loop target to (parts of) a constant, with no code."""
        if isinstance(target, gast.Name):
            self.env[target.id] = Const(value)
        elif (
            isinstance(target, (gast.Tuple, gast.List))
            and isinstance(value, (tuple, list))
            and len(value) == len(target.elts)
        ):
            for t, v in zip(target.elts, value):
                self.constant_target(t, v, stmt)
        else:
            self.error(
                errors.UnsupportedSyntaxError,
                f"cannot unpack {value!r} into {describe(target)}",
                stmt,
            )

    def iterated_parts(self, node, stmt):
        """The values a `for` loop over `node` iterates, evaluated once: the sequence, or
        the arguments of `enumerate(...)` / `zip(...)`; None for `range` and
        `reversed(range(...))`, whose arguments `iteration` reads itself."""
        kind = loop_call(node, self.env)
        if kind in ("range", "reversed"):
            return None
        if kind not in ("enumerate", "zip"):
            return [self.iterated(node, stmt)]
        parts = []
        # (enumerate's start is read by `enumerate_iteration`, not iterated)
        for p in node.args[:1] if kind == "enumerate" else node.args:
            if isinstance(p, gast.Starred):  # zip(*pairs): a tuple known while compiling
                seq = self.expr(p.value)
                if not isinstance(seq, Tup):
                    self.error(
                        errors.UnsupportedSyntaxError,
                        "*args needs a tuple whose length is known",
                        stmt,
                    )
                parts += list(seq.items)
            else:
                parts.append(self.iterated(p, stmt))
        return parts

    def unrolled_loop(self, stmt, evaluated):
        """A loop over a dict's items, a NamedTuple, or a sequence holding dicts: resolved at
        compile time, so the body is lowered once per item (straight-line code in which
        each item keeps its own adjoint and its own shape)."""
        kind = loop_call(stmt.iter, self.env)
        if exits(stmt.body, {"break", "continue", "return"}):
            self.error(
                errors.UnsupportedSyntaxError,
                "break, continue or return in a loop over "
                "a dict, NamedTuple or a list of dicts is not supported (such a loop is "
                "unrolled at compile time)",
                stmt,
            )
        if kind == "enumerate" and (len(stmt.iter.args) != 1 or stmt.iter.keywords):
            self.error(errors.UnsupportedSyntaxError, "enumerate takes one sequence here", stmt)
        # (the sequence is made before the first trip: it holds its variables' values then)
        sequences = [self.compile_time_items(self.frozen(e), stmt) for e in evaluated]
        if kind == "enumerate":
            items = [Tup((Const(i), item)) for i, item in enumerate(sequences[0])]
        elif kind == "zip":
            items = [Tup(tuple(group)) for group in zip(*sequences)]
        else:
            items = sequences[0]
        targets = {n.id for n in gast.walk(stmt.target) if isinstance(n, gast.Name)}
        # Names the body assigns in straight-line code get a new name per assignment, as
        # outside loops (so `h` of each layer keeps its own shape), and are copied back to
        # their variable after the loop where they are variables (carried by an outer loop
        # or a branch)
        simple, compound = set(), set()
        for s in stmt.body:
            (compound if isinstance(s, (gast.If, gast.For, gast.While)) else simple).update(
                assigned_names(s)
            )
        renamed = (simple - compound - targets) & self.mutable
        outer = self.unrolled
        self.unrolled = outer | targets
        self.mutable -= renamed
        try:
            for item in items:
                self.loc = self.parsed.loc(stmt)
                self.bind_target(stmt.target, item)
                self.block(stmt.body)
        finally:
            self.unrolled = outer
        # a name only this loop made a variable stays an ordinary name (one per value)
        # when the loop is in straight-line code; else it is a variable again, copied back
        if len(self.ctx.blocks) == 1 and not self.early_return:
            renamed = {n for n in renamed if self.compound_counts.get(n, 0) != 1}
        self.mutable |= renamed
        for name in sorted(renamed):
            atom, local = self.env.get(name), self.local(name)
            if atom is not None and not holds_record(atom) and atom != Var(local):
                self.out.append(Assign(local, atom, self.parsed.loc(stmt)))
                self.env[name] = Var(local)

    def iteration(self, node, target, stmt, evaluated=None):
        """(start, stop, step, (index name, [binders])) for `for target in node`;
        `evaluated`: the values `iterated_parts` gave."""
        if (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Name)
            and node.func.id == "reversed"
            and len(node.args) == 1
            and isinstance(node.args[0], gast.Call)
            and isinstance(node.args[0].func, gast.Name)
            and node.args[0].func.id == "range"
            and isinstance(target, gast.Name)
        ):
            return self.reversed_range_iteration(node.args[0], target)
        if (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Name)
            and node.func.id in ("range", "enumerate", "zip")
            and node.func.id not in self.env
        ):
            if node.func.id == "range":
                return self.range_iteration(node, target, stmt)
            if node.func.id == "enumerate":
                return self.enumerate_iteration(node, target, stmt, evaluated)
            return self.zip_iteration(node, target, stmt, evaluated)
        seq = evaluated[0] if evaluated is not None else self.iterated(node, stmt)
        if isinstance(seq, Tup):  # a tuple of computed values, indexed by the loop at run time
            seq = self.tuple_value(seq)
        length = self.emit("len", [seq])
        index = self.ctx.namer.fresh("i")
        return Const(0), length, Const(1), (index, [self.item_binder(target, seq, index)])

    def item_binder(self, target, seq, index):
        """A binder of `target` to `seq[index]` (called in the loop's body)."""
        return lambda: self.bind_target(
            target, self.emit("getitem", [seq, Var(index)], name=self.name_of(target))
        )

    def reversed_range_iteration(self, range_call, target):
        """`for i in reversed(range(...))` (generated backward code, differentiated again):
        count k up and read the range from its end."""
        span = self.emit("range", [self.expr(a) for a in range_call.args])
        length = self.emit("len", [span])
        k = self.ctx.namer.fresh("k")

        def bind_index():
            last = self.emit("sub_op", [self.emit("sub_op", [length, Const(1)]), Var(k)])
            self.bind(target.id, self.emit("getitem", [span, last], name=self.local(target.id)))

        self.mutable.add(target.id)
        return Const(0), length, Const(1), (k, [bind_index])

    def range_iteration(self, node, target, stmt):
        args = [self.expr(a) for a in node.args]
        if not 1 <= len(args) <= 3:
            self.error(errors.UnsupportedSyntaxError, "range takes 1 to 3 arguments", stmt)
        start, stop, step = {
            1: lambda: (Const(0), args[0], Const(1)),
            2: lambda: (args[0], args[1], Const(1)),
            3: lambda: tuple(args),
        }[len(args)]()
        if not isinstance(target, gast.Name):
            self.error(
                errors.UnsupportedSyntaxError, "the target of a range loop must be a name", stmt
            )
        return start, stop, step, (self.loop_target(target.id), [])

    def enumerate_iteration(self, node, target, stmt, evaluated):
        seq = evaluated[0] if evaluated is not None else self.iterated(node.args[0], stmt)
        if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
            self.error(errors.UnsupportedSyntaxError, "unpack enumerate as i, x", stmt)
        index = (
            self.loop_target(target.elts[0].id)
            if isinstance(target.elts[0], gast.Name)
            else self.ctx.namer.fresh("i")
        )
        length = self.emit("len", [seq])
        start = self.enumerate_start(node, stmt)
        if isinstance(start, Const) and start.value == 0:
            return (
                Const(0),
                length,
                Const(1),
                (index, [self.item_binder(target.elts[1], seq, index)]),
            )
        # (the count runs from start, the item is seq[count - start]: start was ignored, the
        # count taken from 0, so `i * v` had the gradient of `(i - start) * v`)
        stop = self.emit("add_op", [start, length])

        def bind_item():
            position = self.emit("sub_op", [Var(index), start])
            self.bind_target(
                target.elts[1],
                self.emit("getitem", [seq, position], name=self.name_of(target.elts[1])),
            )

        return start, stop, Const(1), (index, [bind_item])

    def enumerate_start(self, node, stmt):
        """enumerate(seq, start) or enumerate(seq, start=...)'s start (Const(0) without)."""
        keywords = {k.arg: k.value for k in node.keywords}
        if len(node.args) + len(keywords) > 2 or set(keywords) - {"start"} or not node.args:
            self.error(
                errors.UnsupportedSyntaxError, "enumerate takes a sequence and a start", stmt
            )
        if len(node.args) == 2:
            return self.expr(node.args[1])
        return self.expr(keywords["start"]) if "start" in keywords else Const(0)

    def zip_iteration(self, node, target, stmt, evaluated):
        seqs = evaluated if evaluated is not None else [self.iterated(a, stmt) for a in node.args]
        lengths = [self.emit("len", [s]) for s in seqs]
        length = lengths[0] if len(lengths) == 1 else self.emit("min_builtin", lengths)
        if not (isinstance(target, gast.Tuple) and len(target.elts) == len(seqs)):
            self.error(errors.UnsupportedSyntaxError, "unpack zip into one name per sequence", stmt)
        index = self.ctx.namer.fresh("i")
        binders = [self.item_binder(t, s, index) for t, s in zip(target.elts, seqs)]
        return Const(0), length, Const(1), (index, binders)

    def iterated(self, node, stmt):
        """The value a `for` loop iterates over. Python evaluates it once, so a name the body
        rebinds (`for e in x: x = ...`) is read through a copy made before the loop."""
        seq = self.expr(node)
        if (
            isinstance(node, gast.Name)
            and isinstance(seq, Var)
            and any(
                isinstance(n, gast.Name) and n.id == node.id and isinstance(n.ctx, gast.Store)
                for s in stmt.body
                for n in gast.walk(s)
            )
        ):
            items = self.ctx.namer.fresh(f"{node.id}_items")
            self.out.append(Assign(items, seq, self.parsed.loc(stmt)))
            seq = Var(items)
        return seq

    def loop_target(self, name):
        local = self.local(name)
        self.ctx.issued.add(local)
        self.ctx.user_names.add(local)
        self.mutable.add(name)
        self.env[name] = Var(local)
        return local

    def name_of(self, target):
        return self.local(target.id) if isinstance(target, gast.Name) else None

    def bind_target(self, target, atom):
        if isinstance(target, gast.Name):
            self.bind(target.id, atom)
        else:
            for i, t in enumerate(target.elts):
                self.bind_target(t, self.item_at(atom, i, len(target.elts), t))

    def while_(self, stmt):
        if stmt.orelse:
            self.error(errors.UnsupportedSyntaxError, "while ... else is not supported", stmt)
        loc = self.parsed.loc(stmt)
        kinds = exits(stmt.body, {"break", "continue", "return"})
        brk = self.ctx.namer.fresh("stop") if kinds & {"break", "return"} else None
        cont = self.ctx.namer.fresh("skip") if "continue" in kinds else None
        if brk:
            self.out.append(Assign(brk, Const(False), loc))
        holder = {}

        def test():
            if brk:
                go = self.emit("not_op", [Var(brk)], name="go")
                name = go.name
                self.mutable.add(name)
                inner = self.nested(
                    lambda: holder.setdefault(
                        "t", self.out.append(Assign(name, self.expr(stmt.test), loc))
                    )
                )
                self.out.append(If(go, inner, [], loc))
                holder["test"] = Var(name)
            else:
                holder["test"] = self.expr(stmt.test)

        test_body = self.nested(test)

        def body():
            if cont:
                self.out.append(Assign(cont, Const(False), loc))
            self.loops.append(Loop(brk, cont))
            try:
                self.block(stmt.body)
            finally:
                self.loops.pop()

        block = self.nested(body)
        self.loc = loc
        self.out.append(While(test_body, holder["test"], block, loc))

    def define_function(self, stmt):
        defaults = self.defaults_of(stmt.args)
        self.local_functions[stmt.name] = LocalFunction(stmt, self, defaults)

    def defaults_of(self, args):
        names = [a.id for a in args.posonlyargs + args.args]
        defaults = {
            name: self.expr(d)
            for name, d in zip(names[len(names) - len(args.defaults) :], args.defaults)
        }
        for a, d in zip(args.kwonlyargs, args.kw_defaults):  # keyword-only: None, no default
            if d is not None:
                defaults[a.id] = self.expr(d)
        return defaults

    def assert_(self, stmt):
        """`assert test, message`: checked in the forward pass, as Python checks it."""
        test = self.expr(stmt.test)
        message = Const(None) if stmt.msg is None else self.expr(stmt.msg)
        if not isinstance(message, Const):
            self.error(
                errors.UnsupportedSyntaxError, "the message of an assert must be a constant", stmt
            )
        if isinstance(test, Const):
            if not test.value:  # fails on every call: say so now, where the code is
                self.error(
                    errors.UnsupportedSyntaxError,
                    "this assert fails for every call "
                    f"(AssertionError{': ' + str(message.value) if message.value else ''})",
                    stmt,
                )
            return
        self.out.append(ExprStmt(Call("check_assert", (test, message)), self.loc))


# the ops making a Python list: an item of one is an object of its own (`lst[0] *= 2` changes
# the array it is in place)
_LISTS = frozenset({"make_list", "list_append"})
