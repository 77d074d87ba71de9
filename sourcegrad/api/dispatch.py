"""The fast path of a compiled gradient's call: one guard for the signature called last.

`fast_entry(args, fn, ...)` takes the arguments of a call that was just compiled (or
found in the cache) and the generated function for their signature, and returns a
function `entry` that computes the gradient when called with arguments of the same
signature (`analysis.signature_key` would give the same key) and hands any other call
to `fallback` (returns `MISS` without one). It returns None for signatures a few type
checks cannot confirm (lists, dicts, unusual objects): those calls always take the
general path. The other inputs say what to do with the generated function's result:
`finish` gives the gradients their inputs' types (None when the generated code already
returns them) or, per gradient, `converters` name the conversion each needs;
`still_valid`, when the code was built from global or closure values, tells whether
those are still bound; `code_of`, a (function, code object) pair, says the code was
built from that function's code: the guard checks `function.__code__ is code` (~15 ns),
so code replaced after compiling (as IPython's autoreload does) takes the general path.

Why generate it: building the signature key (a tuple of tuples, with each dtype's
name) and looking it up costs about as much as a small gradient itself (0.5-1.5 µs
on 0-d or 64-element inputs). The entry checks exactly what the key holds, written
out as straight-line comparisons against the constants of this signature.

Given the generated module's `source`, the entry *is* the generated function with the
guard as its first statement, so a call runs one Python frame, as a hand-written
gradient does (a second frame costs ~40 ns, a fifth of a gradient on Python floats):

    def dloss_dw(w, X, y=default_y):       # the user's parameters, defaults and all
        if not (w.__class__ is ndarray and w.shape == shape_w and w.dtype is dtype_w
                and X.__class__ is ...):
            return fallback(w, X, y)
        ...                                # the generated body, at its own line numbers
        return convert_0(dw)               # where the result needs converting

(the constants, `ndarray`, `shape_w`, ..., are read from its closure: `_Guard.define`).

The entry takes the function's parameters as the user wrote them (keywords and
defaults bind as Python binds them; a wrong call raises Python's own TypeError), so it
needs no `*args, **kwargs`, whose dict alone costs ~30 ns a call. It is compiled with
the generated module's file name and the body's line numbers, so a traceback or pdb in
it shows the generated lines. Without the source (or where the result cannot be
rewritten in place) the entry calls the generated function: one frame more.

A dtype equal to the signature's but a different object (a byte-swapped spelling)
fails `is` and takes the general path, which is slower, never wrong.

`float_entry` makes the entry of a signature holding float64 scalars (0-d float64 arrays,
`np.float64`) that runs the gradient compiled for them as Python floats, handing a call
whose float code raises or returns a value that is not finite to the signature's own entry
(`sourcegrad.api.as_floats` says when it is used).

Why one module: each entry it writes (the plain one, the one for Python floats) is built
from the same parts, the guard and its checks (`_entry_parts`), read beside them.
"""

from __future__ import annotations

import ast
import cmath
import math
import threading
import types

import numpy as np

MISS = object()  # what an entry returns for arguments of another signature


# A generated function longer than this is called from its entry, not compiled into it:
# inlining saves one Python call (~0.1 µs), and parsing and compiling a long function again
# costs ~1 ms per 100 lines of the first call (an unrolled per-example loop at batch 64,
# ~3000 lines: 0.3-0.7 s), while a function that long runs for hundreds of µs anyway.
INLINE_MAX_LINES = 400

# Entries are built one at a time: CPython 3.11 (seen on 3.11.7) keeps the AST constructor's
# recursion depth in state the threads share, and two threads parsing or compiling at once
# can raise "SystemError: AST constructor recursion depth mismatch" (seen with 8 threads
# calling one gradient for the first time: tests/compiler/api/test_api.py)
_BUILDING = threading.Lock()


def fast_entry(*args, **kwargs):
    """`_fast_entry`, one thread at a time (see `_BUILDING`)."""
    with _BUILDING:
        return _fast_entry(*args, **kwargs)


def _fast_entry(
    args,
    fn,
    finish=None,
    converters=None,
    still_valid=None,
    with_value=False,
    single=True,
    fallback=None,
    defaults=(),
    source=None,
    code_of=None,
    distinct=(),
):
    """A function computing `fn` for arguments of `args`' signature, `fallback(*args)` (or
    MISS) for others.

    `distinct`: pairs of argument positions whose arrays must not share memory (a
    parameter the function changes in place, and another array): a call where they may
    goes to `fallback`, which refuses it (`arguments.check_distinct`).

    `converters` (one per gradient: None or a function of it), where given, are applied
    in place of calling `finish`. `defaults` are the values of the last parameters when a
    call leaves them out (as a function's `__defaults__`). With `source`, the text of the
    module defining `fn`, fn's body is compiled into the entry itself (see the module
    docstring)."""
    parts = _entry_parts(fn, fn.__code__, args, code_of, still_valid, defaults)
    if parts is None:
        return None
    params, guard, checks, signature = parts
    if distinct:
        may_share = guard.add("may_share", np.may_share_memory)
        checks += [f"not {may_share}({params[i]}, {params[j]})" for i, j in distinct]
    arguments = ", ".join(params)
    miss = (
        guard.add("MISS", MISS)
        if fallback is None
        else f"{guard.add('fallback', fallback)}({arguments})"
    )
    convert = _Conversion(guard, finish, converters, with_value, single, arguments)
    entry = None
    if source is not None and source.count("\n") <= INLINE_MAX_LINES:
        entry = _inlined(fn, source, signature, checks, miss, convert, guard)
    if entry is None:
        gradient = guard.add("gradient", fn)
        result = f"{guard.prefix}result"
        text = (
            f"def {fn.__name__}({signature}):\n"
            f"    if {' and '.join(checks) or 'True'}:\n"
            f"        {result} = {gradient}({arguments})\n"
            f"        return {convert.text(result)}\n"
            f"    return {miss}\n"
        )
        entry = guard.define(ast.parse(text).body[0], {}, "<sourcegrad dispatch>")
    return entry


def _entry_parts(fn, code, args, code_of, still_valid, defaults):
    """(params, guard, checks, signature): what both kinds of entry start from (the
    function's parameters, its guard, the checks of `args`' signature and the entry's
    parameter list), or None where that signature cannot be guarded."""
    params = list(code.co_varnames[: code.co_argcount])
    if len(params) != len(args):
        return None
    guard = _Guard(_prefix(_taken(fn, code, params)))
    built = _guarded(params, args, guard, code_of, still_valid, defaults)
    if built is None:
        return None
    return (params, guard, *built)


def _taken(fn, code, params) -> set:
    """The names the generated function uses (a numba dispatcher has no __globals__)."""
    return (
        set(getattr(fn, "__globals__", ()))
        | set(code.co_names)
        | set(code.co_varnames)
        | set(params)
    )


def _guarded(params, args, guard, code_of, still_valid, defaults):
    """(the checks that arguments have `args`' signature, the entry's parameter list with
    the defaults), or None where an argument has no cheap check."""
    checks = []
    for name, value in zip(params, args):
        check = _check(name, value, guard)
        if check is None:
            return None
        checks.append(check)
    if code_of is not None:
        owner, built_from = code_of
        checks.append(f"{guard.add('owner', owner)}.__code__ is {guard.add('code', built_from)}")
    if still_valid is not None:
        checks.append(f"{guard.add('still_valid', still_valid)}()")
    first_default = len(params) - len(defaults)
    signature = ", ".join(
        p if i < first_default else f"{p}={guard.add(f'default_{p}', defaults[i - first_default])}"
        for i, p in enumerate(params)
    )
    return checks, signature


def float_entry(
    args,
    fn,
    positions,
    wrap,
    exact,
    to_float=False,
    still_valid=None,
    single=True,
    fallback=None,
    defaults=(),
    code_of=None,
    source=None,
    with_value=False,
    value_wrap=None,
):
    """The entry for `args`' signature that calls `fn`, the gradient compiled for the same
    arguments with those at `positions` (float64 scalars) given as Python floats
    (`sourcegrad.api.as_floats`), and returns its gradients wrapped (`wrap`: per gradient,
    the function making the float its input's type, or None for a float input), floats
    first where `to_float`; `with_value`: `fn` returns (value, gradients), and the value is
    returned wrapped by `value_wrap` (None: as it is). When `fn` raises an arithmetic error (ZeroDivisionError,
    OverflowError, a math domain ValueError) or a gradient is not finite, the call goes to
    `exact` (the entry of the code computing on the numpy scalars) with the arguments
    given; other signatures go to `fallback`. Returns None where the guard cannot be
    written (as `fast_entry`)::

        def dloss_dx_dy(x, y):
            if not (x.__class__ is ndarray and x.shape == () and ...):
                return fallback(x, y)
            try:
                g_0, g_1 = gradient(float(x), float(y))
            except (ArithmeticError, ValueError):
                return exact(x, y)
            if 0.0 * g_0 * g_1 == 0.0:      # each finite (inf * 0.0 and nan are nan)
                return wrap_0(g_0), wrap_1(g_1)
            return exact(x, y)

    With `source`, the text of the module defining `fn`, fn's body is compiled into the
    entry (as `fast_entry` does, one frame less), each return checking its gradients:

        def dloss_dx_dy(x, y):
            if not (...):
                return fallback(x, y)
            given_x, given_y = x, y
            try:
                x, y = float(x), float(y)
                ...                            # fn's body
                g_0, g_1 = dx, dy              # where fn returns dx, dy
                if 0.0 * g_0 * g_1 == 0.0:
                    return wrap_0(g_0), wrap_1(g_1)
                raise not_finite
            except (ArithmeticError, ValueError):
                pass
            return exact(given_x, given_y)     # (outside the handler: its own traceback)
    """
    # (long: half of it is the docstring, the two entries it writes)
    code = getattr(fn, "__code__", None) or fn.py_func.__code__
    parts = _entry_parts(fn, code, args, code_of, still_valid, defaults)
    if parts is None:
        return None
    params, guard, checks, signature = parts
    arguments = ", ".join(params)
    as_float = guard.add("float", float)
    given = ", ".join(f"{as_float}({p})" if i in positions else p for i, p in enumerate(params))
    target, result, numbers = _float_results(
        guard, as_float, wrap, to_float, single, with_value, value_wrap
    )
    finite = f"{' * '.join(['0.0', *numbers])} == 0.0"
    exact_call = f"{guard.add('exact', exact)}({arguments})"
    miss = f"{guard.add('fallback', fallback)}({arguments})"
    if source is not None and hasattr(fn, "__code__"):
        entry = _inlined_floats(
            fn, source, signature, checks, positions, target, finite, result, guard
        )
        if entry is not None:
            return entry
    text = (
        f"def {code.co_name}({signature}):\n"
        f"    if not ({' and '.join(checks) or 'True'}):\n"
        f"        return {miss}\n"
        "    try:\n"
        f"        {target} = {guard.add('gradient', fn)}({given})\n"
        "    except (ArithmeticError, ValueError):\n"
        f"        return {exact_call}\n"
        f"    if {finite}:\n"
        f"        return {result}\n"
        f"    return {exact_call}\n"
    )
    return guard.define(ast.parse(text).body[0], {}, "<sourcegrad dispatch>")


def _float_results(guard, as_float, wrap, to_float, single, with_value, value_wrap):
    """(what the gradient returns is unpacked into, the entry's return, the numbers checked
    finite) for `float_entry`."""
    grads = [f"{guard.prefix}g_{k}" for k in range(len(wrap))]
    returned = []
    for k, (g, w) in enumerate(zip(grads, wrap)):
        item = f"{as_float}({g})" if to_float else g
        returned.append(item if w is None else f"{guard.add(f'wrap_{k}', w)}({item})")
    target = ", ".join(grads) + ("" if single else ",")
    result = ", ".join(returned) + ("," if not single and len(returned) == 1 else "")
    if not with_value:
        return target, result, grads
    value = f"{guard.prefix}value"
    wrapped = f"{guard.add('wrap_value', value_wrap)}({value})" if value_wrap else value
    return f"{value}, ({target})", f"{wrapped}, ({result})", [value, *grads]


def _inlined_floats(fn, source, signature, checks, positions, target, finite, result, guard):
    """`float_entry` with fn's body inlined (see there), or None where its definition is not
    found or holds a nested scope."""
    function = _definition(fn, source)
    if function is None:
        return None
    params = [a.arg for a in function.args.args]
    given = [f"{guard.prefix}given_{p}" for p in params]
    converted = [p for i, p in enumerate(params) if i in positions]
    as_float = guard.add("float", float)
    # (raised as a class: an instance raised again would keep every traceback it was in)
    not_finite = guard.add("not_finite", FloatingPointError)
    header = ast.parse(
        f"def {function.name}({signature}):\n"
        f"    if not ({' and '.join(checks) or 'True'}):\n"
        f"        return {guard.prefix}fallback({', '.join(params)})\n"
        f"    {', '.join(given)}, = {', '.join(params)},\n"
        "    try:\n"
        f"        {', '.join(converted)}, = {', '.join(f'{as_float}({p})' for p in converted)},\n"
        "    except (ArithmeticError, ValueError):\n"
        "        pass\n"
        f"    return {guard.prefix}exact({', '.join(given)})\n"
    ).body[0]
    assert isinstance(header, ast.FunctionDef)
    for node in ast.walk(header):  # the guard sits on the def line: the body keeps its lines
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = function.lineno
    checked = f"{target} = _\nif {finite}:\n    return {result}\nraise {not_finite}\n"
    if any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for stmt in function.body
        for n in ast.walk(stmt)
    ):
        return None  # (a nested scope's returns are not the function's)
    body = []
    for stmt in function.body:
        made = _ChecksReturns(checked).visit(stmt)
        body.extend(made if isinstance(made, list) else [made])
    try_ = header.body[2]
    assert isinstance(try_, ast.Try)
    try_.body.extend(body)
    _LibraryCalls(guard, fn.__globals__).visit(header)
    return guard.define(header, fn.__globals__, fn.__code__.co_filename)


class _ChecksReturns(ast.NodeTransformer):
    """`return E` as `g_0, g_1 = E`, then the gradients returned wrapped where finite, else
    `not_finite` raised (`_inlined_floats`)."""

    def __init__(self, template):
        self.template = template

    def visit_Return(self, node):
        statements = ast.parse(self.template).body
        assign = statements[0]
        assert isinstance(assign, ast.Assign)
        assign.value = node.value or ast.Constant(None)
        for stmt in statements:
            for part in ast.walk(stmt):
                if hasattr(part, "lineno"):
                    part.lineno = part.end_lineno = node.lineno
        return statements


def _definition(fn, source):
    """The definition of the generated function `fn` in `source` (its module's text), or
    None where it is not found (or is decorated)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name == fn.__name__
        and node.lineno == fn.__code__.co_firstlineno
    ]
    if len(found) != 1 or found[0].decorator_list:
        return None
    return found[0]


class _Guard:
    """The constants an entry reads, under names nothing in the generated code uses."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.constants: dict = {}

    def add(self, name, value) -> str:
        name = f"{self.prefix}{name}"
        self.constants[name] = value
        return name

    def define(self, function: ast.FunctionDef, global_names: dict, filename: str):
        """The function `function` defines, reading these constants from its closure and
        any other name from `global_names`.

        A closure's cell is read faster than a global: the two type checks of a gradient
        on Python floats cost ~17 ns as closure reads, ~24 ns as globals. So the function
        is defined inside a maker whose parameters are the constants:

            def _guard_make(_guard_type_x, _guard_type_y, _guard_fallback):
                def dloss_dx(x, y): ...
                return dloss_dx

        (The generated module's own names, `np`, `math`, stay globals: as cells they were
        no faster, measured; the library functions an inlined entry calls are constants
        here, `_LibraryCalls`.)"""
        maker = ast.parse(
            f"def {self.prefix}make({', '.join(self.constants)}):\n    return {function.name}"
        ).body[0]
        assert isinstance(maker, ast.FunctionDef)
        for node in ast.walk(maker):  # on the def's line: the body keeps its line numbers
            if isinstance(node, (ast.expr, ast.stmt, ast.arg)):
                node.lineno = node.end_lineno = function.lineno
        maker.body.insert(0, function)
        module = ast.fix_missing_locations(ast.Module([maker], type_ignores=[]))
        namespace = dict(global_names)
        exec(compile(module, filename, "exec"), namespace)
        made = namespace[maker.name](**self.constants)
        made.__qualname__ = function.name
        return made


def _prefix(taken) -> str:
    prefix = "_guard_"
    while any(n.startswith(prefix) for n in taken):
        prefix = "_" + prefix
    return prefix


def _check(name, value, guard):
    """The test that `name` has `value`'s part of the signature key, or None if none is cheap.

    The type is read as `name.__class__`, which costs ~6 ns less than calling `type` (a
    third of a type check). The two differ only for an object whose class says it is
    another's (a proxy, a mock): such an object is taken for what it says it is, as
    `isinstance` takes it, and the gradient is computed on it (or its own operations fail).
    """
    t = type(value)
    type_of = f"{name}.__class__"
    type_ = guard.add(f"type_{name}", t)
    if t is float:
        return f"{type_of} is {type_}"
    if t is np.ndarray or hasattr(value, "__cuda_array_interface__"):
        shape = guard.add(f"shape_{name}", value.shape)
        dtype = guard.add(f"dtype_{name}", value.dtype)
        return f"{type_of} is {type_} and {name}.shape == {shape} and {name}.dtype is {dtype}"
    if isinstance(value, np.generic):
        return f"{type_of} is {type_}"
    if t in (bool, type(None)):
        return f"{name} is {guard.add(f'value_{name}', value)}"
    if t in (int, str) and _hashable(value):
        return f"{type_of} is {type_} and {name} == {guard.add(f'value_{name}', value)}"
    if t is tuple and _hashable(value):
        # (`==` of tuples would compare an array item given later elementwise, and raise)
        same = guard.add("same_static", same_static)
        return f"{type_of} is {type_} and {same}({name}, {guard.add(f'value_{name}', value)})"
    return None


def same_static(given, value) -> bool:
    """Whether `given` is the static value `value` (a tuple of numbers, strings, None and
    such tuples): item by item, of the same types, so an array item is never compared."""
    if type(given) is not type(value):
        return False
    if type(value) is tuple:
        return len(given) == len(value) and all(map(same_static, given, value))
    return given == value


class _Conversion:
    """What the entry returns for the generated function's result: the result itself, the
    result with per-gradient conversions applied, or `finish` of it."""

    def __init__(self, guard, finish, converters, with_value, single, arguments):
        self.single, self.with_value = single, with_value
        self.arguments = f"({arguments},)"
        self.converters = None
        if finish is not None and converters is not None:
            self.converters = [
                None if c is None else guard.add(f"convert_{k}", c)
                for k, c in enumerate(converters)
            ]
        elif finish is not None:
            self.finish = guard.add("finish", finish)
            # (the inlined body may rebind a parameter: a local keeps the arguments given)
            self.kept = f"{guard.prefix}arguments"
        self.plain = finish is None

    def keep(self) -> str:
        """The statement keeping the arguments for `finish` before the inlined body, if any."""
        needed = not self.plain and self.converters is None
        return f"    {self.kept} = {self.arguments}\n" if needed else ""

    def text(self, result: str) -> str:
        """The returned expression for the result held by the variable `result` (the
        non-inlined entry), its items spelled out (`result[1][0]`) where converted."""
        node = ast.parse(result, mode="eval").body
        if self.converters is not None:
            grads = _item(node, 1) if self.with_value else node
            if not self.single:
                grads = ast.Tuple(
                    [_item(grads, k) for k in range(len(self.converters))], ast.Load()
                )
            node = ast.Tuple([_item(node, 0), grads], ast.Load()) if self.with_value else grads
        elif self.with_value and not self.plain:
            node = ast.Tuple([_item(node, 0), _item(node, 1)], ast.Load())
        return ast.unparse(self.node(node, self.arguments))

    def node(self, result, arguments=None):
        """The returned expression for a result given as an AST, or None when the
        conversions cannot be applied to its form (not a tuple of the gradients)."""
        if self.plain:
            return result
        if self.converters is None:
            given = ast.parse(arguments or self.kept, mode="eval").body
            if not self.with_value:
                return _call(self.finish, result, given)
            # (value, finish(grads, args)) of a result that is a (value, grads) pair
            pair = _pair(result)
            if pair is None:
                return None
            value, grads = pair
            return ast.Tuple([value, _call(self.finish, grads, given)], ast.Load())
        grads = result
        if self.with_value:
            pair = _pair(result)
            if pair is None:
                return None
            value, grads = pair
        if self.single:
            converted = _apply(self.converters[0], grads)
        elif isinstance(grads, ast.Tuple) and len(grads.elts) == len(self.converters):
            converted = ast.Tuple(
                [_apply(c, g) for c, g in zip(self.converters, grads.elts)], ast.Load()
            )
        else:
            return None
        return ast.Tuple([value, converted], ast.Load()) if self.with_value else converted


def _item(node, k):
    return ast.Subscript(node, ast.Constant(k), ast.Load())


def _pair(node):
    if isinstance(node, ast.Tuple) and len(node.elts) == 2:
        return node.elts
    return None


def _call(func, *args):
    return ast.Call(ast.Name(func, ast.Load()), list(args), [])


def _apply(converter, node):
    return node if converter is None else _call(converter, node)


def _inlined(fn, source, signature, checks, miss, convert, guard):
    """The generated function `fn`, defined in `source`, with the guard as its first
    statement and its returns converted; None where its definition or a return's form
    is not what that needs."""
    function = _definition(fn, source)
    if function is None:
        return None
    for node in ast.walk(function):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            and node is not function
        ):
            return None  # a nested scope's returns are not the function's
        if isinstance(node, ast.Return):
            value = convert.node(node.value or ast.Constant(None))
            if value is None:
                return None
            node.value = value
    header = ast.parse(
        f"def {function.name}({signature}):\n"
        f"    if not ({' and '.join(checks) or 'True'}):\n"
        f"        return {miss}\n" + convert.keep()
    ).body[0]
    for node in ast.walk(header):  # the guard sits on the def line: the body keeps its lines
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = function.lineno
    header.body.extend(function.body)
    _LibraryCalls(guard, fn.__globals__).visit(header)
    return guard.define(header, fn.__globals__, fn.__code__.co_filename)


# The modules whose functions an inlined entry calls as constants (`_LibraryCalls`), and
# the kinds of function it binds: those written in C (numpy's dispatcher of np.sum & co.
# included), not a module's Python functions, which a test may patch
_LIBRARIES = (math, cmath, np)
_LIBRARY_FUNCTIONS = (types.BuiltinFunctionType, np.ufunc, type(np.sum))


class _LibraryCalls(ast.NodeTransformer):
    """`math.sin(x)` in an inlined entry as `_guard_math_sin(x)`: the function read once,
    when the entry is made, from its closure (~15 ns less a call than a global's attribute:
    four such calls are a sixth of a gradient on Python floats). Only calls of a function of
    math, cmath or numpy written in C (`_LIBRARY_FUNCTIONS`), read through a global the generated
    module binds to that module: the generated code calls the library's function, which a
    program does not rebind (a program patching `np.sin` after compiling keeps numpy's)."""

    def __init__(self, guard, global_names):
        self.guard = guard
        self.modules = {
            name: value
            for name, value in global_names.items()
            if any(value is library for library in _LIBRARIES)
        }
        self.bound: dict = {}

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.modules
        ):
            value = getattr(self.modules[func.value.id], func.attr, None)
            if isinstance(value, _LIBRARY_FUNCTIONS):
                key = (func.value.id, func.attr)
                if key not in self.bound:
                    self.bound[key] = self.guard.add(f"{func.value.id}_{func.attr}", value)
                node.func = ast.copy_location(ast.Name(self.bound[key], ast.Load()), func)
        return node


def _hashable(value) -> bool:
    """Static values are compared with ==: only for the ones the key can hold (hashable)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


__all__ = ["fast_entry", "float_entry", "MISS", "same_static"]
