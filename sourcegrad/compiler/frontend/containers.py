"""Parameter trees and dicts while lowering: tree arguments bound to compile-time
containers of their leaves, dict displays, `d[k] = v`, methods of dicts, and the tuples
that must become values (`make_tuple`) for their items' adjoints.
"""

from __future__ import annotations

import gast

from ... import errors, trees
from ..ir import Assign, Call, Const, Tup, Var
from .syntax import describe
from .values import Record, Static, contains, first_record, holds_record


class ContainersMixin:
    """Parameter trees and dicts while lowering: a part of `Lowerer`."""

    def built(self, atom) -> Var:
        """A compile-time container made a run-time value (a dict, tuple, ... of its items)
        by a call of `trees.Rebuild`: no adjoint flows through it."""
        leaves = []
        treedef = self.tree_of(atom, leaves)
        builder = self.bind_free(trees.Rebuild(treedef), f"build_{treedef.kind}")
        target = self.ctx.namer.fresh(treedef.kind if treedef.kind != trees.DICT else "aux")
        self.out.append(Assign(target, Call("pycall", (builder, *leaves)), self.loc))
        return Var(target)

    def tree_of(self, atom, leaves) -> trees.TreeDef:
        if isinstance(atom, Static):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{atom.what} is returned; return a dict or a tuple of values",
            )
        if isinstance(atom, Record):
            return trees.TreeDef(
                atom.kind, atom.cls, atom.keys, tuple(self.tree_of(v, leaves) for v in atom.values)
            )
        if isinstance(atom, Tup):
            return trees.TreeDef(
                trees.TUPLE, None, (), tuple(self.tree_of(v, leaves) for v in atom.items)
            )
        leaves.append(atom)
        return trees.TreeDef(trees.LEAF)

    def leaf_parameters(self, name, treedef, params, taken) -> list:
        """Names for the leaves of the tree argument `name` (`params_W1`, `params_0_1`),
        clear of every other name the function uses."""
        out = []
        for leaf in treedef.leaf_names(name):
            while leaf in self.assigned or leaf in params or leaf in taken or leaf in out:
                leaf += "_"
            self.ctx.namer.reserve(leaf)
            self.ctx.user_names.add(leaf)
            out.append(leaf)
        return out

    def compile_time_items(self, atom, stmt) -> list:
        """The items a loop over `atom` visits, where they are known at compile time."""
        if isinstance(atom, Static):
            return list(atom.items)
        if isinstance(atom, Tup):
            return list(atom.items)
        if isinstance(atom, Const) and isinstance(atom.value, (tuple, list)):
            return [Const(v) for v in atom.value]
        if isinstance(atom, Record) and atom.kind == trees.DICT:
            return [Const(k) for k in atom.keys]  # (iterating a dict gives its keys)
        if isinstance(atom, Record) and atom.kind == trees.NAMEDTUPLE:
            return list(atom.values)
        if isinstance(atom, Record):
            self.error(errors.UnsupportedSyntaxError, f"{atom.describe()} is not iterable", stmt)
        self.error(
            errors.UnsupportedSyntaxError,
            "zip of a sequence known only at run time "
            "with a dict or a list of dicts is not supported",
            stmt,
        )

    def record_setitem(self, name, record, target, value, stmt):
        """`d[k] = v` of a dict display of this function: the name is bound to a dict with
        the new item (no other name may see the dict: Python would change it for both)."""
        if record.kind != trees.DICT:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{record.describe()} does not support item assignment",
                stmt,
            )
        if not record.local:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{name!r} is a dict argument (or one "
                "read from an argument); changing it in place is not supported: build a "
                "new dict ({**d, key: value})",
                stmt,
            )
        holders = [n for n, a in self.env.items() if n != name and contains(a, record)]
        if holders:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{name!r} is changed in place while "
                f"{holders[0]!r} refers to it too; build a new dict instead",
                stmt,
            )
        key = self.index(target.slice)
        if not isinstance(key, Const):
            self.error(
                errors.UnsupportedSyntaxError,
                "a dict's key must be known at compile time (a constant)",
                stmt,
            )
        atom = value if isinstance(value, (Var, Const, Tup)) else self.expr(value)
        self.bind(name, record.with_item(key.value, atom))

    def dict_display(self, node):
        """`{"W": W, "b": b, **other}`: a dict known at compile time (a `Record`)."""
        record = Record(trees.DICT, None, (), (), True)
        for k, v in zip(node.keys, node.values):
            value = self.expr(v)
            if k is None:  # **other
                if not (isinstance(value, Record) and value.kind == trees.DICT):
                    self.error(
                        errors.UnsupportedSyntaxError,
                        "** in a dict display needs a dict known at compile time",
                        node,
                    )
                for kk, vv in zip(value.keys, value.values):
                    record = record.with_item(kk, vv)
                continue
            key = self.expr(k)
            if not (
                isinstance(key, Const)
                and isinstance(key.value, (str, int))
                and not isinstance(key.value, bool)
            ):
                self.error(
                    errors.UnsupportedSyntaxError,
                    "a dict display's keys must be constant strings or ints",
                    node,
                )
            record = record.with_item(key.value, value)
        return record

    def dict_comprehension(self, node):
        """`{k: f(v) for k, v in params.items()}` over items known while compiling (a dict's,
        a tuple's, constants): a dict known at compile time (a `Record`), each item lowered
        once; its names are its own (a variable of the same name outside is untouched)."""
        made = [Record(trees.DICT, None, (), (), True)]

        def visit(generators):
            if not generators:
                key = self.expr(node.key)
                if not (
                    isinstance(key, Const)
                    and isinstance(key.value, (str, int))
                    and not isinstance(key.value, bool)
                ):
                    self.error(
                        errors.UnsupportedSyntaxError,
                        "a dict comprehension's keys must be strings or ints known while compiling",
                        node,
                    )
                made[0] = made[0].with_item(key.value, self.expr(node.value))
                return
            generator = generators[0]
            items = self.compile_time_items(self.frozen(self.expr(generator.iter)), node)
            names = [n.id for n in gast.walk(generator.target) if isinstance(n, gast.Name)]
            saved = {n: self.env[n] for n in names if n in self.env}
            try:
                for item in items:
                    self.bind_scoped(generator.target, item, node)
                    tests = [self.expr(test) for test in generator.ifs]
                    if any(not isinstance(t, Const) for t in tests):
                        self.error(
                            errors.UnsupportedSyntaxError,
                            "a dict comprehension's conditions must be known while compiling",
                            node,
                        )
                    if all(t.value for t in tests):
                        visit(generators[1:])
            finally:
                for n in names:
                    self.env.pop(n, None)
                self.env.update(saved)

        visit(list(node.generators))
        return made[0]

    def bind_scoped(self, target, item, node):
        """Bind a comprehension's target to an item known while compiling (no code)."""
        if isinstance(target, gast.Name):
            self.env[target.id] = item
            return
        parts = (
            item.items
            if isinstance(item, Tup)
            else tuple(Const(v) for v in item.value)
            if isinstance(item, Const) and isinstance(item.value, (tuple, list))
            else None
        )
        if (
            not isinstance(target, (gast.Tuple, gast.List))
            or parts is None
            or len(parts) != len(target.elts)
        ):
            self.error(
                errors.UnsupportedSyntaxError,
                f"cannot unpack this item into {describe(target)}",
                node,
            )
        for t, part in zip(target.elts, parts):
            self.bind_scoped(t, part, node)

    def frozen(self, atom):
        """A compile-time container whose variables (names assigned again later) are
        copied: it holds their values now, as a Python tuple or dict holds its items'."""
        if isinstance(atom, Var) and self.is_variable(atom.name):
            return self.snapshot(atom)
        if isinstance(atom, Tup):
            items = tuple(self.frozen(a) for a in atom.items)
            return atom if items == atom.items else Tup(items)
        if isinstance(atom, Record):
            values = tuple(self.frozen(a) for a in atom.values)
            return (
                atom
                if values == atom.values
                else Record(atom.kind, atom.cls, atom.keys, values, atom.local)
            )
        return atom

    def bind_container(self, name, atom) -> bool:
        """Bind `name` to a compile-time container (True), or check that a name holding one
        may now take a run-time value (False: bound as usual).

        A container has no run-time value, so a name holding one is resolved where it is
        read. That is sound where the name has one container at each read: in straight-line
        code, where it is assigned once, or as the target of an unrolled loop. A name
        assigned again in a loop body or a branch would need a variable: refused."""
        in_block = len(self.ctx.blocks) > 1
        if in_block and self.assignments.get(name, 0) > 1 and name not in self.unrolled:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{name!r} holds a dict, NamedTuple or "
                "dataclass (or a sequence of them), which is resolved at compile time, and "
                "is assigned again in a loop or branch; give each value its own name, or "
                "assign it outside the loop or branch",
            )
        if not holds_record(atom):
            return False
        self.env[name] = self.frozen(atom)
        return True

    def refuse_records(self, atoms, what=None):
        """A dict, NamedTuple or dataclass (or `d.items()`) is resolved at compile time and
        has no run-time value: used as one, it is refused here, located."""
        record = next((r for r in map(first_record, atoms) if r is not None), None)
        if record is None:
            return
        thing = record.what if isinstance(record, Static) else record.describe()
        use = (
            f" ({what.text or what.kind})" if what is not None and (what.text or what.kind) else ""
        )
        self.error(
            errors.UnsupportedSyntaxError,
            f"{thing} is used as a value{use}; "
            "only its items can be: index it with constant keys, read its fields, "
            "unpack it, or loop over it",
        )

    def tuples_as_values(self, rule, args):
        """`args` with each `Tup` at a position that has a VJP made a value of its own.

        A `Tup` is a compile-time tuple of atoms: it costs no code while it is only
        unpacked or indexed by constants, but it has no name, so no adjoint. Where one is
        an input the gradient flows through (an item of a list display `[(W, b)]`, a
        tuple indexed at run time, a nested tuple), it becomes `make_tuple(...)`, whose
        adjoint reaches each item (this call makes any nested tuple a value first)."""
        if not any(isinstance(a, Tup) for a in args):
            return args
        return [
            self.tuple_value(a) if isinstance(a, Tup) and rule.vjp_for(i) is not None else a
            for i, a in enumerate(args)
        ]

    def keyword_tuples_as_values(self, rule, kwargs):
        """`kwargs` with each `Tup` passed to a parameter that has a VJP made a value of its
        own (`tuples_as_values` for keywords: odeint(..., args=(a, b)))."""
        params = list(rule.params)
        return [
            (k, self.tuple_value(a))
            if isinstance(a, Tup) and k in params and rule.vjp_for(params.index(k)) is not None
            else (k, a)
            for k, a in kwargs
        ]

    def tuple_value(self, tup):
        """`make_tuple(...)` of a compile-time tuple. One of a parameter tree is named after
        its path (`params`, `params_0`) and made once where it is made in straight-line code
        (its items, parameters, never change)."""
        known = self.ctx.tuple_values.get(tup)
        if known is not None:
            return known
        name = self.ctx.tuple_names.get(tup)
        value = self.emit("make_tuple", list(tup.items), name=name)
        if name is not None and len(self.ctx.blocks) == 1:
            self.ctx.tuple_values[tup] = value
        return value

    def record_method(self, record, node):
        """`d.items()`, `d.values()`, `d.keys()` (for loops and `len`) and `d.get(k, default)`
        of a dict known at compile time."""
        attr = node.func.attr
        args, kwargs = self.call_args(node)
        if (
            record.kind != trees.DICT
            or attr not in ("items", "values", "keys", "get")
            or kwargs
            or len(args) > (2 if attr == "get" else 0)
            or attr == "get"
            and not args
        ):
            self.error(
                errors.UnsupportedSyntaxError,
                f".{attr}() of {record.describe()} is not "
                "supported (supported: a dict's .items(), .values(), .keys() and "
                ".get(key[, default]))",
                node,
            )
        if attr == "get":
            if not isinstance(args[0], Const):
                self.error(
                    errors.UnsupportedSyntaxError,
                    "a dict's key must be known at compile time (a constant)",
                    node,
                )
            key = args[0].value
            if key in record.keys:
                return record.values[record.keys.index(key)]
            return args[1] if len(args) > 1 else Const(None)
        keys = tuple(Const(k) for k in record.keys)
        items = {
            "keys": keys,
            "values": record.values,
            "items": tuple(Tup((k, v)) for k, v in zip(keys, record.values)),
        }[attr]
        return Static(items, f"{describe(node.func)}()")

    def record_item(self, record, index):
        """`d["W"]`, `p[0]` of a container known at compile time, at a constant key."""
        if isinstance(record, Record) and record.kind == trees.DATACLASS:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{record.describe()} is not subscriptable; read its fields as attributes",
            )
        if not isinstance(index, Const):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{first_record(record).describe()} is "
                "indexed by a value known only at run time; its keys must be constants "
                "(a loop over .items() is unrolled, so its keys are)",
            )
        key = index.value
        if isinstance(record, Record) and record.kind == trees.DICT:
            if key not in record.keys:
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"KeyError: {key!r} (the dict's keys: {', '.join(map(repr, record.keys))})",
                )
            return record.values[record.keys.index(key)]
        items = record.values if isinstance(record, Record) else record.items
        try:
            picked = items[key]
        except (IndexError, TypeError) as exc:
            self.error(errors.UnsupportedSyntaxError, f"{type(exc).__name__}: {exc}")
        return Tup(picked) if isinstance(picked, tuple) else picked
