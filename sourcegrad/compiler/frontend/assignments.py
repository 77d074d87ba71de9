"""Lowering assignments: a user name bound to an atom (a new name per value in
straight-line code, a variable in loops and branches), unpacking, `a[i] = v` as a new
value, and what marks an update made in place.
"""

from __future__ import annotations

import gast

from ... import errors
from ..ir import Assign, Const, Tup, Var
from .syntax import unsupported_target
from .values import LocalFunction, Record, Static, holds_record


class AssignmentsMixin:
    """Lowering assignments: a part of `Lowerer`."""

    def assign(self, target, value, stmt):
        self.refuse_kept_generator(value)
        if (
            isinstance(target, gast.Name)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr == "pop"
            and not value.args
            and isinstance(value.func.value, gast.Name)
            and value.func.value.id in self.env
        ):
            # `x = stack.pop()`: the last item, and the list without it (both new values)
            name = value.func.value.id
            stack = self.env[name]
            self.bind(
                target.id, self.emit("getitem", [stack, Const(-1)], name=self.local(target.id))
            )
            self.bind(
                name, self.emit("getitem", [stack, Const(slice(None, -1))], name=self.local(name))
            )
            return
        if isinstance(target, gast.Name):
            if isinstance(value, gast.Lambda):
                self.local_functions[target.id] = LocalFunction(
                    value, self, self.defaults_of(value.args)
                )
                return
            atom = self.expr(value, name=self.local(target.id))
            self.bind(target.id, atom)
            return
        if isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                atoms = [self.expr(v) for v in value.elts]  # evaluate all before binding: swaps
                # a variable's value is copied first, so `a, b = b, a` does not read a new a
                atoms = [
                    self.snapshot(a) if isinstance(a, Var) and self.is_variable(a.name) else a
                    for a in atoms
                ]
                for t, a in zip(target.elts, atoms):
                    self.assign_atom(t, a, stmt)
                return
            source = self.expr(value)
            for i, t in enumerate(target.elts):
                self.assign_atom(t, self.item_at(source, i, len(target.elts), t), stmt)
            return
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            self.setitem(target, value, stmt)
            return
        self.error(
            errors.UnsupportedSyntaxError,
            unsupported_target(target),
            stmt,
        )

    def item_at(self, atom, i, count, target):
        """Item `i` of `atom` unpacked into `count` targets (`a, b = atom`)."""
        if isinstance(atom, (Record, Static)):  # unpacked as iterated: a dict gives its keys
            items = self.compile_time_items(atom, None)
            if len(items) != count:
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"ValueError: {len(items)} values to unpack into {count} targets",
                )
            return items[i]
        return self.emit("getitem", [atom, Const(i)], name=self.name_of(target))

    def refuse_kept_generator(self, value):
        """A generator expression kept in a name runs when it is consumed, not where it is
        written: the names it reads may have changed by then (`c = 2; gen = (x[i] * c for i
        in r); c = 5; sum(gen)` uses c = 5). The compiler computes a comprehension where it
        is written; one passed straight to a call (`sum(x[i] * c for i in r)`) or returned
        (the function's names change no more) is the same, so only a kept one differs:
        refused, located."""
        if isinstance(value, gast.GeneratorExp):
            self.error(
                errors.UnsupportedSyntaxError,
                "a generator expression kept to be consumed later runs when it is consumed, "
                "with the values its names have then; write a list comprehension [...] (which "
                "runs here), or pass the generator expression straight to the call consuming it",
                value,
            )

    def assign_atom(self, target, atom, stmt):
        if isinstance(target, gast.Name):
            self.bind(target.id, atom)
        elif isinstance(target, (gast.Tuple, gast.List)):
            for i, t in enumerate(target.elts):
                self.assign_atom(t, self.item_at(atom, i, len(target.elts), t), stmt)
        else:
            self.error(
                errors.UnsupportedSyntaxError,
                unsupported_target(target),
                stmt,
            )

    def setitem(self, target, value, stmt):
        """`a[i] = v` as `a = setitem(a, i, v)`: a new array, so no value is changed in place."""
        name = target.value.id
        if name not in self.env:
            if self.enclosing is None:
                self.refuse_outside_change(name)  # `TABLE[0] = v` of a global TABLE
            self.error(
                errors.NameResolutionError,
                f"{name!r} is assigned by index before it is defined",
                stmt,
            )
        array = self.env[name]
        if isinstance(array, Record):
            self.record_setitem(name, array, target, value, stmt)
            return
        self.refuse_aliases(name, array, stmt)
        if isinstance(array, Tup) and not any(map(holds_record, array.items)):
            if array not in self.ctx.list_tuples:
                self.error(
                    errors.NumpyTypeError,
                    "the line raises TypeError: 'tuple' object does not support item assignment",
                    stmt,
                )
            # a list argument, passed as its items: the list made first (as `p = [p[0],
            # p[1]]` would make it), then the item replaced in a copy, as for any list
            array = self.emit("make_list", list(array.items), name=self.local(name))
        index = self.index(target.slice)
        atom = value if isinstance(value, (Var, Const, Tup)) else self.expr(value)
        start = len(self.out)
        self.bind(name, self.emit("setitem", [array, index, atom], name=self.local(name)))
        self.mark_in_place(self.env.get(name), start)

    def refuse_aliases(self, name, array, node):
        """Refuse changing `name`'s array in place while another name refers to it (numpy
        would change that one too; here the update is a new value)."""
        aliases = [n for n, a in self.env.items() if a == array and n != name]
        if aliases:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{name!r} is changed in place while "
                f"{aliases[0]!r} refers to the same array; copy it first (np.copy)",
                node,
            )

    def mark_in_place(self, atom, start):
        """Tag the statements from `start` on that assign `atom`'s name as updates in place."""
        if isinstance(atom, Var):
            for stmt in self.out[start:]:
                if isinstance(stmt, Assign) and stmt.target == atom.name:
                    stmt.in_place = True

    def bind(self, name, atom):
        """Make the user name `name` refer to `atom`.

        An immutable name just becomes another name for the atom (so copies cost
        nothing); a variable assigned in a loop or branch gets an assignment of its own.
        """
        local = self.local(name)
        self.ctx.user_names.add(local)
        if holds_record(atom) or holds_record(self.env.get(name)):
            if self.bind_container(name, atom):
                return
        if (
            name in self.unrolled
            and self.assignments.get(name, 0) == 1
            and not isinstance(atom, Tup)
            and not (isinstance(atom, Var) and self.is_variable(atom.name))
        ):
            # the target of an unrolled loop, assigned nowhere else: each trip's item is
            # the name's value as it is (a key stays a constant that indexes a dict)
            self.env[name] = atom
            return
        if name in self.mutable:
            self.no_function_values([atom], "a variable assigned in a loop or branch")
            self.ctx.issued.add(local)
            if isinstance(atom, Tup):  # a tuple held in a variable: a value with an adjoint
                atom = self.emit("make_tuple", list(atom.items))
            if atom != Var(local):
                self.out.append(Assign(local, atom, self.loc))
            self.env[name] = Var(local)
        elif isinstance(atom, Var) and self.is_variable(atom.name):
            # `z = y` where y is a variable assigned again later: z keeps today's value
            target = self._version(local)
            self.out.append(Assign(target, atom, self.loc))
            self.env[name] = Var(target)
        else:
            # (a tuple of values keeps today's value of each variable in it, as Python's)
            self.env[name] = self.frozen(atom) if isinstance(atom, Tup) else atom

    def is_variable(self, local_name):
        """Is this (prefixed) name one that is assigned more than once (a loop/branch variable)?"""
        base = (
            local_name[len(self.prefix) :]
            if self.prefix and local_name.startswith(self.prefix)
            else local_name
        )
        return base in self.mutable and self.env.get(base) == Var(local_name)

    def _version(self, name):
        """The name the next value assigned to the (prefixed) user name `name` gets: the name
        itself for its first value, unless an earlier inlining of the same function (whose
        names have the same prefix) gave it a value already, which may still be read."""
        base = name[len(self.prefix) :] if self.prefix and name.startswith(self.prefix) else name
        if base in self.mutable:
            self.ctx.issued.add(name)
            return name
        if base in self.env or name in self.ctx.issued:
            return self.ctx.namer.fresh(name)
        self.ctx.namer.taken.discard(name)
        name = self.ctx.namer.fresh(name)
        self.ctx.issued.add(name)
        return name

    def mutable_temp(self, base):
        target = self.ctx.namer.fresh(base)
        self.mutable.add(target[len(self.prefix) :] if target.startswith(self.prefix) else target)
        return target

    def snapshot(self, atom):
        """A name of its own for the current value of a variable."""
        temp = self.ctx.namer.fresh(atom.name + "_now")
        self.out.append(Assign(temp, atom, self.loc))
        return Var(temp)
