"""Lowering calls: primitives with rules, Python functions inlined (with their defaults,
closures and function values), methods, builtins decided while compiling (slice,
isinstance, callable), random draws, a gradient called inside differentiated code,
ufuncs with `out=`.

Why one module: every kind of call (a registry op, a method, a helper to inline, a gradient,
a checkpointed call, a function value) is told apart in one dispatch, `CallsMixin.call`,
whose cases share the argument binding.
"""

from __future__ import annotations

import inspect
import types

import gast
import numpy as np

from ... import errors, trees
from ...ops import RULES, array_methods, op_for_method, rule_for_function
from ...ops.numpy_functions import (
    ufunc_method_axis,
    ufunc_method_function,
    where_variant,
)
from ...runtime import einsum_sublists
from .. import random_draws
from ..dependencies import dependency
from ..derive import checkpointing
from ..ir import Const, Slc, Tup, Var
from ..names import sanitize
from .source import parse
from .syntax import callee_name, describe
from .values import (
    BUILTIN_REDUCTIONS,
    COMPILE_TIME_BUILTINS,
    FUNCTION_VALUES,
    IN_PLACE_OPERATORS,
    LIBRARIES,
    MAX_INLINE_DEPTH,
    VARARG_METHODS,
    CallableRef,
    LocalFunction,
    MethodRef,
    ModuleRef,
    PartialRef,
    Record,
    Static,
    function_label,
    function_stand_in,
    pack,
)

# the libraries whose functions without a rule are refused (the fence), not traced
_NOT_TRACED = frozenset({"numpy", "math", "builtins", "sourcegrad", "cupy", "dask", "torch"})

# sourcegrad's derivatives other than grad (hessian, jvp, jacobian, ...) and the functions
# they return: refused inside differentiated code (grad(f) is made there: make_gradient)
_TRANSFORMS = frozenset({"sourcegrad.api.transforms", "sourcegrad.api.gradient"})

# RandomState draws whose dimensions are *args, and the sized draw each is
_SIZED_DRAWS = {"randn": "standard_normal", "rand": "random_sample"}


class CallsMixin:
    """Lowering calls: a part of `Lowerer`."""

    def call_args(self, node):
        """Positional atoms (with *args expanded) and keyword atoms of a call."""
        args = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                seq = self.expr(a.value)
                if isinstance(seq, Tup):
                    args.extend(seq.items)
                elif isinstance(seq, Const) and isinstance(seq.value, (tuple, list)):
                    args.extend(Const(v) for v in seq.value)
                else:
                    self.error(
                        errors.UnsupportedSyntaxError,
                        "*args needs a tuple whose length is known",
                        node,
                    )
            else:
                args.append(self.expr(a))
        kwargs = []
        for k in node.keywords:
            if k.arg is not None:
                kwargs.append((k.arg, self.expr(k.value)))
                continue
            # `f(**kwargs)`: a dict known while compiling (a wrapper's `**kwargs` parameter, a
            # dict display) passes its items as keywords
            held = self.expr(k.value)
            if not (
                isinstance(held, Record)
                and held.kind == trees.DICT
                and all(isinstance(key, str) for key in held.keys)
            ):
                self.error(
                    errors.UnsupportedSyntaxError,
                    "**kwargs in a call needs a dict with string keys known while compiling "
                    "(a **kwargs parameter, or a dict display)",
                    node,
                )
            kwargs.extend(zip(held.keys, held.values))
        return args, kwargs

    def call(self, node, name=None):
        func = node.func
        if isinstance(func, gast.Lambda):  # (lambda v: ...)(x)
            args, kwargs = self.call_args(node)
            local = LocalFunction(func, self, self.defaults_of(func.args))
            return self.inline_local(local, args, kwargs, node, name)
        if isinstance(func, gast.Call):  # grad(f)(x): the gradient is made while compiling
            target = self.expr(func)
        else:
            target = self.target_of(func)
        if target is None and isinstance(func, gast.Attribute):
            owner = (
                self.target_of(func.value)
                if isinstance(func.value, (gast.Name, gast.Attribute))
                else None
            )
            if isinstance(owner, CallableRef) and isinstance(owner.obj, np.ufunc):
                return self.ufunc_method_call(owner.obj, func, node, name)
            return self.method(node, name)
        if isinstance(target, LocalFunction):
            args, kwargs = self.call_args(node)
            return self.inline_local(target, args, kwargs, node, name)
        if isinstance(target, MethodRef):
            args, kwargs = self.call_args(node)
            return self.inline(target.fn, [target.receiver] + args, kwargs, node, name)
        if isinstance(target, PartialRef):
            args, kwargs = self.call_args(node)
            return self.call_partial(target, args, kwargs, node, name)
        if not isinstance(target, CallableRef):
            self.error(errors.UnsupportedSyntaxError, f"{describe(func)} is not callable", node)
        return self.call_callable(target.obj, func, node, name)

    def call_callable(self, obj, func, node, name):
        """A call of a Python object: a compile-time builtin, a gradient or checkpoint made or
        called, a function of the user's inlined, a random draw, or an op of the registry."""
        if obj in IN_PLACE_OPERATORS:
            # (`a = operator.iadd(a, x)` is lowered as `a += x`: statements.py)
            self.error(
                errors.UnsupportedSyntaxError,
                f"operator.{obj.__name__}(a, x) changes a in place where it is an array (and "
                "makes a new value where it is a number): write it as the augmented "
                "assignment (a += x) or as a = operator."
                f"{obj.__name__}(a, x)",
                node,
            )
        if obj in COMPILE_TIME_BUILTINS and rule_for_function(obj) is None:
            return getattr(self, COMPILE_TIME_BUILTINS[obj])(node, name)
        if getattr(obj, "_sourcegrad_makes_checkpoint", False):  # checkpoint(f): made now
            return self.make_gradient(obj, node)
        if getattr(obj, "_sourcegrad_checkpoint", False):
            return self.checkpointed_call(obj, node, name)
        if getattr(obj, "_sourcegrad_makes_gradient", False):
            return self.make_gradient(obj, node)
        if getattr(obj, "_sourcegrad_gradient", False):
            return self.gradient_call(obj, func, node, name)
        if getattr(obj, "_sourcegrad_primitive", False):
            return self.primitive_call(obj, func, node, name)
        if _jitted(obj):  # a numba.njit helper: the Python function it compiles, inlined
            obj = obj.py_func
        if (getattr(obj, "__module__", None) or "") in _TRANSFORMS:
            # sourcegrad.hessian(f)(x), jvp, jacobian, ...: not inlined as Python (its
            # derivative would be of sourcegrad's own code)
            self.error(errors.NoRuleError, f"{describe(func)}: {errors.TRANSFORM_INSIDE}", node)
        if (
            isinstance(obj, types.FunctionType)
            and rule_for_function(obj) is None
            and (getattr(obj, "__module__", None) or "").split(".")[0] not in LIBRARIES
        ):
            args, kwargs = self.call_args(node)
            return self.inline(obj, args, kwargs, node, name)
        rule = rule_for_function(obj)
        draw = random_draws.function_rule(obj) if rule is None else None
        if draw is not None:  # np.random.normal(...): drawn in the forward pass only
            return self.random_draw_call(obj, draw, node, name)
        if rule is None and self.traceable_callee(obj):
            return self.traced_call(obj, func, node, name)
        if rule is None:
            for arg in node.args:  # report unsupported syntax inside the call first
                self.expr(arg)
            self.no_rule(obj, func, node)
        return self.rule_call(rule, node, name)

    def random_draw_call(self, obj, draw, node, name):
        method, args, kwargs = self.draw_arguments(obj.__name__, node)
        if method != obj.__name__:
            draw = random_draws.function_rule(getattr(np.random, method))
        result = self.emit(draw.name, args, kwargs, name=name)
        if obj in (np.random.default_rng, np.random.RandomState):
            self.ctx.generators.add(result.name)
        return result

    def rule_call(self, rule, node, name):
        """A call of a function the registry has a rule for (np.sin(x), np.einsum(...))."""
        if rule.name in ("vjp_at_run_time", "jvp_at_run_time"):
            made = self.primitive_derivative(rule.name, node, name)
            if made is not None:
                return made
            self.refuse_run_time_rule(node)
        if rule.sequence_input:
            return self.sequence_call(rule, node, name)
        into_item = next(
            (
                k.value
                for k in node.keywords
                if k.arg == "out"
                and isinstance(k.value, gast.Subscript)
                and isinstance(k.value.value, gast.Name)
            ),
            None,
        )
        if into_item is not None and isinstance(rule.fn, np.ufunc):
            return self.ufunc_into_item(rule, node, into_item, name)
        args, kwargs = self.call_args(node)
        if "where" in dict(kwargs) and where_variant(rule.name) is not None:
            rule = RULES[where_variant(rule.name)]  # np.sum(x, where=m): sum's masked entry
        if rule.name in BUILTIN_REDUCTIONS and len(args) > 1:
            return self.emit(BUILTIN_REDUCTIONS[rule.name], args, kwargs, name=name)
        out = dict(kwargs).get("out")
        if out is not None and (isinstance(rule.fn, np.ufunc) or "out" in rule.defaults):
            # (a function with an out= parameter, np.fft.fft(x, out=o), writes its result
            # there as a ufunc does)
            return self.ufunc_into(
                rule, args, [kv for kv in kwargs if kv[0] != "out"], out, node, name
            )
        if rule.name == "einsum" and not (
            args and isinstance(args[0], Const) and isinstance(args[0].value, str)
        ):
            args = self.einsum_sublists(args, node)
        if rule.function_params:
            args, kwargs = self.function_arguments(rule, args, kwargs, node)
        self.check_binding(rule, args, kwargs, node)
        # (a tuple of values passed where the rule has a VJP, `einsum_grad(g, s, (A, B), 0)`
        # in generated code, becomes a value of its own in `emit`: its adjoint reaches A, B)
        return self.emit(rule.name, args, kwargs, name=name)

    @staticmethod
    def traceable_callee(obj) -> bool:
        """A callable of the user's whose source this front end does not read (an object
        with `__call__`, a function a C decorator wraps): traced where it is called. Not a
        library's function without a rule (the fence refuses it), nor a class (a call makes
        an object, not a value to differentiate)."""
        module = (getattr(obj, "__module__", None) or type(obj).__module__ or "").split(".")[0]
        return (
            callable(obj)
            and not isinstance(obj, (type, types.BuiltinFunctionType, np.ufunc))
            and module not in LIBRARIES
            and module not in _NOT_TRACED
        )

    def traced_call(self, obj, func, node, name):
        """`act(z)` of an object with `__call__` (or another callable this front end does not
        read) inside code it reads: `traced_call(act, z)`, run as it is in the forward pass,
        its derivative its VJP from a trace of it when the backward runs (`ops.traced_call`),
        so the loop around it stays a loop. Keywords are bound to positions first: a
        keyword-only argument that carries a value is refused (its gradient would be lost)."""
        args, kwargs = self.call_args(node)
        if kwargs:
            try:
                bound = inspect.signature(obj).bind_partial(*args, **dict(kwargs))
            except (TypeError, ValueError) as exc:
                self.error(errors.UnsupportedSyntaxError, f"{describe(func)}: {exc}", node)
            args = list(bound.args)
            if bound.kwargs:
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"{describe(func)} is called through its trace, with positional arguments "
                    f"only: pass {', '.join(bound.kwargs)} by position",
                    node,
                )
        callee = self.bind_free(obj, callee_name(func))
        return self.emit("traced_call", [callee, *args], name=name)

    def primitive_call(self, primitive, func, node, name):
        """`f(x, ...)` of a function the user made a primitive (`sourcegrad.extend.primitive`,
        autograd's `@primitive`): not read, run as Python in the forward pass, its derivative
        the user's VJP or JVP (`ops.primitive_call`). Keywords are not differentiated (as in
        autograd): constant ones are fixed now (`extend.keyword_primitive`), others refused."""
        args, kwargs = self.call_args(node)
        if kwargs:
            if not all(isinstance(a, Const) for _, a in kwargs):
                self.error(
                    errors.UnsupportedSyntaxError,
                    f"{describe(func)}: a primitive's keyword arguments are not differentiated; "
                    "give constants, or pass the value by position",
                    node,
                )
            primitive = primitive.with_keywords({k: a.value for k, a in kwargs})
        label = sanitize(getattr(primitive, "__name__", "primitive"))
        passed = [self.function_value(a, node) for a in args]
        return self.emit("primitive_call", [self.bind_free(primitive, label), *passed], name=name)

    def function_value(self, atom, node):
        """An argument of a primitive that is a function (fixed_point's f, distance): passed
        as a value where it is one (defined at module level, imported), refused where the
        front end only inlines it (a lambda, a nested def, a partial: no value to pass)."""
        if not isinstance(atom, FUNCTION_VALUES):
            return atom
        if isinstance(atom, CallableRef) and callable(atom.obj):
            return self.bind_free(atom.obj, sanitize(getattr(atom.obj, "__name__", "function")))
        self.error(
            errors.UnsupportedSyntaxError,
            f"{describe(node.func)} is a primitive given {function_label(atom)!r}, which must be "
            "a function defined at module level (or imported): a lambda, a nested def or a "
            "partial is inlined where the code calls it and has no value to pass",
            node,
        )

    def primitive_derivative(self, op, node, name):
        """`vjp_at_run_time('primitive_call', k, g, ans, f, *args)`, a user's primitive's VJP
        (or JVP) in generated code, met where that gradient is differentiated again: a call
        of the primitive's maker as a function of (g, ans, *args) (`Primitive.derivative`),
        traced when the backward runs (`ops.traced_call`), so the maker's own code is
        differentiated (autograd's "the VJP must itself be differentiable"). None for any
        other rule met at run time (refused by the caller)."""
        first, position = node.args[:2] if len(node.args) >= 5 else (None, None)
        if not (
            isinstance(first, gast.Constant)
            and first.value in ("primitive_call", "call_gradient")
            and isinstance(position, gast.Constant)
            and isinstance(node.args[4], (gast.Name, gast.Attribute))
        ):
            return None
        held = self.target_of(node.args[4])
        if not (isinstance(held, CallableRef) and hasattr(held.obj, "derivative")):
            return None
        args, kwargs = self.call_args(node)
        if kwargs:
            return None
        kind = "jvp" if op == "jvp_at_run_time" else "vjp"
        derivative = held.obj.derivative(kind, position.value - 1, len(args) - 5)
        if derivative is None:
            return None
        label = sanitize(f"{kind}_{getattr(held.obj, '__name__', 'primitive')}")
        callee = self.bind_free(derivative, label)
        passed = [self.function_value(a, node) for a in args[5:]]
        return self.emit("traced_call", [callee, args[2], args[3], *passed], name=name)

    def refuse_run_time_rule(self, node):
        """A derivative that generated code runs as Python (`ops.vjp_at_run_time`: odeint's
        adjoint ODE, a gradient called inside differentiated code, a rule choosing its formula
        by a rank known only then), met again where a gradient is differentiated: it has no
        derivative of its own, so the second derivative is refused here, located."""
        first = node.args[0] if node.args else None
        op = first.value if isinstance(first, gast.Constant) else None
        what = RULES[op].family if op in RULES else "this operation"
        hint = (
            " (a gradient of several arguments, or with its value, called inside a function "
            "whose gradient is differentiated again; grad(grad(grad(f))) of a scalar function "
            "differentiates f's own code to any order)"
            if op == "call_gradient"
            else ""
        )
        self.error(
            errors.NoRuleError,
            f"a second derivative through {what} is not supported: its first derivative is "
            f"Python code that runs when the backward runs, with no derivative rule of its own{hint}",
            node,
        )

    def function_arguments(self, rule, args, kwargs, node):
        """The arguments of an op that calls a function of the user's itself
        (`Rule.function_params`: scipy.integrate.odeint's func): a function defined at module
        level or imported is passed as a value, bound by name. A lambda, a nested def or a
        partial is inlined where the code calls it, so it has no value to pass: refused,
        located."""

        def passed(atom):
            if not isinstance(atom, FUNCTION_VALUES):
                return atom
            if isinstance(atom, CallableRef) and isinstance(atom.obj, types.FunctionType):
                return self.bind_free(atom.obj, atom.obj.__name__)
            self.error(
                errors.UnsupportedSyntaxError,
                f"{describe(node.func)} calls {function_label(atom)!r} itself, so it must be "
                "a function defined at module level (or imported): a lambda, a nested def or "
                "a partial is inlined where the code calls it and has no value to pass. "
                "Define it at module level and pass the values it uses through args=(...)",
                node,
            )

        params = list(rule.params)
        args = [
            passed(a) if i < len(params) and params[i] in rule.function_params else a
            for i, a in enumerate(args)
        ]
        kwargs = [(k, passed(a) if k in rule.function_params else a) for k, a in kwargs]
        return args, kwargs

    def einsum_sublists(self, args, node):
        """`np.einsum(a, [0, 1], b, [1, 2], [0, 2])` as `np.einsum("AB,BC->AC", a, b)`: the
        labels must be known while compiling (one subscripts string serves the rules)."""
        plain = []  # the operands as they are, the labels as Python lists
        for i, atom in enumerate(args):
            is_labels = i % 2 == 1 or (i == len(args) - 1 and i > 0)
            if not is_labels:
                plain.append(atom)
            elif isinstance(atom, Const) and isinstance(atom.value, (list, tuple)):
                plain.append(list(atom.value))
            elif isinstance(atom, Tup) and all(isinstance(v, Const) for v in atom.items):
                plain.append([v.value for v in atom.items])
            else:
                self.error(
                    errors.UnsupportedSyntaxError,
                    "einsum's sublist form needs its labels known while compiling "
                    "(lists of integers and Ellipsis), or write the subscripts as a string",
                    node,
                )
        try:
            spec, operands = einsum_sublists(plain)
        except ValueError as e:
            self.error(errors.UnsupportedSyntaxError, str(e), node)
        return [Const(spec)] + operands

    def sequence_builtin_call(self, node, name):
        """`tuple(x)` and `list(x)`. Of a tuple known while compiling (`tuple((a, b))`), that
        tuple (a list: a new list of its items); of a constant, the constant converted; of a
        dict or `d.items()` known while compiling, its keys or items; of a value computed at
        run time (a function's tuple result such as np.linalg.svd's, a list built at run
        time, an array's rows), the op `tuple_builtin` / `list_builtin`, whose adjoint hands
        each item's back (ops/program.py)."""
        kind = self.target_of(node.func).obj
        args, kwargs = self.call_args(node)
        if kwargs or len(args) > 1:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{kind.__name__}() takes at most one positional argument",
                node,
            )
        if not args:
            return Const(kind())
        value = args[0]
        if isinstance(value, (Record, Static)):
            value = Tup(tuple(self.compile_time_items(value, node)))
        if isinstance(value, Tup):
            return value if kind is tuple else self.emit("make_list", list(value.items), name=name)
        if isinstance(value, Const):
            try:
                return Const(kind(value.value))
            except TypeError as exc:
                self.error(errors.UnsupportedSyntaxError, f"TypeError: {exc}", node)
        return self.emit(f"{kind.__name__}_builtin", [value], name=name)

    def partial_call(self, node, name):
        """`functools.partial(f, *args, **kwargs)`: a function value made while compiling
        (`PartialRef`), called where the code calls it; f must be a function value the
        compiler can call (a Python function, a lambda, a function with a rule)."""
        args, kwargs = self.call_args(node)
        if not args or not isinstance(args[0], FUNCTION_VALUES):
            self.error(
                errors.UnsupportedSyntaxError,
                "functools.partial needs a function known while compiling as its first "
                "argument (a def, a lambda, a numpy or scipy function)",
                node,
            )
        return PartialRef(args[0], tuple(args[1:]), tuple(kwargs))

    def call_partial(self, partial, args, kwargs, node, name):
        """A call of a `PartialRef`: its function with its arguments first, the call's
        keywords over its own (as functools.partial calls)."""
        merged = dict(partial.kwargs)
        merged.update(kwargs)
        args, kwargs = [*partial.args, *args], list(merged.items())
        target = partial.target
        if isinstance(target, PartialRef):
            return self.call_partial(target, args, kwargs, node, name)
        if isinstance(target, LocalFunction):
            return self.inline_local(target, args, kwargs, node, name)
        if isinstance(target, MethodRef):
            return self.inline(target.fn, [target.receiver] + args, kwargs, node, name)
        obj = target.obj
        rule = rule_for_function(obj)
        if (
            rule is None
            and isinstance(obj, types.FunctionType)
            and (getattr(obj, "__module__", None) or "").split(".")[0] not in LIBRARIES
        ):
            return self.inline(obj, args, kwargs, node, name)
        if rule is None or rule.sequence_input:
            self.error(
                errors.UnsupportedSyntaxError,
                f"functools.partial of {function_label(target)!r} is differentiated where "
                "it wraps a Python function or a function with a rule taking arrays; call "
                "the function itself here",
                node,
            )
        self.check_binding(rule, args, kwargs, node)
        return self.emit(rule.name, args, kwargs, name=name)

    def slice_call(self, node, name):
        """`slice(a, b)`: the index `a:b` (a value of its own where a bound is computed)."""
        args, kwargs = self.call_args(node)
        if kwargs or not 1 <= len(args) <= 3:
            self.error(
                errors.UnsupportedSyntaxError, "slice takes 1 to 3 positional arguments", node
            )
        parts = [Const(None)] + args if len(args) == 1 else args
        parts = list(parts) + [Const(None)] * (3 - len(parts))
        if all(isinstance(p, Const) for p in parts):
            return Const(slice(*(p.value for p in parts)))
        return Slc(*parts)

    def divmod_call(self, node, name):
        """`divmod(x, y)` and `np.divmod(x, y)`: the pair `(x // y, x % y)` (floor division
        and the remainder of the same sign as y, for Python's floats as for numpy's)."""
        args, kwargs = self.call_args(node)
        if kwargs or len(args) != 2:
            self.error(
                errors.UnsupportedSyntaxError, f"{describe(node.func)} takes two arguments", node
            )
        return Tup((self.emit("floordiv_op", args), self.emit("mod_op", args)))

    def callable_call(self, node, name):
        """`callable(v)`: known now, as a function value is never a value of the code."""
        args, kwargs = self.call_args(node)
        if kwargs or len(args) != 1:
            self.error(errors.UnsupportedSyntaxError, "callable takes one argument", node)
        value = args[0]
        if isinstance(value, FUNCTION_VALUES):
            return Const(True)
        return Const(callable(value.value) if isinstance(value, Const) else False)

    def isinstance_call(self, node, name):
        """`isinstance(v, T)`: decided now for constants, tuples and functions; for a
        computed value, a test of its type (the signature fixes types, so analysis decides
        it per signature and the branch not taken is not compiled)."""
        if len(node.args) != 2 or node.keywords:
            self.error(errors.UnsupportedSyntaxError, "isinstance takes two arguments", node)
        value = self.expr(node.args[0])
        types_node = node.args[1]
        parts = types_node.elts if isinstance(types_node, gast.Tuple) else [types_node]
        classes = []
        for part in parts:
            ref = self.target_of(part) if isinstance(part, (gast.Name, gast.Attribute)) else None
            if not (isinstance(ref, CallableRef) and isinstance(ref.obj, type)):
                self.error(
                    errors.UnsupportedSyntaxError,
                    "the second argument of isinstance must name classes known when compiling",
                    node,
                )
            classes.append(ref.obj)
        classes = tuple(classes)
        if isinstance(value, Const):
            return Const(isinstance(value.value, classes))
        if isinstance(value, Tup):  # a list or a tuple: which, is not kept here
            as_list, as_tuple = isinstance([], classes), isinstance((), classes)
            if as_list != as_tuple:
                self.error(
                    errors.UnsupportedSyntaxError,
                    "isinstance of a sequence known "
                    "while compiling cannot tell a list from a tuple here",
                    node,
                )
            return Const(as_list)
        if isinstance(value, CallableRef):
            return Const(isinstance(value.obj, classes))
        if isinstance(value, LocalFunction):
            return Const(isinstance(function_stand_in, classes))
        if isinstance(value, Slc):
            return Const(isinstance(slice(None), classes))
        held = self.bind_free(
            classes if len(classes) > 1 else classes[0], "_".join(c.__name__ for c in classes)
        )
        return self.emit("isinstance_builtin", [value, held], name=name)

    def make_gradient(self, maker, node):
        """`grad(f, wrt=...)` inside differentiated code: made now (a function value), so
        calling it is a call of a gradient (`gradient_call`)."""
        args, kwargs = self.call_args(node)
        values = []
        for atom in args + [a for _, a in kwargs]:
            if isinstance(atom, CallableRef) and isinstance(atom.obj, types.FunctionType):
                values.append(atom.obj)
            elif isinstance(atom, Const):
                values.append(atom.value)
            else:
                self.error(
                    errors.UnsupportedSyntaxError,
                    "a gradient made inside "
                    "differentiated code takes a function defined at module level (or "
                    "imported) and constant options",
                    node,
                )
        made = maker(*values[: len(args)], **dict(zip([k for k, _ in kwargs], values[len(args) :])))
        return CallableRef(made)

    def gradient_call(self, gradient, func, node, name):
        """`g(x)` for a gradient `g = grad(f)` (a Newton step, meta-learning): it runs as it
        runs anywhere, and its derivative is its pullback (`ops.call_gradient`)."""
        args, kwargs = self.call_args(node)
        if (
            kwargs
            or type(gradient).__name__ != "Gradient"
            or gradient.with_value
            or not gradient._single
        ):
            self.error(
                errors.UnsupportedSyntaxError,
                "inside differentiated code a gradient "
                "is supported as grad(f) with one argument to differentiate, called "
                "with positional arguments",
                node,
            )
        # (a name generated code can hold: a lambda's __name__ is '<lambda>')
        label = sanitize(f"grad_{getattr(gradient.fn, '__name__', 'f')}")
        return self.emit("call_gradient", [self.bind_free(gradient, label), *args], name=name)

    def ufunc_into(self, rule, args, kwargs, out, node, name):
        """`np.exp(u, out=u)` (generated code reusing a buffer, or the user's): the result is a
        new value, and the buffer's name is rebound to it as an update in place (so a view of
        the old buffer read later is caught by analysis.check_in_place_updates)."""
        buffer = next((n for n, a in self.env.items() if a == out), None)
        if buffer is None:
            self.error(errors.UnsupportedSyntaxError, "out= must name an array", node)
        self.check_binding(rule, args, kwargs, node)
        if not args or args[0] != out:
            # `np.multiply(v, 2.0, out=o)`: `o[...] = np.multiply(v, 2.0)`, an update in place
            # of o (an update's first argument is the array it changes: read as the call's
            # own, v would be taken for the array changed, and a view of o kept old values)
            target = gast.Subscript(
                value=gast.Name(id=buffer, ctx=gast.Load(), annotation=None, type_comment=None),
                slice=gast.Constant(value=Ellipsis, kind=None),
                ctx=gast.Store(),
            )
            self.setitem(gast.copy_location(target, node), self.emit(rule.name, args, kwargs), node)
            return self.env[buffer]
        start = len(self.out)
        result = self.emit(rule.name, args, kwargs, name=self.local(buffer))
        self.bind(buffer, result)
        self.mark_in_place(self.env.get(buffer), start)
        return result

    def ufunc_into_item(self, rule, node, item, name):
        """`np.multiply(a, b, out=rows[t])` (generated code computing a step's value into
        its row, or the user's): `rows[t] = np.multiply(a, b)`, an update in place of rows,
        and the call's value is the item `rows[t]`, as numpy returns the view it wrote."""
        call = gast.Call(
            func=node.func, args=node.args, keywords=[k for k in node.keywords if k.arg != "out"]
        )
        gast.copy_location(call, node)
        result = self.call(call, name)
        self.setitem(item, result, node)
        return self.emit("getitem", [self.env[item.value.id], self.index(item.slice)], name=name)

    def inline(self, fn, args, kwargs, node, name):
        """Lower a call of a Python function by lowering its body here, its names prefixed."""
        parsed = self.ctx.parsed_cache.get(fn)
        if parsed is None:
            parsed = parse(fn)
            self.ctx.parsed_cache[fn] = parsed
        tree = parsed.tree
        child = type(self)(parsed, self.ctx, prefix=self.inline_prefix(tree.name))
        defaults = {}
        # its defaults are inlined as constants: code built from them is stale once they are
        # rebound (`helper.__defaults__ = (3.0,)`), as it is once a global it read is
        self.ctx.dependencies.append(dependency("attribute", fn, "__defaults__", fn.__defaults__))
        self.ctx.dependencies.append(
            dependency("attribute", fn, "__kwdefaults__", fn.__kwdefaults__)
        )
        if fn.__defaults__:
            names = [a.id for a in tree.args.posonlyargs + tree.args.args]
            for pname, value in zip(names[len(names) - len(fn.__defaults__) :], fn.__defaults__):
                defaults[pname] = child.classify(value, pname, tree)
        for pname, value in (fn.__kwdefaults__ or {}).items():
            defaults[pname] = child.classify(value, pname, tree)
        return self.run_inlined(child, tree, tree.args, tree.body, args, kwargs, defaults, node)

    def checkpointed_call(self, checkpointed, node, name):
        """A call of `sourcegrad.checkpoint(f)`: f inlined, its statements marked so that the
        backward recomputes what it reads of them (`checkpointing.recompute_regions`)."""
        args, kwargs = self.call_args(node)
        out, start = self.out, len(self.out)
        result = self.inline(checkpointed.__wrapped__, args, kwargs, node, name)
        out[start:] = checkpointing.marked(out[start:])
        return result

    def inline_local(self, local_fn, args, kwargs, node, name):
        scope = local_fn.scope
        fn_node = local_fn.node
        label = getattr(fn_node, "name", "lambda")
        child = type(self)(
            scope.parsed, self.ctx, prefix=self.inline_prefix(label), enclosing=scope
        )
        body = (
            fn_node.body
            if isinstance(fn_node, gast.FunctionDef)
            else [gast.copy_location(gast.Return(value=fn_node.body), fn_node.body)]
        )
        return self.run_inlined(
            child, fn_node, fn_node.args, body, args, kwargs, local_fn.defaults, node
        )

    def inline_prefix(self, label) -> str:
        """The prefix of an inlined function's names: `f_`, or `f2_`, `f3_`, ... inside an
        inlining of a function of the same name (a recursion unrolled): the inner call's
        variables must not be the outer call's, which it would overwrite."""
        prefix, depth = f"{label}_", 1
        while prefix in self.ctx.active_prefixes:
            depth += 1
            prefix = f"{label}{depth}_"
        return prefix

    def bind_call(self, arguments, args, kwargs, defaults, node):
        """Bind a call's atoms to a def's parameters as Python does: `(params, {param:
        atom})`, `*args` bound to a tuple of the extra positional atoms and `**kwargs` to a
        dict of the extra keywords (both known while compiling)."""
        positional = [a.id for a in arguments.posonlyargs + arguments.args]
        keyword_only = [a.id for a in arguments.kwonlyargs]
        bound = dict(defaults)
        if len(args) > len(positional) and not arguments.vararg:
            self.error(errors.UnsupportedSyntaxError, "too many arguments in this call", node)
        bound.update(zip(positional, args))
        extra_keywords = {}
        for k, atom in kwargs:
            if k in bound and k in positional[: len(args)]:
                self.error(
                    errors.UnsupportedSyntaxError, f"multiple values for argument {k!r}", node
                )
            if k in positional and k not in {a.id for a in arguments.posonlyargs}:
                bound[k] = atom
            elif k in keyword_only:
                bound[k] = atom
            elif arguments.kwarg:
                extra_keywords[k] = atom
            else:
                self.error(
                    errors.UnsupportedSyntaxError, f"unexpected keyword argument {k!r}", node
                )
        params = positional + keyword_only
        if arguments.kwarg:  # `**kwargs`: the other keywords, a dict known when compiling
            bound[arguments.kwarg.id] = Record(
                trees.DICT, None, tuple(extra_keywords), tuple(extra_keywords.values()), True
            )
            params.append(arguments.kwarg.id)
        if arguments.vararg:  # `*args`: the extra arguments, a tuple known when compiling
            extra = tuple(args[len(positional) :])
            bound[arguments.vararg.id] = Tup(extra) if extra else Const(())
            params.append(arguments.vararg.id)
        missing = [p for p in params if p not in bound]
        if missing:
            self.error(errors.UnsupportedSyntaxError, f"missing argument {missing[0]!r}", node)
        return params, bound

    def run_inlined(self, child, fn_node, arguments, body, args, kwargs, defaults, node):
        if self.ctx.inline_depth >= MAX_INLINE_DEPTH:
            self.error(
                errors.RecursionDepthError,
                "calls nest deeper than "
                f"{MAX_INLINE_DEPTH} levels: recursion whose depth depends on the data "
                "(or that an int argument bounds above that) cannot be differentiated",
                node,
            )
        params, bound = self.bind_call(arguments, args, kwargs, defaults, node)
        child.prepare(body, params)
        for p in params:
            child.env[p] = bound[p]
            if p in child.mutable:
                child.bind(p, bound[p])
        self.ctx.inline_depth += 1
        self.ctx.active_prefixes.append(child.prefix)
        try:
            result = child.function_body(body, fn_node)
            # A variable of the callee (assigned in its loops or branches) has the same name
            # in every inlining of the callee: the value returned is copied, or a second
            # call would change what the first returned
            result = child.frozen(result)
        except errors.SourcegradError as exc:  # (which call led there: `called_from`)
            exc.called_from = (*exc.called_from, self.parsed.loc(node))
            raise
        finally:
            self.ctx.inline_depth -= 1
            self.ctx.active_prefixes.pop()
        self.loc = self.parsed.loc(node)
        return result

    def sequence_call(self, rule, node, name):
        """`np.concatenate([a, b], axis=0)` -> concatenate(a, b, axis=0); with `out=o`, the
        result written into o (as `ufunc_into`)."""
        rest = node.args[1:]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        if rest:
            kwargs = [("axis", self.expr(rest[0]))] + kwargs
        out = dict(kwargs).get("out")
        kwargs = [kv for kv in kwargs if kv[0] != "out"]

        def made(rule, items):
            if out is not None:
                return self.ufunc_into(rule, items, kwargs, out, node, name)
            return self.emit(rule.name, items, kwargs, name=name)

        if node.args and isinstance(node.args[0], (gast.List, gast.Tuple)):
            return made(rule, [self.expr(e) for e in node.args[0].elts])
        seq = self.expr(node.args[0]) if node.args else None
        if isinstance(seq, Tup):  # a tuple known while compiling (`args + (ones,)`)
            return made(rule, list(seq.items))
        if isinstance(seq, Var) and f"{rule.name}_list" in RULES:  # a list built at run time
            return made(RULES[f"{rule.name}_list"], [seq])
        if isinstance(seq, Var):
            self.error(
                errors.NoRuleError,
                f"{describe(node.func)} of a list built at run time "
                "has no rule (np.stack and np.concatenate of one have)",
                node,
            )
        self.error(
            errors.UnsupportedSyntaxError,
            f"{describe(node.func)} needs a list or tuple of arrays as its first argument",
            node,
        )

    def method(self, node, name=None):
        func = node.func
        receiver = self.expr(func.value)
        if isinstance(receiver, Record):
            return self.record_method(receiver, node)
        if isinstance(receiver, Var) and (
            receiver.name in self.ctx.generators
            or random_draws.is_generator(self.ctx.free.get(receiver.name))
        ):
            # rng.standard_normal(n): a draw from the user's generator, in the forward pass
            method, args, kwargs = self.draw_arguments(func.attr, node)
            draw = random_draws.method_rule(method)
            return self.emit(draw.name, [receiver] + args, kwargs, name=name)
        op = op_for_method(func.attr)
        if op is None:
            self.error(
                errors.NoRuleError,
                f"the method .{func.attr}() has no derivative rule; "
                "supported methods: " + ", ".join(array_methods()),
                node,
            )
        args, kwargs = self.call_args(node)
        if func.attr in VARARG_METHODS and len(args) > 1:
            args = [pack(args)]
        if func.attr == "copy" and all(
            isinstance(a, Const) and a.value in ("C", "K", "A") for a in args
        ):
            args = []  # (the memory layout of the copy changes no value)
        args = [receiver] + args
        if "where" in dict(kwargs) and where_variant(op) is not None:
            op = where_variant(op)  # x.sum(where=m): sum's masked entry
        out = dict(kwargs).get("out")
        if out is not None:  # `y.clip(lo, hi, out=y)`: written into the buffer, as np.clip's
            return self.ufunc_into(
                RULES[op], args, [kv for kv in kwargs if kv[0] != "out"], out, node, name
            )
        self.check_binding(RULES[op], args, kwargs, node)
        return self.emit(op, args, kwargs, name=name)

    def ufunc_method_call(self, ufunc, func, node, name):
        """`np.add.reduce(x, axis)`, `np.multiply.accumulate(x)`, `np.subtract.outer(a, b)`:
        the call of the function that method is (np.sum, np.cumprod, ...: the registry's
        `ufunc_method_function`), along axis 0 where reduce or accumulate names none."""
        function = ufunc_method_function(ufunc, func.attr)
        rule = rule_for_function(function) if function is not None else None
        if rule is None:
            self.error(
                errors.NoRuleError,
                f"{describe(func)}() has no derivative rule (the ufunc methods that have: "
                "add/multiply/maximum/minimum/logaddexp.reduce, "
                "add/multiply/maximum/minimum/logaddexp.accumulate, add.reduceat, "
                "add/subtract/multiply.outer, add/subtract/multiply.at)",
                node,
            )
        args, kwargs = self.call_args(node)
        params = list(rule.signature().parameters)
        if dict(kwargs).get("out") is not None or "out" in params[: len(args)]:
            # (the result written into a buffer: not modelled here, where the buffer would
            # keep its old value and a zero gradient; the trace records the store)
            self.error(
                errors.UnsupportedSyntaxError,
                f"{describe(func)}() with out= is not read here",
                node,
            )
        axis = ufunc_method_axis(func.attr)
        if axis is not None and len(args) < 2 and "axis" not in dict(kwargs):
            kwargs = [*kwargs, ("axis", Const(axis))]
        self.check_binding(rule, args, kwargs, node)
        return self.emit(rule.name, args, kwargs, name=name)

    def draw_arguments(self, method, node):
        """(method, args, kwargs) of a random draw. `randn(*x.shape)` and `rand(*x.shape)`, with
        a shape known only at run time, are RandomState's `standard_normal(size=...)` and
        `random_sample(size=...)`: numpy's randn and rand call exactly these, so the numbers
        drawn are the same."""
        starred = [a for a in node.args if isinstance(a, gast.Starred)]
        if method in _SIZED_DRAWS and len(node.args) == 1 and starred and not node.keywords:
            shape = self.expr(starred[0].value)
            if not isinstance(shape, Tup):
                return _SIZED_DRAWS[method], [], [("size", shape)]
        args, kwargs = self.call_args(node)
        return method, args, kwargs

    def check_binding(self, rule, args, kwargs, node):
        if not rule.params and not rule.varargs and not rule.vjps:
            return  # no signature known (non-differentiable, or a helper): arguments go through
        try:
            rule.signature().bind(*args, **dict(kwargs))
        except TypeError as exc:
            self.error(
                errors.UnsupportedSyntaxError,
                f"{describe(node.func)}: {exc} (the "
                f"derivative rule takes ({', '.join(rule.signature().parameters)}))",
                node,
            )

    def no_rule(self, obj, func, node):
        label = describe(func)
        base = (
            self.target_of(func.value)
            if isinstance(func, gast.Attribute)
            and isinstance(func.value, (gast.Name, gast.Attribute))
            else None
        )
        # the module the user found it in (scipy.special's ufuncs say they are numpy's)
        module = (
            base.module.__name__
            if isinstance(base, ModuleRef)
            else getattr(obj, "__module__", None) or type(obj).__module__
        )
        self.error(
            errors.NoRuleError,
            f"{label} ({module}) has no derivative rule. Register one "
            "with sourcegrad.ops.defvjp(name, function, spelling, vjp_for_each_input...) "
            "or rewrite the line with supported functions",
            node,
        )


def _jitted(obj) -> bool:
    """A function numba compiled (`@numba.njit`, `@numba.jit`: a Dispatcher), whose Python
    function (`py_func`) computes what its machine code does on numpy's values."""
    module = getattr(type(obj), "__module__", None)  # (a descriptor for some C types: 3.10)
    return (
        isinstance(module, str)
        and module.startswith("numba.")
        and isinstance(getattr(obj, "py_func", None), types.FunctionType)
    )
