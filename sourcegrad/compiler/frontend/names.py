"""Resolving names: locals, enclosing functions, closure cells and globals (each read
recorded as a dependency), builtins and modules; attributes of modules and of objects
known when compiling.
"""

from __future__ import annotations

import builtins
import functools
import types

import gast
import numpy as np

from ... import errors, trees
from ...ops import rule_for_function
from ..dependencies import dependency, user_module
from ..ir import Const, Var
from .syntax import AtomNode, callee_name, changed_in_place_only, describe
from .values import (
    ATTRS,
    FUNCTION_VALUES,
    NOT_AN_OBJECT,
    CallableRef,
    MethodRef,
    ModuleRef,
    PartialRef,
    Record,
    is_plain_object,
    static_value,
)


class NamesMixin:
    """Resolving names: a part of `Lowerer`."""

    def bind_free(self, obj, name):
        ident = self.ctx.namer.fresh(name) if self.ctx.free.get(name, obj) is not obj else name
        self.ctx.free[ident] = obj
        self.ctx.namer.reserve(ident)
        return Var(ident)

    def lookup(self, ident):
        """A name that is not a local here: a nested function, an enclosing local, or a value."""
        if ident in self.local_functions:
            return self.local_functions[ident]
        if self.enclosing is not None:
            if ident in self.enclosing.env:
                return self.enclosing.env[ident]
            return self.enclosing.lookup(ident)
        return None

    def resolve(self, node):
        """What a name that is not a local stands for: a Python value from closure/globals.

        Every value read is recorded with where it came from: the generated code depends
        on it (numbers are inlined, functions inlined, arrays bound), so a gradient is
        regenerated when one of them is rebound.
        """
        ident = node.id
        if ident in self.closure:
            fn = self.parsed.fn
            cell = fn.__closure__[fn.__code__.co_freevars.index(ident)]
            self.ctx.dependencies.append(dependency("cell", cell, ident, self.closure[ident]))
            return self.closure[ident]
        if ident in self.globals:
            value = self.globals[ident]
            self.ctx.dependencies.append(dependency("global", self.globals, ident, value))
            return value
        if hasattr(builtins, ident):
            return getattr(builtins, ident)
        self.error(errors.NameResolutionError, f"name {ident!r} is not defined", node)

    def classify(self, value, ident, node):
        if isinstance(value, types.ModuleType):
            return ModuleRef(value)
        if type(value) is functools.partial:
            return self.partial_value(value, ident, node)
        const = static_value(value)
        if const is not None:
            return const
        if callable(value) and not isinstance(value, np.ndarray):
            return CallableRef(value)
        # an array or other object read from a global or closure cell: bound by name
        return self.bind_free(value, ident)

    def partial_value(self, value, ident, node):
        """A functools.partial object read from a global or closure value: its function and
        arguments classified as values read so (numbers inlined, arrays bound by name)."""
        return PartialRef(
            self.classify(value.func, ident, node),
            tuple(self.classify(a, f"{ident}_arg", node) for a in value.args),
            tuple((k, self.classify(v, f"{ident}_{k}", node)) for k, v in value.keywords.items()),
        )

    def library_method(self, base, node):
        """`st.norm.pdf` read as a value: a method of a library object with a rule (a
        function value, called where the code calls it), else None."""
        value = getattr(base.obj, node.attr, None) if isinstance(base, CallableRef) else None
        return CallableRef(value) if value is not None and rule_for_function(value) else None

    def name(self, node, name=None):
        ident = node.id
        if isinstance(node, AtomNode):
            return node.atom
        if ident in self.env:
            return self.env[ident]
        if ident in self.local_functions:  # `sq = lambda v: v * v`, read as a value
            return self.local_functions[ident]
        if ident in self.assigned and self.enclosing is None:
            self.refuse_outside_change(ident)
            self.error(
                errors.NameResolutionError,
                f"local variable {ident!r} is read before it is assigned",
                node,
            )
        found = self.lookup(ident)
        if found is not None:
            return found  # a local value, or a local function passed as a value
        ref = self.classify(self.resolve(node), ident, node)
        if isinstance(ref, ModuleRef):
            self.error(
                errors.UnsupportedSyntaxError,
                f"{ident!r} is a module used as a value; "
                "only its functions and constants can be read",
                node,
            )
        return ref  # a function value is resolved now, and inlined where it is called

    def refuse_outside_change(self, ident):
        """Refuse `LOG.append(t)` (or `G[0] = v`, `out=G`) where the function never binds
        `LOG`: Python changes the module's (or an enclosing function's) value, which the
        compiler, reading the name as a local it rebinds, would not; and the gradient runs
        its code more than once. Nothing to refuse where the name is bound in the function
        (read before its assignment: the caller's message says so)."""
        change = changed_in_place_only(self.parsed.tree, ident)
        if change is None:
            return
        if ident not in self.closure and ident not in self.globals:
            self.error(errors.NameResolutionError, f"name {ident!r} is not defined", change)
        value = self.closure[ident] if ident in self.closure else self.globals[ident]
        owner = "an enclosing function's" if ident in self.closure else "a module-level"
        local = ident.lower() if ident.lower() != ident else f"my_{ident}"
        build = (
            f"`{local} = []`, then `{local}.append(...)`"
            if isinstance(value, list)
            else f"`{local} = {ident}.copy()`"
        )
        self.error(
            errors.UnsupportedSyntaxError,
            f"{ident!r} is {owner} {type(value).__name__}: differentiated code cannot change "
            "it in place (the generated gradient would not make the change, and runs the "
            f"function's code more than once). Build a local one instead ({build}) and return "
            "it beside the result "
            f"(grad(f, has_aux=True) for f returning (loss, aux)), or change {ident} outside "
            "the differentiated function",
            change,
        )

    def target_of(self, func):
        """Resolve a call's function expression: ModuleRef, CallableRef, LocalFunction, or None."""
        if isinstance(func, gast.Name):
            if func.id in self.env:  # a parameter or variable holding a function value
                found = self.env[func.id]
                return found if isinstance(found, FUNCTION_VALUES) else None
            found = self.lookup(func.id)
            if isinstance(found, FUNCTION_VALUES):
                return found
            if found is not None:
                return None
            return self.classify(self.resolve(func), func.id, func)
        if isinstance(func, gast.Attribute):
            base = (
                self.target_of(func.value)
                if isinstance(func.value, (gast.Name, gast.Attribute))
                else None
            )
            if isinstance(base, ModuleRef):
                if not hasattr(base.module, func.attr):
                    self.error(
                        errors.NameResolutionError,
                        f"module {base.module.__name__!r} has no attribute {func.attr!r}",
                        func,
                    )
                value = getattr(base.module, func.attr)
                if isinstance(value, types.ModuleType):
                    return ModuleRef(value)
                if user_module(base.module):
                    # `config.LR`, `layers.act`: a user's module, whose names may be rebound
                    self.ctx.dependencies.append(
                        dependency("attribute", base.module, func.attr, value)
                    )
                const = static_value(value)
                if const is not None or not user_module(base.module) or callable(value):
                    # (a library's objects, np.r_ and np.s_, are read where they are used)
                    return const if const is not None else CallableRef(value)
                # a user module's array, dict or list (`config.HP`): bound by name
                return self.classify(value, func.attr, func)
            if isinstance(base, CallableRef):
                # a method of a library object that has a rule (scipy.stats.norm.logpdf)
                value = getattr(base.obj, func.attr, None)
                if value is not None and rule_for_function(value) is not None:
                    return CallableRef(value)
            if isinstance(func.value, (gast.Name, gast.Attribute)):
                obj = self.static_object(func.value)
                if obj is not NOT_AN_OBJECT:  # model.predict(...): a method of a user object
                    found = self.object_attribute(obj, func)
                    return found if isinstance(found, FUNCTION_VALUES) else None
        return None

    def static_object(self, node):
        """The object a name or attribute chain stands for when it is an instance of a user
        class known when compiling (a global, a closure value, an attribute of one), else
        `NOT_AN_OBJECT`."""
        if isinstance(node, gast.Name):
            atom = self.env.get(node.id)
            if atom is None:
                atom = self.lookup(node.id)
            if atom is None:  # a global or closure value (not a local read too early)
                if (
                    node.id in self.assigned
                    or node.id not in self.closure
                    and node.id not in self.globals
                ):
                    return NOT_AN_OBJECT
                value = self.resolve(node)
                return value if is_plain_object(value) else NOT_AN_OBJECT
            if (
                isinstance(atom, Var)
                and atom.name in self.ctx.free
                and is_plain_object(self.ctx.free[atom.name])
            ):
                return self.ctx.free[atom.name]  # an object passed on (`self` of a method)
            return NOT_AN_OBJECT
        if isinstance(node, gast.Attribute):
            holder = self.static_object(node.value)
            if holder is not NOT_AN_OBJECT:
                value = self.read_attribute(holder, node)
                if is_plain_object(value):
                    return value
        return NOT_AN_OBJECT

    def read_attribute(self, obj, node):
        """`obj.<attr>` read now; the code depends on it (rebinding it later rebuilds)."""
        try:
            value = getattr(obj, node.attr)
        except AttributeError:
            self.error(
                errors.NameResolutionError,
                f"{type(obj).__name__!r} object has no attribute {node.attr!r}",
                node,
            )
        if isinstance(value, types.MethodType):
            self.ctx.dependencies.append(("method", obj, node.attr, value.__func__))
        else:
            self.ctx.dependencies.append(dependency("attribute", obj, node.attr, value))
        return value

    def object_attribute(self, obj, node, name=None):
        """The atom (or function value) of `obj.<attr>` for an object known when compiling:
        numbers inlined, arrays bound by name, methods inlined where they are called."""
        value = self.read_attribute(obj, node)
        if (
            isinstance(value, types.MethodType)
            and isinstance(value.__func__, types.FunctionType)
            and value.__self__ is obj
        ):
            return MethodRef(value.__func__, self.bind_free(obj, callee_name(node.value)))
        if isinstance(value, types.ModuleType):
            self.error(
                errors.UnsupportedSyntaxError, f"{describe(node)} is a module read as a value", node
            )
        return self.classify(value, node.attr, node)

    def attribute(self, node, name=None):
        obj = self.static_object(node.value)
        if obj is not NOT_AN_OBJECT:  # cfg.lr, self.W, model.layers
            return self.object_attribute(obj, node, name)
        base = (
            self.target_of(node.value)
            if isinstance(node.value, (gast.Name, gast.Attribute))
            else None
        )
        if isinstance(base, ModuleRef):
            value = self.target_of(node)
            if isinstance(value, (Const, CallableRef, Var)):
                # a constant, a function passed as a value (np.tanh), a module's array or dict
                return value
            self.error(
                errors.UnsupportedSyntaxError,
                f"{describe(node)} used as a value; only calls of it are supported",
                node,
            )
        method = self.library_method(base, node)
        if method is not None:  # `pdf = st.norm.pdf`: a function value
            return method
        receiver = self.expr(node.value)
        if isinstance(receiver, Record) and receiver.kind != trees.DICT:
            if node.attr not in receiver.keys:
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"{receiver.describe()} has no field "
                    f"{node.attr!r} (its fields: {', '.join(receiver.keys)})",
                    node,
                )
            return receiver.values[receiver.keys.index(node.attr)]
        if isinstance(receiver, CallableRef) and node.attr in _FUNCTION_NAMES:
            # `func.__name__` in a logging wrapper: a string known while compiling
            return Const(getattr(receiver.obj, node.attr, None))
        op = ATTRS.get(node.attr)
        if op is None:
            self.error(
                errors.UnsupportedSyntaxError,
                f"the attribute .{node.attr} is not "
                "supported (supported: .T, .shape, .ndim, .size, .dtype, and the fields "
                "of a NamedTuple or dataclass argument)",
                node,
            )
        return self.emit(op, [receiver], name=name)


# the attributes of a function value read as constants (a wrapper's log line, a name check)
_FUNCTION_NAMES = frozenset({"__name__", "__qualname__", "__module__", "__doc__"})
