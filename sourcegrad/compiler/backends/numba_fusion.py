"""Elementwise fusion for the numba backend: a run of elementwise statements as one pass.

`fuse(source, function, kinds)` takes the numba variant's module text, the name of the
function to fuse in, and what each of its parameters is (`kind_of(arg)`: "float64 array"
with its ndim, "scalar", or None for anything else), and returns the text with each
maximal run of elementwise statements at the function's top level that reads arrays
written as one pass over the elements (what `cupy.fuse` does on a GPU), `BLOCK` elements
at a time: in a block, each statement is a loop over the block's elements, a value read
by a later loop is kept in a buffer of one block (made once, before the pass; it stays in
cache), and only the arrays read after the run are written whole, into buffers made before
the pass. A chain of k ufuncs reads and writes main memory once instead of k times, and
allocates one array instead of k. (Why not one loop doing a whole element: see `_groups`.)

A statement is elementwise when it assigns one name an expression of names, numbers,
arithmetic (`+ - * / **`, unary minus) and calls of float ufuncs (`np.sin`, whose
float64 loop is `d->d`) or `math` functions. A run is fused only when every array it
reads is a float64 parameter of the same shape (known from the arguments the code is
compiled for: the dispatch guard checks shapes, so other shapes never reach this code) that
the run does not assign, so each element's computation reads only that element, and every
value it makes is float64. Arrays of two or more dimensions are read and written through
flat views (`x.ravel()`: a view of a C-ordered array, a copy of another; the outputs are
made C-ordered), so one index serves any ndim and memory layout.

Where glibc's vector math library can be used (`vector`: `numba_vector_math.functions()`),
a statement that is one call of such a function (sin, exp, tanh, ...) of an array is computed
four elements a call over the block (`vector_math.apply(vector_math.SIN, x[block:block +
size], v[:size])`), and such a
call inside a longer expression is first made a statement of its own (`cos_v = np.cos(v)`,
into a block buffer), and a call of an expression gets the expression's values first
(`v_y = v * y`, then `np.tanh(v_y)`): libm's functions, one element a call, are what
bounds a fused chain.

`numpy_code_reason` says where numba has nothing to win (straight-line code on Python
numbers, or on large arrays): the numba backend then runs the numpy code, and says so in
the source.

Why its own module: numba_backend rewrites what numba needs; this is an optimisation of the
rewritten text, with its own analysis (which names are arrays, which are read after a run).

Why one module: it is one rewrite of numba source (the runs found, grouped, written as one
loop), each step reading the same table of the names' kinds.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ...ops import Rule, spelled

MATH_CONSTANTS = frozenset(("pi", "e", "tau", "inf"))
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
# elements a fused run computes at a time: each statement is a loop over one block, its values
# in block buffers that stay in cache (40 values of 512 float64s: 160 KB)
BLOCK = 512
# elements of an array argument from which straight-line code runs as the numpy code
# (`numpy_code_reason`: 512 KiB of float64)
LARGE_ARRAY = 1 << 16
#: straight-line code of more statements runs as the numpy code (`numpy_code_reason`)
LONG_CODE = 200


def kind_of(value):
    """What the fusion needs to know of an argument: ("array", ndim, shape) for a float64
    array of one dimension or more, "scalar" for a float or an int, None otherwise."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64 and value.ndim >= 1:
        return ("array", value.ndim, value.shape)
    if type(value) in (float, int) or isinstance(value, (np.float64, np.int64)):
        return "scalar"
    return None


def fuse(source: str, function: str, kinds: dict, vector=frozenset()) -> str:
    """The module text with the runs of `function` fused (see the module docstring);
    `vector`: the functions `numba_vector_math` computes four elements at a time here
    (`numba_vector_math.functions()`; none by default)."""
    if vector:
        source = _hoisted(source, function, kinds, vector)
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if fn is None:
        return source
    lines = source.splitlines(keepends=True)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in fn.args.args
    }
    runs = _runs(fn, kinds)
    vector_math = _fresh("vector_math", taken) if vector else None
    for run in reversed(runs):  # (from the last: earlier lines keep their numbers)
        after = fn.body[fn.body.index(run[-1]) + 1 :]
        _rewrite(lines, fn, run, after, kinds, taken, vector, vector_math)
    return "".join(lines)


def numpy_code_reason(source: str, function: str, kinds) -> str | None:
    """Why the numpy code runs, not numba's, for `function` of the (fused) numba text, or
    None. Each case is straight-line code (no loop of the user's, no fused run: the fused
    text has neither `for` nor `while`), where numba has nothing to compile away:

    * only Python numbers for arguments: numba's call of the compiled code (~1 µs here:
      unboxing, the tuple of results) costs more than the numpy code's whole run (the
      scalar benchmark: 1.0 µs against 0.5 µs);
    * an array argument of LARGE_ARRAY elements or more: each statement is one call into a
      loop numpy already runs compiled, and runs faster (its SIMD ufunc loops against
      numba's libm or libmvec calls, its own BLAS against the one numba calls, huge pages):
      the MLP at batch 4096 took 332 ms under numba against 309 ms, the logistic
      regression on 10^7 numbers 15.4 ms against 14.5 ms, after compiling for 5.9 s and
      1.7 s. (Below that numba wins what numpy pays per operation: the MLP at batch 32,
      0.80x the hand-written gradient against 1.06x.)
    * more than LONG_CODE statements (a loop the trace unrolled: its iterations differ, or
      are fewer than rolling's MIN_ITERATIONS): numba's compile time grows faster
      than a function's length. The layers benchmark's LSTM (batch 16, 16->32) took 41 s
      over 2 steps (146 statements) and 124 s over 4 (295), where it ran in 0.38 ms against
      1.02 ms for the hand-written gradient and 1.38 ms for the numpy code; over its 20
      steps (1,531 statements) numba had not compiled it after 15 minutes. (Its steps, whose
      masks select different counts, are now rolled into one loop: see trace/rolling.py.)"""
    fn = next(
        (
            n
            for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef) and n.name == function
        ),
        None,
    )
    if fn is None or any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(fn)):
        return None
    statements = sum(isinstance(n, ast.stmt) for n in ast.walk(fn)) - 1
    if statements > LONG_CODE:
        return (
            f"straight-line code of {statements} statements (more than {LONG_CODE}: a loop "
            "unrolled): numba would take many minutes to compile it"
        )
    if kinds is None:
        return None
    if all(k == "scalar" for k in kinds.values()):
        return (
            "straight-line code on Python numbers (no loop, no array): numba's call costs more "
            "than the numpy code's whole run"
        )
    largest = max((math.prod(k[2]) for k in kinds.values() if isinstance(k, tuple)), default=0)
    if largest >= LARGE_ARRAY:
        return (
            f"straight-line code on large arrays (no loop, no fused run; {largest} elements): "
            "numpy's own loops and BLAS run each statement faster than numba's"
        )
    return None


def _op_of(module, name) -> Rule | None:
    """The registry entry of generated code's call `np.<name>(...)` or `math.<name>(...)`:
    what the passes ask of a function (its `libm`, `math` and `inline` facts), or None."""
    if module == "np":
        return spelled("func", name)
    return spelled("module", f"math.{name}") if module == "math" else None


def _vector_name(node, vector):
    """The libmvec name of a call `np.sin(...)` or `math.sin(...)` of one argument that
    `numba_vector_math` computes here, or None."""
    if not (
        isinstance(node, ast.Call)
        and not node.keywords
        and len(node.args) == 1
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
    ):
        return None
    module, name = node.func.value.id, node.func.attr
    op = _op_of(module, name)
    libm = op.libm if op is not None else None
    return libm if libm in vector else None


def _vector_call(node, vector):
    """The libmvec name of such a call of a name (`np.sin(v)`), or None."""
    return (
        _vector_name(node, vector)
        if isinstance(getattr(node, "args", [None])[0], ast.Name)
        else None
    )


def _array_names(run, kinds, params):
    """(the run's leaves: the parameters it reads as arrays, the names it computes arrays in)."""
    assigned = {s.targets[0].id for s in run}
    arrays, leaves = set(), []
    for stmt in run:
        reads = _elementwise_reads(stmt)
        for n in reads:
            if n in params and n not in assigned and kinds.get(n) != "scalar" and n not in leaves:
                leaves.append(n)
        if any(n in arrays or n in leaves for n in reads):
            arrays.add(stmt.targets[0].id)
    return leaves, arrays


def _hoisted(source, function, kinds, vector):
    """The text with each vectorisable call of an array in a run made a statement that is
    that call alone, four elements a call in `_rewrite`: its argument, where it is an
    expression, first made a statement just above (`v_y = v * y`, then `np.tanh(v_y)`), then
    a call inside a longer expression (`cos_v = np.cos(v)`, then `d_v * cos_v`)."""

    def argument(node, stmt, arrays):
        if not _vector_name(node, vector) or isinstance(node.args[0], ast.Name):
            return None
        arg = node.args[0]
        read = [n for n in ast.walk(arg) if isinstance(n, ast.Name) and n.id != "math"]
        names = [n.id for n in sorted(read, key=lambda n: n.col_offset)]
        if arg.lineno != arg.end_lineno or not any(n in arrays for n in names):
            return None
        return arg, "_".join(list(dict.fromkeys(names))[:3])  # (named after what it reads)

    def call(node, stmt, arrays):
        if node is stmt.value or not _vector_call(node, vector) or node.args[0].id not in arrays:
            return None
        return node, f"{node.func.attr}_{node.args[0].id}"

    for pick in (argument, call):
        source = _hoist(source, function, kinds, pick)
    return source


def _hoist(source, function, kinds, pick):
    """The text with the expressions `pick(node, statement, arrays)` names in a run's
    statements (a (node, base name) pair, or None) each assigned a fresh name just above
    the statement, and read through it."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    params = {a.arg for a in fn.args.args}
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | params
    lines = source.splitlines(keepends=True)
    for run in reversed(_runs(fn, kinds)):
        leaves, arrays = _array_names(run, kinds, params)
        arrays = arrays | set(leaves)
        for stmt in reversed(run):
            found = [p for p in map(lambda n: pick(n, stmt, arrays), ast.walk(stmt.value)) if p]
            outer = [
                (node, base)
                for node, base in found
                if not any(o is not node and _inside(node, o) for o, _ in found)
            ]
            made = []
            for node, base in sorted(outer, key=lambda p: (p[0].lineno, p[0].col_offset))[::-1]:
                name = _fresh(base, taken)
                code = lines[node.lineno - 1]
                start, end = byte_col(code, node.col_offset), byte_col(code, node.end_col_offset)
                made.append(f"{' ' * stmt.col_offset}{name} = {code[start:end]}\n")
                lines[node.lineno - 1] = code[:start] + name + code[end:]
            lines[stmt.lineno - 1 : stmt.lineno - 1] = made[::-1]
    return "".join(lines)


def _inside(node, other):
    """Whether node's text lies within other's (both on one line)."""
    return (
        node.lineno == other.lineno
        and other.col_offset <= node.col_offset
        and node.end_col_offset <= other.end_col_offset
    )


def _runs(fn, kinds):
    """The maximal runs of elementwise statements of fn's top level worth fusing: at least
    two statements computing arrays, every array read a parameter of one shape."""
    params = {a.arg for a in fn.args.args}
    runs, current, arrays, shape = [], [], set(), None

    def close():
        nonlocal current, arrays, shape
        if sum(1 for s in current if s.targets[0].id in arrays) >= 2:
            runs.append(current)
        current, arrays, shape = [], set(), None

    for stmt in fn.body:
        reads = _elementwise_reads(stmt)
        if reads is None:
            close()
            continue
        target = stmt.targets[0].id
        leaves = [n for n in reads if n not in {s.targets[0].id for s in current}]
        ok, is_array = True, False
        for name in reads:
            if name in arrays:
                is_array = True
            elif name in leaves:
                kind = kinds.get(name) if name in params else None
                if kind == "scalar":
                    continue
                if kind is None or kind[0] != "array" or (shape is not None and kind[2] != shape):
                    ok = False
                    break
                shape, is_array = kind[2], True
        if not ok or target in params:
            close()
            continue
        current.append(stmt)
        if is_array:
            arrays.add(target)
        else:
            arrays.discard(target)
    close()
    return [r for r in runs if _one_kind_per_name(r, kinds)]


def _one_kind_per_name(run, kinds):
    """Whether each name the run assigns is always an array or always a number, and each
    number is assigned once (numbers are computed before the loop, in their order: a number
    assigned twice could be read between the two by an array's statement)."""
    seen: dict = {}
    arrays: set = set()
    for stmt in run:
        target = stmt.targets[0].id
        is_array = any(
            n in arrays or (n not in seen and isinstance(kinds.get(n), tuple))
            for n in _elementwise_reads(stmt)
        )
        if target in seen and (seen[target] != is_array or not is_array):
            return False
        seen[target] = is_array
        if is_array:
            arrays.add(target)
    return True


def _elementwise_reads(stmt):
    """The names an elementwise assignment reads (a list), or None for another statement."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return None
    names: list = []
    return names if _elementwise(stmt.value, names) else None


def _elementwise(node, names) -> bool:
    if isinstance(node, ast.Name):
        names.append(node.id)
        return True
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _elementwise(node.operand, names)
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, _ARITHMETIC)
            and _elementwise(node.left, names)
            and _elementwise(node.right, names)
        )
    if isinstance(node, ast.Attribute):  # math.pi
        return (
            isinstance(node.value, ast.Name)
            and node.value.id == "math"
            and node.attr in MATH_CONSTANTS
        )
    if (
        isinstance(node, ast.Call)
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
    ):
        module, name = node.func.value.id, node.func.attr
        if module == "np":
            ufunc = getattr(np, name, None)
            if not (
                isinstance(ufunc, np.ufunc)
                and ufunc.nout == 1
                and len(node.args) == ufunc.nin
                and "d" * ufunc.nin + "->d" in ufunc.types
            ):
                return False
        elif module != "math" or _op_of(module, name) is None or not hasattr(math, name):
            return False  # (a math function is one an entry is spelled as: `math_tanh`'s)
        return all(_elementwise(a, names) for a in node.args)
    return False


def _as_math(module, name) -> str | None:
    """The math function a ufunc `np.<name>` on one element is written as in a fused loop: a
    libm function the math module has (`np.arcsin` -> `math.asin`: numba compiles it in about
    half the time, and both are the same libm call, math's domain errors nan and inf there as
    numpy's), or None."""
    op = _op_of(module, name) if module == "np" else None
    return op.math if op is not None and op.math is not None and op.libm is not None else None


def _rewrite(lines, fn, run, after, kinds, taken, vector, vector_math):
    # (long: one fused loop written in its order (the run's arrays and groups, the buffers,
    # the header, the body per statement, the imports), all reading the names chosen at the
    # top)
    params = {a.arg for a in fn.args.args}
    leaves, arrays = _array_names(run, kinds, params)
    read_after = {n.id for s in after for n in ast.walk(s) if isinstance(n, ast.Name)}
    out = [
        n for n in dict.fromkeys(s.targets[0].id for s in run) if n in arrays and n in read_after
    ]
    # the run's numbers are made before the loop (the same in every element, and defined
    # when there are no elements)
    numbers = {s.targets[0].id for s in run if s.targets[0].id not in arrays}
    index, block, size = (_fresh(base, taken) for base in ("i", "block", "size"))
    shape_of = leaves[0]
    flat = kinds[shape_of][1] > 1  # (indexed through flat views: one index for any ndim)
    views = {n: _fresh(f"{n}_flat", taken) if flat else n for n in leaves + out}
    # a statement that is one vectorisable call of an array: four elements a call, a loop of
    # its own (numba_vector_math)
    vectorised = {
        stmt: _vector_call(stmt.value, vector)
        for stmt in run
        if stmt.targets[0].id not in numbers
        and _vector_call(stmt.value, vector)
        and (stmt.value.args[0].id in arrays or stmt.value.args[0].id in leaves)
    }
    groups = _groups([s for s in run if s.targets[0].id not in numbers], vectorised)
    group_of: dict = {}
    for k, group in enumerate(groups):
        for stmt in group:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name):
                    group_of.setdefault(node.id, set()).add(k)
    # a value read by a later loop of the block is kept in a buffer of the block's values;
    # one made and read in the same loop is a number per element
    buffered = [
        n
        for n in dict.fromkeys(s.targets[0].id for s in run)
        if n in arrays and n not in out and len(group_of[n]) > 1
    ]
    for stmt in vectorised:  # (read and written whole blocks at a time: never per element)
        for n in (stmt.targets[0].id, stmt.value.args[0].id):
            if n not in views and n not in buffered:
                buffered.append(n)
    first, last = _first_line(lines, run[0], fn), run[-1].end_lineno
    per_element = [s for s in run if s.targets[0].id not in numbers and s not in vectorised]
    _index_per_element(lines, per_element, views, buffered, block, index)
    indent = " " * run[0].col_offset
    header = [
        f"{indent}# fused: the elementwise run below is one pass over the elements, "
        f"{BLOCK} at a time\n"
    ]
    body = []
    above = first
    starts = {group[0] for group in groups}
    for stmt in run:
        comments = lines[above - 1 : stmt.lineno - 1]
        code = lines[stmt.lineno - 1 : stmt.end_lineno]
        above = stmt.end_lineno + 1
        if stmt.targets[0].id in numbers:  # (the same in every element: made before the loop)
            header += comments + code
            continue
        if stmt in vectorised:
            body += [_indented(line, 4) for line in comments]
            arguments = [
                f"{views[n]}[{block}:{block} + {size}]" if n in views else f"{n}[:{size}]"
                for n in (stmt.value.args[0].id, stmt.targets[0].id)
            ]
            what = "".join(code).strip().split("  #")[0]
            body.append(
                f"{indent}    {vector_math}.apply({vector_math}.{vectorised[stmt].upper()}, "
                f"{', '.join(arguments)})  # {what}, four elements a call\n"
            )
            continue
        if stmt in starts:
            body += [_indented(line, 4) for line in comments]
            body.append(f"{indent}    for {index} in range({size}):\n")
        else:
            body += [_indented(line, 8) for line in comments]
        body += [_indented(line, 8) for line in code]
    header += [f"{indent}{name} = np.empty({shape_of}.shape)\n" for name in out]
    header += [f"{indent}{name} = np.empty({BLOCK})  # a block's values\n" for name in buffered]
    if flat:  # (ravel: a view of a C-ordered array, a copy of another)
        header += [f"{indent}{views[n]} = {n}.ravel()\n" for n in leaves]
        header += [f"{indent}{views[n]} = {n}.reshape({n}.size)\n" for n in out]
    total = f"{views[shape_of]}.size"
    header.append(f"{indent}for {block} in range(0, {total}, {BLOCK}):\n")
    header.append(f"{indent}    {size} = min({BLOCK}, {total} - {block})\n")
    lines[first - 1 : last] = header + body
    if not any(line.startswith("import math") for line in lines):
        at = next(k for k, line in enumerate(lines) if line.startswith("import "))
        lines.insert(at, "import math\n")
    vector_import = f"from sourcegrad.compiler.backends import numba_vector_math as {vector_math}\n"
    if vectorised and vector_import not in lines:  # (after the imports)
        at = max(k for k, line in enumerate(lines) if line.startswith("import "))
        lines.insert(at + 1, vector_import)


def _index_per_element(lines, statements, views, buffered, block, index):
    """Edit `statements` in `lines` to compute one element: an array read through its flat
    view at `block + index`, a buffered value at `index`, a numpy function of numbers as
    the math module's."""
    edits = []  # (line, col, end col, text)
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in views:
                text = f"{views[node.id]}[{block} + {index}]"
                edits.append((node.lineno, node.col_offset, node.end_col_offset, text))
            elif isinstance(node, ast.Name) and node.id in buffered:
                text = f"{node.id}[{index}]"
                edits.append((node.lineno, node.col_offset, node.end_col_offset, text))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (math_name := _as_math(node.func.value.id, node.func.attr)) is not None
            ):
                func = node.func
                edits.append(
                    (
                        func.lineno,
                        func.col_offset,
                        func.end_col_offset,
                        f"math.{math_name}",
                    )
                )
    for line, start, end, text in sorted(edits, reverse=True):
        code = lines[line - 1]
        lines[line - 1] = code[: byte_col(code, start)] + text + code[byte_col(code, end) :]


def _groups(statements, vectorised=()):
    """The statements as loops over a block: each loop ends after a statement that calls a
    function. (Per element the calls depend on one another, and a libm call is ~100
    instructions: the processor overlaps the calls of successive elements only when a loop's
    body is short. One loop per element with 30 calls ran 2x slower than numpy's ufuncs.)
    A statement in `vectorised` is a group of its own."""
    groups = [[]]
    for stmt in statements:
        if stmt in vectorised:
            groups += [[stmt], []]
            continue
        groups[-1].append(stmt)
        if any(isinstance(n, ast.Call) and not _inline(n) for n in ast.walk(stmt)):
            groups.append([])
    return [g for g in groups if g]


def _inline(call) -> bool:
    """Is a fused statement's call `np.<f>(...)` / `math.<f>(...)` one numba compiles to a few
    instructions (sqrt, abs, negation: the entry's `inline`), no libm call?"""
    func = call.func
    op = _op_of(func.value.id, func.attr) if isinstance(func.value, ast.Name) else None
    return op is not None and op.inline


def _fresh(base, taken):
    """`base`, or `base_1`, `base_2`, ...: the first name no other in the module has."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _indented(line, spaces):
    return " " * spaces + line if line.strip() else line


def byte_col(line, col):
    """ast's columns count UTF-8 bytes: the string index of byte column `col`."""
    return len(line.encode()[:col].decode(errors="ignore"))


def _first_line(lines, stmt, fn):
    """The statement's first line, with the comment lines just above it (its `# line N:`)."""
    n = stmt.lineno
    while n - 1 > fn.lineno and lines[n - 2].strip().startswith("#"):
        n -= 1
    return n


__all__ = ["BLOCK", "byte_col", "fuse", "kind_of", "numpy_code_reason"]
