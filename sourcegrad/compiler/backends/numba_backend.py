"""The numba backend: the generated numpy module, compiled with `numba.njit`.

`load(source, name, free, names, args, label)` takes the numpy backend's generated module
text (`codegen.generate_module`), the free values it reads, its function names, the
arguments of the signature it was generated for and the name of what it differentiates,
and returns `(source, module)`: the text that runs and the loaded module. Normally that is
the numba variant (`numba_source`) with each function an `njit` dispatcher already
compiled for the arguments' types; where numba cannot type the code (an unsupported
numpy call, a `sourcegrad.runtime` helper, a saved-value stack holding both numbers and
arrays) or is not installed, it is the numpy module as `codegen.load` makes it, after one
`JitFallbackWarning` naming numba's complaint and the generated and user lines it is
about. It never fails where the numpy backend would not.

The numba variant is the numpy text with what numba needs changed, and nothing else (so
`Gradient.source` and `sourcegrad show --backend numba` print exactly what is compiled):
`import numba` and an `@numba.njit(...)` line on each function; `reversed(range(...))`
as a counting-down `range` (numba has no `reversed`); a ufunc's `out=` keyword as its
positional output (numba takes no keywords for ufuncs); reductions over a literal axis
that numba lacks (`keepdims=`, `max`/`min`/`mean`/`var` over an axis, the runtime's `max_grad`
and `reduced_count`) as `np.expand_dims`, `x.shape[axis]` and small helper functions
written into the module (`max_along_axis`, ...: 2-d arrays, numba refuses another ndim
there and the numpy code runs), and sums over an axis as the helper `sum_along_axis`
(loops for a 2-d array: numba's own sum over an axis compiles ~5x slower); the runtime's
`unindex`, `zero_at` and `setitem` at a loop counter as `unindex_at`, `zero_at_basic` and
`setitem_basic`; a list appended to in a loop and stacked
after as one appended in place (`numba_lists`); indexing by a boolean mask of more than
one dimension as helpers (`numba_masks`: numba's own takes 1-d masks only); the
saved-value stack as one typed list per saved variable (`numba_stacks`); a loop's zeroing
of an adjoint nothing reads again dropped, and parts' adjoints added into one array in place
(`numba_loop_writes`); runs of elementwise statements fused into one pass over
memory (`numba_fusion`); the other calls of sin, exp, tanh, ... as glibc's vector math's
(`numba_vector_calls`). Arithmetic follows numpy (`error_model="numpy"`: a float
divided by zero is inf, as for the numpy scalars the numpy code computes with).

numba's disk cache: numba caches a function's machine code in a directory found from the
*file* its source is in (keyed by the file's content), and trusts what it finds there (its
index is a pickle). So when sourcegrad's disk cache is on (`sourcegrad.cache`) the numba
variant is written to `<cache directory>/numba/` (a private directory: see
`cache.write_private_file`), and compiled with `cache=True` only when the directory numba
will cache in (`__pycache__` beside the file, or the one numba derives from the file's
path under `NUMBA_CACHE_DIR`: `_numba_directory`) is one the cache trusts
(`cache.untrusted_because`: no symlink, nobody else can write it or swap it); elsewhere,
after one `CacheWarning` naming the directory and why, it is compiled without numba's disk
cache, and its source shown without `cache=True`. The module runs the text this process
made, never the file read back. The file's name holds the digest of the text and of
sourcegrad's source (whose helpers numba compiles into the machine code). When the code
reads free values (the differentiated function's globals and closure values, which numba
freezes into the machine code as constants), or when the cache is off, nothing is written
and `cache=False`: a cached compilation would keep the values it was compiled with.

`del` lines (large arrays freed early) are left out: numba has none, and frees an array
once its variable is dead.

A VJP's forward and backward are both compiled before the forward runs: the backward for
the types the forward returns (its residuals) and a cotangent of the value's type; a JVP
for tangents of their primals' types. A call with other types is compiled then, and where
numba refuses it (`refused`) the numpy code runs it after one warning (`numpy_functions`).

Why one module: the text rewrites, the compile with its fallback and the disk-cache rules
are one answer to "what numba runs for this gradient", read together; the parts that stand
alone (fusion, the stacks, libmvec) are modules of their own.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
import sys
import textwrap
import types
import warnings

import numpy as np

from ... import cache, errors
from ..emit.codegen import FREED_NOTE
from ..emit.codegen import load as load_numpy
from . import (
    numba_fusion,
    numba_lists,
    numba_loop_writes,
    numba_masks,
    numba_stacks,
    numba_vector_calls,
    numba_vector_math,
)
from .numba_stacks import segment  # (ast.get_source_segment splits the text at each call)

OPTIONS = 'error_model="numpy"'


def available() -> bool:
    """Whether numba can be imported (it is never imported at sourcegrad's import time)."""
    return importlib.util.find_spec("numba") is not None


def load(source: str, name: str, free: dict, names, args, label: str, tangents=()):
    """(the source that runs, its loaded module): see the module docstring. `tangents`: the
    arguments a JVP function takes after `args` (stand-ins of their types)."""
    if not available():
        _warn_once(
            "missing",
            "numba is not installed (pip install 'sourcegrad[numba]'): gradients run as numpy code",
        )
        return source, load_numpy(source, name, free)
    args = tuple(args) + tuple(tangents)
    cached = not free and cache.directory() is not None
    plain = numba_source(source, cached)
    fused = _fused(plain, names[0], args)
    reason = numba_fusion.numpy_code_reason(fused, names[0], _kinds(fused, names[0], args))
    if reason is not None:  # (numba has nothing to win here: said in the source, no warning)
        return _noted(source, f"numba: the numpy code runs: {reason}"), load_numpy(
            source, name, free
        )
    refused = _REFUSED.get(_refusal_key(plain, args))
    if refused is not None:  # (numba takes seconds to refuse: and it was said once)
        return source, load_numpy(source, name, free)
    numba_vector_math.define_ufuncs()  # (before numba types a call of one: see there)
    for jit_source in dict.fromkeys((fused, plain)):
        try:
            ran, module = _load_jitted(jit_source, name, free, cached)
            _compile(module, names, _types_of(args))
            module.numpy_code = (source, name, free)  # (what numpy_functions loads)
            return ran, module
        except Exception as exc:  # any failure to type or compile: the numpy code runs
            failure = exc
            if _failing_line(exc, jit_source) in plain.splitlines():
                break  # (the plain code has the line numba refused: it would refuse it too)
    message = _fallback_message(failure, label, jit_source)
    if len(_REFUSED) >= 256:  # (bounded: one entry per program and argument types)
        _REFUSED.clear()
    _REFUSED[_refusal_key(plain, args)] = message
    warnings.warn(message, errors.JitFallbackWarning, stacklevel=5)
    return source, load_numpy(source, name, free)


def _compile(module, names, types):
    """Compile the module's functions for the arguments' types: a VJP's backward (its second
    function) for what its forward returns, the residuals and a cotangent of the value's
    type, so that a failure shows before the forward runs."""
    first = getattr(module, names[0])
    first.compile(types)
    if len(names) == 2:
        value, residuals = first.overloads[types].signature.return_type
        getattr(module, names[1]).compile(tuple(residuals) + (value,))


def refused(exc, function, args) -> bool:
    """Whether `exc`, raised by `function(*args)`, is numba refusing to compile it for the
    arguments' types (other than those `load` compiled it for: compiled at the call, or
    refused as a NumbaError, a NotImplementedError for float16, ...), not an error of the
    code's own (which numba raises as the numpy code would)."""
    numba = sys.modules.get("numba")
    if numba is None or not isinstance(function, numba.core.dispatcher.Dispatcher):
        return False
    if isinstance(exc, numba.core.errors.NumbaError):
        return True
    try:
        types = tuple(function.typeof_pyval(a) for a in args)
    except Exception:  # (an argument numba has no type for)
        return True
    return types not in function.overloads  # (the call failed compiling for them)


def numpy_functions(module, functions, exc, label):
    """The numpy code's functions named as `functions` (numba's) of a module `load`
    compiled, after one `JitFallbackWarning` naming `exc`, numba's refusal of a call of
    them with other argument types than it compiled them for (a cotangent or tangent of
    another type than the value or primal): the numpy code runs them."""
    loaded = module.__dict__.get("numpy_module")
    if loaded is None:
        loaded = module.numpy_module = load_numpy(*module.numpy_code)
        warnings.warn(_fallback_message(exc, label, None), errors.JitFallbackWarning, stacklevel=3)
    return tuple(getattr(loaded, f.__name__) for f in functions)


# (the numba text, its argument types) -> why numba refused it, in this process
_REFUSED: dict = {}


def _refusal_key(text, args):
    return text, tuple(_kind(a) for a in args)


def _kind(value):
    """What numba types an argument by, without importing numba for it."""
    if isinstance(value, np.ndarray):
        return (
            "array",
            value.dtype.str,
            value.ndim,
            value.flags.c_contiguous,
            value.flags.f_contiguous,
            value.flags.writeable,
        )
    return type(value).__name__


def _kinds(source, function, args):
    """{parameter: numba_fusion.kind_of(argument)}, or None when they do not pair up."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    params = [a.arg for a in fn.args.args]
    if len(params) != len(args):
        return None
    return {p: numba_fusion.kind_of(a) for p, a in zip(params, args)}


def _fused(source, function, args):
    """The text with runs of elementwise statements fused (numba_fusion), given what the
    arguments are, and the transcendental ufuncs left as glibc's vector math's calls
    (numba_vector_calls)."""
    kinds = _kinds(source, function, args)
    if kinds is not None:
        source = numba_fusion.fuse(source, function, kinds, numba_vector_math.functions())
    return numba_vector_calls.vector_calls(source, numba_vector_math.ufuncs())


def _noted(source, note):
    """The numpy text with a comment line saying why it runs, after its header comment."""
    lines = source.splitlines(keepends=True)
    header = 0
    while header < len(lines) and lines[header].startswith("#"):
        header += 1
    wrapped = textwrap.wrap(note, 88, initial_indent="# ", subsequent_indent="#   ")
    return "".join(lines[:header] + [line + "\n" for line in wrapped] + lines[header:])


def _types_of(args):
    import numba

    types = []
    for i, a in enumerate(args):
        try:
            types.append(numba.typeof(a))
        except ValueError:
            raise _Untypable(
                f"argument {i} is a {type(a).__name__}, which numba cannot type"
            ) from None
    return tuple(types)


class _Untypable(Exception):
    """An argument numba has no type for."""


# -- the numba variant of the source ------------------------------------------------------------


def numba_source(source: str, cached: bool = False) -> str:
    """The numpy module text with numba's needs met (see the module docstring)."""
    source = _without_dels(source)
    # (a helper's name the code has for another value: reductions over an axis left as they are)
    helpers_free = not any(re.search(rf"\b{name}\b", source) for name in _HELPER_NAMES)
    # (a VJP's forward hands its stacks to its backward: numba's own lists cross unconverted)
    pair = sum(isinstance(n, ast.FunctionDef) for n in ast.parse(source).body) > 1
    if helpers_free:  # (before the stack is split: it drops the pushes of lists it rewrites)
        source = numba_lists.appended_in_place(source, numba_stacks.stack_name(source))
        source = numba_masks.masked_indexing(source)
    source = numba_stacks.split_stack(source, typed=pair)
    source = numba_loop_writes.without_unread_zeroing(source)
    source = numba_loop_writes.parts_added_in_place(source)
    while True:  # innermost calls first: an edit's text holds the edits inside it
        tree = ast.parse(source)
        counters = _range_counters(tree)
        lines = source.splitlines(keepends=True)
        edits = []  # (start (line, col), end (line, col), text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                edit = (
                    _reversed_range(node, source)
                    or _positional_out(node, source)
                    or (_axis_reduction(node, source) if helpers_free else None)
                    or (_runtime_call(node, source, counters) if helpers_free else None)
                )
                if edit is not None:
                    edits.append(edit)
        innermost = [
            e for e in edits if not any(o is not e and e[0] <= o[0] and o[1] <= e[1] for o in edits)
        ]
        for start, end, text in sorted(innermost, reverse=True):
            numba_stacks.replace_span(lines, start, end, text)
        source = "".join(lines)
        if not innermost:
            break
    decorator = f"@numba.njit(cache=True, {OPTIONS})" if cached else f"@numba.njit({OPTIONS})"
    for node in sorted(
        (n for n in tree.body if isinstance(n, ast.FunctionDef)),
        key=lambda n: n.lineno,
        reverse=True,
    ):
        lines.insert(node.lineno - 1, decorator + "\n")
    helpers = [
        text.replace("@numba.njit\n", decorator + "\n")
        for text in _HELPERS.values()
        if any(  # (a helper text may define more than one function the code calls)
            re.search(rf"\b{name}\(", source) for name in re.findall(r"^def (\w+)\(", text, re.M)
        )
    ]
    if helpers:  # (before the first function: defined when the functions are compiled)
        first = min(n.lineno for n in tree.body if isinstance(n, ast.FunctionDef))
        lines.insert(first - 1, "\n\n".join(helpers) + "\n\n")
    header = 0  # (after the header's comment lines)
    while header < len(lines) and lines[header].startswith("#"):
        header += 1
    if helpers and not re.search(r"^import numpy as np$", source, re.M):
        lines.insert(header, "import numpy as np\n")  # (the helpers': the code needs none)
    lines.insert(header, "import numba\n")
    return "".join(lines)


def _without_dels(source: str) -> str:
    """The text without its `del` lines (numba has no `del`, and frees an array once its
    variable is dead): those that free large arrays early in the numpy code, with the note
    printed above one too long to carry it."""
    lines = source.splitlines(keepends=True)
    dels = {n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Delete)}
    notes = {i - 1 for i in dels if lines[i - 2].strip() == f"# {FREED_NOTE}"}
    return "".join(line for i, line in enumerate(lines, 1) if i not in dels | notes)


def _reversed_range(node, source):
    """`reversed(range(...))` as the `range` that counts down through the same numbers."""
    if not (
        isinstance(node.func, ast.Name)
        and node.func.id == "reversed"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Call)
        and isinstance(node.args[0].func, ast.Name)
        and node.args[0].func.id == "range"
        and not node.args[0].keywords
        and 1 <= len(node.args[0].args) <= 3
    ):
        return None
    parts = [segment(source, a) for a in node.args[0].args]
    if len(parts) == 1:
        text = f"range({parts[0]} - 1, -1, -1)"
    elif len(parts) == 2:
        text = f"range({parts[1]} - 1, {parts[0]} - 1, -1)"
    else:
        step = node.args[0].args[2]
        if not (isinstance(step, ast.Constant) and type(step.value) is int and step.value > 0):
            return None  # (left as it is: numba refuses it, and the numpy code runs)
        start, stop, s = parts[0], parts[1], step.value
        # the last number range(start, stop, s) gives, and down by s to start
        text = f"range({start} + ({stop} - {start} - 1) // {s} * {s}, {start} - {s}, -{s})"
    return numba_stacks.span(node) + (text,)


def _positional_out(node, source):
    """`np.multiply(a, b, out=c)` as `np.multiply(a, b, c)` for a numpy ufunc."""
    if not (
        isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "np"
        and len(node.keywords) == 1
        and node.keywords[0].arg == "out"
    ):
        return None
    ufunc = getattr(np, node.func.attr, None)
    if not isinstance(ufunc, np.ufunc) or len(node.args) != ufunc.nin:
        return None
    parts = [segment(source, a) for a in node.args + [node.keywords[0].value]]
    return numba_stacks.span(node) + (f"{segment(source, node.func)}({', '.join(parts)})",)


# reductions over an axis numba does not compile, as what it does: numba's sum takes an axis
# but no keepdims (np.expand_dims puts the axis back), its max, min and mean no axis at all;
# its sum over an axis compiles slowly, so sums are helper loops too
_REDUCTIONS = {"sum", "max", "min", "amax", "amin", "mean", "var"}
_HELPERS = {
    f"{r}_along_axis": f'''@numba.njit
def {r}_along_axis(x, axis):
    """x.{r}(axis=axis) of a 2-d array x (numba's {r} takes no axis), in loops (a NaN wins,
    as in numpy)."""
    rows, columns = x.shape  # (numba refuses another ndim here: the numpy code runs)
    if not -2 <= axis < 2:
        raise ValueError("axis out of range")
    along = axis % 2 == 0  # (down the columns)
    n, length = (columns, rows) if along else (rows, columns)
    if length == 0:
        raise ValueError("zero-size array to reduction operation which has no identity")
    if n == 0:
        return np.empty(0, x.dtype)
    out = x[0].copy() if along else x[:, 0].copy()
    for i in range(rows):
        for j in range(columns):
            k = j if along else i
            v = x[i, j]
            if v {op} out[k] or v != v:
                out[k] = v
    return out
'''
    for r, op in (("max", ">"), ("min", "<"))
}
# numba's own sum over an axis takes seconds to compile (~10 s for a float64 matrix, against
# ~1.5 s for these loops, on top of numba's ~2 s for a first function); other ndims use it
_HELPERS["sum_along_axis"] = '''@numba.njit
def sum_along_axis(x, axis):
    """x.sum(axis=axis), in loops for a 2-d array x (of numpy's dtype: a bool or int32
    array sums to int64)."""
    if x.ndim != 2:  # (numba compiles one side only: x.ndim is known)
        return x.sum(axis=axis)
    rows, columns = x.shape
    if not -2 <= axis < 2:
        raise ValueError("axis out of range")
    zero = np.zeros(1, x.dtype)[:0].sum()
    if axis % 2 == 0:
        out = np.full(columns, zero)
        for i in range(rows):
            for j in range(columns):
                out[j] += x[i, j]
    else:
        out = np.full(rows, zero)
        for i in range(rows):
            out[i] = x[i].sum()
    return out
'''
_HELPERS["var_along_axis"] = '''@numba.njit
def var_along_axis(x, axis):
    """x.var(axis=axis) of a 2-d array x (numba's var takes no axis), as numpy computes it:
    the mean of the squares of the deviations from the mean, in loops."""
    rows, columns = x.shape  # (numba refuses another ndim here: the numpy code runs)
    if not -2 <= axis < 2:
        raise ValueError("axis out of range")
    along = axis % 2 == 0  # (down the columns)
    n = rows if along else columns
    mean = np.zeros(columns if along else rows)
    for i in range(rows):
        for j in range(columns):
            mean[j if along else i] += x[i, j]
    mean /= n
    out = np.zeros(columns if along else rows)
    for i in range(rows):
        for j in range(columns):
            k = j if along else i
            d = x[i, j] - mean[k]
            out[k] += d * d
    return out / n
'''
_HELPERS["max_grad_along_axis"] = '''@numba.njit
def max_grad_along_axis(g, ans, x, axis):
    """runtime.max_grad for a 2-d x: g * hits / hits.sum(axis), hits = (x == ans), ans
    and g of the reduced shape (axis kept or not)."""
    rows, columns = x.shape  # (numba refuses another ndim here: the numpy code runs)
    if not -2 <= axis < 2:
        raise ValueError("axis out of range")
    along = axis % 2 == 0  # (down the columns)
    gs, extremes = g.ravel(), ans.ravel()
    n = columns if along else rows
    if gs.size not in (1, n) or extremes.size != n:
        raise ValueError("operands could not be broadcast together")
    ties = np.zeros(n)
    for i in range(rows):
        for j in range(columns):
            k = j if along else i
            ties[k] += x[i, j] == extremes[k]
    out = np.empty(x.shape)
    for i in range(rows):
        for j in range(columns):
            k = j if along else i
            out[i, j] = gs[k if gs.size > 1 else 0] * (x[i, j] == extremes[k]) / ties[k]
    return out
'''

_HELPERS["max_grad_all"] = '''@numba.njit
def max_grad_all(g, ans, x):
    """runtime.max_grad over every element (axis None, keepdims False): g, a number, shared
    evenly among the elements equal to ans."""
    flat = x.ravel()
    ties = 0
    for v in flat:
        ties += v == ans
    out = np.zeros(flat.size)
    for k in range(flat.size):
        if flat[k] == ans:
            out[k] = g / ties
    return out.reshape(x.shape)
'''

_HELPERS["previous_value"] = numba_stacks.PREVIOUS_VALUE
_HELPERS["stack_appended"] = numba_lists.STACK_APPENDED
_HELPERS["masked_elements"] = numba_masks.MASKED
_HELPERS["unstack_appended"] = numba_lists.UNSTACK_APPENDED

_HELPERS["write_part"] = numba_loop_writes.PARTS

_HELPERS["zero_at_basic"] = '''@numba.njit
def zero_at_basic(g, i):
    """runtime.zero_at at a basic index i (ints, slices): a copy of g with zeros at g[i]."""
    out = g.copy()
    out[i] = 0.0
    return out
'''


# every function the helpers define (a name the code has for another value: none is written)
_HELPER_NAMES = frozenset(
    name for text in _HELPERS.values() for name in re.findall(r"^def (\w+)\(", text, re.M)
)


def _axis_reduction(node, source):
    """`x.max(axis=1, keepdims=True)` (or `np.max(x, ...)`; sum, min, mean, var) in what numba
    compiles, or compiles faster: `np.expand_dims(max_along_axis(x, 1), 1)`; the mean as
    the sum over the axis divided by its length. Only with a literal int axis and keepdims
    (else left: numba refuses the others, and compiles a sum as it is)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in _REDUCTIONS:
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "np" and len(node.args) == 1:
        array = node.args[0]
    elif not node.args and not (isinstance(func.value, ast.Name) and func.value.id == "np"):
        array = func.value
    else:
        return None
    options = {k.arg: k.value for k in node.keywords}
    axis, keepdims = options.pop("axis", None), options.pop("keepdims", None)
    if (
        options
        or not (axis is not None and _int_constant(axis))
        or not (keepdims is None or isinstance(keepdims, ast.Constant))
        or keepdims is not None
        and type(keepdims.value) is not bool
    ):
        return None
    reduction = func.attr.removeprefix("a")  # (amax is max)
    kept = keepdims is not None and keepdims.value
    x, a = segment(source, array), ast.literal_eval(axis)
    if reduction == "mean":
        if not isinstance(array, ast.Name):
            return None  # (read twice below: only a name)
        text = f"(sum_along_axis({x}, {a}) / {x}.shape[{a}])"
    else:
        text = f"{reduction}_along_axis({x}, {a})"
    return numba_stacks.span(node) + ((f"np.expand_dims({text}, {a})" if kept else text),)


def _runtime_call(node, source, counters=frozenset()):
    """The runtime helpers over one literal int axis or at one int index, as what numba
    compiles: `max_grad(g, ans, x, 1, True)` (a max's or min's adjoint) as
    `max_grad_along_axis(g, ans, x, 1)` (over every element, `max_grad(g, ans, x, None,
    False)`, as `max_grad_all(g, ans, x)`), `reduced_count(x, 1)` as `x.shape[1]`,
    `unindex(g, x, i)` (the adjoint of `x[i]`) as `unindex_at(g, x, i)` where i is a
    literal int or the counter of `range` loops (`counters`: an int, never an array of
    indices, which unindex adds up where they repeat), and `zero_at(g, i)` (the adjoint of a
    write at i, for the array written) and `setitem(x, i, v)` (a copy written at i) at such
    an index as `zero_at_basic(g, i)` and `setitem_basic(x, i, v)`."""
    if not (
        isinstance(node.func, ast.Name)
        and node.func.id in ("max_grad", "reduced_count", "unindex", "zero_at", "setitem")
        and re.search(rf"^from sourcegrad\.runtime import .*\b{node.func.id}\b", source, re.M)
        and not node.keywords
        and len(node.args) >= 2
    ):
        return None
    if node.func.id == "unindex":
        if len(node.args) != 3:
            return None
        args = ", ".join(segment(source, a) for a in node.args[:2])
        index = _basic_index(node.args[2], source, counters)
        if index is None and isinstance(node.args[2], ast.Name):  # (an int by its type only)
            return numba_stacks.span(node) + (f"unindex_one({args}, {node.args[2].id})",)
        if index is None:
            return None
        return numba_stacks.span(node) + (f"unindex_at({args}, {index})",)
    if node.func.id == "setitem":
        index = _basic_index(node.args[1], source, counters) if len(node.args) == 3 else None
        if index is None:
            return None
        x, value = (segment(source, node.args[k]) for k in (0, 2))
        return numba_stacks.span(node) + (f"setitem_basic({x}, {index}, {value})",)
    if node.func.id == "zero_at":
        index = _basic_index(node.args[1], source, counters) if len(node.args) == 2 else None
        if index is None:
            return None
        return numba_stacks.span(node) + (
            f"zero_at_basic({segment(source, node.args[0])}, {index})",
        )
    if node.func.id == "reduced_count":
        x, axis = node.args
        if not (isinstance(x, ast.Name) and _int_constant(axis)):
            return None
        return numba_stacks.span(node) + (f"{x.id}.shape[{ast.literal_eval(axis)}]",)
    if (
        len(node.args) == 5
        and isinstance(node.args[3], ast.Constant)
        and node.args[3].value is None
        and isinstance(node.args[4], ast.Constant)
        and node.args[4].value is False
    ):  # (over every element: the reduced value a number)
        args = ", ".join(segment(source, a) for a in node.args[:3])
        return numba_stacks.span(node) + (f"max_grad_all({args})",)
    if not (
        len(node.args) == 5
        and _int_constant(node.args[3])
        and isinstance(node.args[4], ast.Constant)
        and type(node.args[4].value) is bool
    ):
        return None
    args = ", ".join(segment(source, a) for a in node.args[:4])
    return numba_stacks.span(node) + (f"max_grad_along_axis({args})",)


def _basic_index(node, source, counters):
    """An index `unindex_at` may write through in numba (basic indexing: it names each
    element once), as numba's source: a literal int, a `range` counter, or `np.s_[...]` of
    those and slices with such bounds (`np.s_[:, 96:128]` as `(slice(None, None),
    slice(96, 128))`), or a tuple of those, each slice an `np.s_[...]` of its own (`(np.s_[:],
    i, np.s_[:])`, as the code writes an index holding a loop's counter); None for any other
    (an array of indices adds up where it repeats)."""

    def whole(part):
        return _int_constant(part) or isinstance(part, ast.Name) and part.id in counters

    if whole(node):
        return segment(source, node)
    if isinstance(node, ast.Tuple):
        parts = [p if whole(p) else _one_slice(p) for p in node.elts]
    elif numba_loop_writes.is_s_(node):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    else:
        return None
    written = []
    for part in parts:
        if isinstance(part, ast.Slice):
            bounds = [part.lower, part.upper] + ([part.step] if part.step else [])
            if not all(b is None or whole(b) for b in bounds):
                return None
            texts = ["None" if b is None else segment(source, b) for b in bounds]
            written.append(f"slice({', '.join(texts)})")
        elif part is not None and whole(part):
            written.append(segment(source, part))
        else:
            return None
    return f"({written[0]},)" if len(written) == 1 else f"({', '.join(written)})"


def _one_slice(node):
    """The slice of `np.s_[a:b]` (one slice alone), else None."""
    return (
        node.slice if numba_loop_writes.is_s_(node) and isinstance(node.slice, ast.Slice) else None
    )


def _range_counters(tree) -> set:
    """Names bound only as the target of `for ... in range(...)` (or `reversed(range(...))`):
    ints."""
    counters, others, targets = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            loop = node.iter
            if _is_call_of(loop, "reversed") and len(loop.args) == 1:
                loop = loop.args[0]
            (counters if _is_call_of(loop, "range") else others).add(node.target.id)
            targets.add(id(node.target))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.arg)) and id(node) not in targets:
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                others.add(node.id if isinstance(node, ast.Name) else node.arg)
    return counters - others


def _is_call_of(node, name):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _int_constant(node):
    """Whether the node is a literal int (`1`, `-1`): `ast.literal_eval` reads it."""
    try:
        return type(ast.literal_eval(node)) is int
    except ValueError:
        return False


# -- loading ------------------------------------------------------------------------------------


def _load_jitted(jit_source, name, free, cached):
    """(the text compiled, its module): `jit_source` compiled as the numpy code is, with its
    file written to the cache directory first when `cached` (numba keys its cache on a
    function's file) and numba's cache directory for it is one the cache trusts
    (`_numba_directory`); else without numba's disk cache (and without `cache=True`)."""
    uncached = jit_source.replace("cache=True, ", "")
    if not cached:
        return jit_source, load_numpy(jit_source, name, free)
    try:  # (sourcegrad's own code is in the machine code too: numba_vector_math's ufuncs)
        own = cache.source_digest()
    except OSError:
        return uncached, load_numpy(uncached, name, free)
    digest = hashlib.sha256((own + jit_source).encode()).hexdigest()[:16]
    path = cache.write_private_file("numba", f"{name}_{digest}.py", jit_source)
    directory = None if path is None else _numba_directory(path)
    if directory is None:  # (the cache warned why)
        return uncached, load_numpy(uncached, name, free)
    module_name = f"sourcegrad_generated.numba.{name}_{digest}"
    module = types.ModuleType(module_name)
    module.__file__ = path
    module.__dict__.update(free)
    # (numba's cache finds a cached function's module by name when it loads it)
    sys.modules[module_name] = module
    # (the text this process made, not the file read back: the file is only numba's key)
    exec(compile(jit_source, path, "exec"), module.__dict__)
    elsewhere = _cached_elsewhere(module, directory)
    if elsewhere is not None:  # (numba chose another directory: it has read nothing yet)
        del sys.modules[module_name]
        cache.numba_fault(
            f"numba {elsewhere}",
            f"numba chose the cache directory {elsewhere}, not {directory}, which was checked",
        )
        return uncached, load_numpy(uncached, name, free)
    return jit_source, module


def _numba_directory(path):
    """The directory numba's cache will read and write for the functions of file `path`,
    when the cache trusts it (`cache.untrusted_because`: no symlink on the way, this user's,
    not writable by others, nor anything above it); else None, after one `CacheWarning`
    naming it and why.

    numba picks the first of its locators that can write: `NUMBA_CACHE_DIR/<the file's
    directory's name>_<the SHA-1 of its path>` when the user set NUMBA_CACHE_DIR (a name
    anyone can compute: pre-created by another user, it would hand numba their pickled
    index), else `__pycache__` beside the file, in the cache's private directory. The
    directory is made here when absent, so numba finds it writable and takes it;
    `_cached_elsewhere` confirms it did."""
    from numba.core import config

    if getattr(config, "CACHE_LOCATOR_CLASSES", ""):
        cache.numba_fault(
            "numba locators",
            "NUMBA_CACHE_LOCATOR_CLASSES is set: where numba caches cannot be checked",
        )
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if config.CACHE_DIR:
        hashed = hashlib.sha1(folder.encode()).hexdigest()
        directory = os.path.join(
            os.path.abspath(config.CACHE_DIR), f"{os.path.basename(folder)}_{hashed}"
        )
    else:
        directory = os.path.join(folder, "__pycache__")
    problem = cache.untrusted_because(directory)
    if problem is not None:
        cache.numba_fault(
            f"numba {directory}", f"numba would cache in {directory}, which is not safe: {problem}"
        )
        return None
    return directory


def _cached_elsewhere(module, directory):
    """The cache directory of a numba function of `module` that is not `directory`, or None."""
    from numba.core.dispatcher import Dispatcher

    for value in vars(module).values():
        if isinstance(value, Dispatcher):
            used = value.stats.cache_path  # (None: numba caches nothing for it)
            if used is not None and os.path.abspath(used) != directory:
                return used
    return None


# -- the fallback warning -----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_warned: set = set()


def _warn_once(cause, message):
    if cause not in _warned:
        _warned.add(cause)
        warnings.warn(message, errors.JitFallbackWarning, stacklevel=5)


def _failing_line_number(exc, jit_source):
    """The line of `jit_source` numba's error is about (the last it names), or None."""
    numbers = [int(n) for n in re.findall(r'File "[^"]*", line (\d+)', _ANSI.sub("", str(exc)))]
    count = jit_source.count("\n") + 1
    return next((n for n in reversed(numbers) if 0 < n <= count), None)


def _failing_line(exc, jit_source):
    """The text of the line numba's error is about, or None."""
    line = _failing_line_number(exc, jit_source)
    return None if line is None else jit_source.splitlines()[line - 1]


def _fallback_message(exc, label, jit_source) -> str:
    """What numba refused, the generated line it refused, and the user's line that line
    computes or differentiates (the `# line N: ...` comment above it)."""
    text = _ANSI.sub("", str(exc))
    said = [ln.strip() for ln in text.splitlines() if ln.strip()]
    call = next((ln[3:].strip() for ln in said if ln.startswith(">>>")), None)
    construct = (
        f"no numba implementation of {call}"
        if call
        else next(
            (ln for ln in said if not ln.startswith(("Failed in ", "- ", "During:"))),
            type(exc).__name__,
        )
    )
    where = ""
    if jit_source:
        lines = jit_source.splitlines()
        line = _failing_line_number(exc, jit_source)
        if line is not None:
            code = lines[line - 1].strip()
            user = next(
                (
                    ln.strip()[2:]
                    for ln in reversed(lines[:line])
                    if re.match(r"\s*# (backward of )?line \d+:", ln)
                ),
                None,
            )
            where = f" at `{code}`" + (f" ({user})" if user else "")
    return (
        f"numba cannot compile the gradient of {label}: {construct}{where}; "
        "running the numpy backend's code instead"
    )


__all__ = ["available", "load", "numba_source"]
