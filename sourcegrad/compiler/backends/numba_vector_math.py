"""glibc's vector math library (libmvec) for numba: sin, exp, tanh, ... four elements a call.

Generated numba code imports this module (`numba_fusion` writes the calls: a fused run's
statement `v = np.sin(x)` over a block becomes
`vector_math.apply(vector_math.SIN, x[block:block + size], v[:size])`, and
`numba_vector_calls` writes another call `np.tanh(h)` as `vector_math.tanh(h)`, numpy's
names: `_ufunc`); sourcegrad itself asks only `functions()` and `ufuncs()` (no numba
import): the names of `names()` that can run here, and `define_ufuncs()` before numba compiles.
`apply(which, src, dst)`, a numba function, sets `dst[k] = f(src[k])` for every k of both
(1-d float64 arrays), four elements per libmvec call, f the function whose constant
`which` is (`SIN`, `TANH`, ...: its index in `names()`, the registry's `libm` functions). One function for all, taking arrays
and no offsets: numba compiles a function for a third of a second or more, again for each
new combination of argument types (a literal 0 is one), and a chain calls a dozen.

Why: numba compiles `math.sin(x[i])` to a call of libm's `sin`, one element at a time
(about 10 ns each here; numpy's ufunc loops call the same libm on a processor without
AVX-512), and LLVM's loop vectoriser, given `llvm.sin.v4f64`, splits it back into four
libm calls: numba's pip build has no vector library (its SVML needs a patched LLVM, and
LLVM's `-vector-library=LIBMVEC` option changed nothing here). glibc ships one:
`_ZGVdN4v_sin` computes four sines in AVX2 registers in about 7 ns, and likewise tanh
(4x), exp, log, ... A fused chain of transcendental functions, bound by
those calls and not by memory, runs several times faster.

Results: libmvec's functions are accurate to a few units in the last place (glibc's
documented bounds, 4 ulp at most), as libm's are to one or two; numpy's own results differ
by as much between processors (its AVX-512 loops are not libm). The gradients match the
numpy code's to about 1e-15 relative.

When libmvec is not there (another C library, an older glibc than 2.35, a processor
without AVX2 and FMA, or numba told to compile for another CPU than this one:
`NUMBA_CPU_NAME`, whose code would pass the four doubles in other registers), `functions()`
is empty and the fused code calls libm per element as before.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

from ...ops import RULES

LIBRARY = "libmvec.so.1"


@functools.lru_cache(maxsize=1)
def names() -> tuple:
    """The candidates: the `libm` functions of one float argument of the registry's entries
    (`Rule.libm`), in the entries' order; `functions()` keeps those libmvec has in its AVX2
    variant (glibc >= 2.35). Fixed at the first call: `SIN`, `TANH`, ... are indices in it."""
    return tuple(
        dict.fromkeys(
            op.libm for op in RULES.values() if op.libm is not None and len(op.params) == 1
        )
    )


def _symbol(name):
    return f"_ZGVdN4v_{name}"  # (the vector ABI's name: AVX2, unmasked, 4 lanes, one vector)


@functools.lru_cache(maxsize=1)
def functions() -> frozenset:
    """The names of `names()` that run here, vectorised (empty where libmvec cannot be used)."""
    if not sys.platform.startswith("linux") or os.environ.get("NUMBA_CPU_NAME") not in (
        None,
        "",
        "host",
    ):
        return frozenset()
    if os.environ.get("NUMBA_CPU_FEATURES") or os.environ.get("NUMBA_DISABLE_JIT", "0") != "0":
        return frozenset()  # (other registers; or Python running the code: no intrinsics)
    try:
        library = ctypes.CDLL(LIBRARY)
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
    except (OSError, ImportError, RuntimeError):
        return frozenset()
    if not (features.get("avx2") and features.get("fma")):
        return frozenset()
    found = frozenset(name for name in names() if hasattr(library, _symbol(name)))
    if found:  # (before numba compiles code calling them, or loads it from its disk cache)
        _load()
    return found


def _load():
    """libmvec's symbols, visible to the code numba compiles (and loads from its cache)."""
    import llvmlite.binding as llvm

    llvm.load_library_permanently(LIBRARY)


def _four(names):
    """An intrinsic `four(which, src, i, dst, j)`: dst[j:j+4] = f(src[i:i+4]) for the function
    f = names[which], src and dst contiguous (one function for all: numba compiles the loop
    around it once, not once per function, a third of a second each)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def four(typingctx, which, src, i, dst, j):
        def codegen(context, builder, signature, args):
            vector = ir.VectorType(ir.DoubleType(), 4)
            pointers = []
            for array_type, array, index in (
                (signature.args[1], args[1], args[2]),
                (signature.args[3], args[3], args[4]),
            ):
                data = context.make_array(array_type)(context, builder, array).data
                pointers.append(builder.bitcast(builder.gep(data, [index]), vector.as_pointer()))
            x = builder.load(pointers[0], align=8)
            done = builder.append_basic_block("four.done")
            switch = builder.switch(args[0], done)
            for k, name in enumerate(names):
                if name is None:  # (not in this glibc's libmvec: never asked for)
                    continue
                case = builder.append_basic_block(f"four.{name}")
                switch.add_case(ir.Constant(args[0].type, k), case)
                with builder.goto_block(case):
                    symbol = _symbol(name)
                    function = builder.module.globals.get(symbol) or ir.Function(
                        builder.module, ir.FunctionType(vector, [vector]), symbol
                    )
                    builder.store(builder.call(function, [x]), pointers[1], align=8)
                    builder.branch(done)
            builder.position_at_end(done)
            return context.get_dummy_value()

        return types.none(which, src, i, dst, j), codegen

    return four


@functools.lru_cache(maxsize=1)
def _apply():
    """apply(which, src, dst): dst[k] = f(src[k]) for the k of both, f = names()[which]."""
    import numba
    import numpy as np

    four = _four(tuple(n if n in functions() else None for n in names()))

    @numba.njit(error_model="numpy")
    def apply(which, src, dst):
        n, k = min(src.size, dst.size), 0
        if src.strides[0] == 8 and dst.strides[0] == 8:
            while k + 4 <= n:
                four(which, src, k, dst, k)
                k += 4
        if k < n:  # the last few (or a strided array's): through the same code, in fours
            pad = np.ones(4)
            while k < n:
                m = min(4, n - k)
                for q in range(m):
                    pad[q] = src[k + q]
                four(which, pad, 0, pad, 0)
                for q in range(m):
                    dst[k + q] = pad[q]
                k += m

    return apply


def ufuncs() -> dict:
    """{numpy's name: libmvec's} of the ufuncs of one argument computed here four elements a
    call (`vector_math.tanh(x)` for `np.tanh(x)`: see `_ufunc`): the entries spelled
    `np.<name>` whose `libm` function runs here."""
    here = functions()
    return {
        op.spelling.text: op.libm
        for op in RULES.values()
        if op.spelling.kind == "func" and op.libm in here and len(op.params) == 1
    }


def define_ufuncs():
    """Define the ufuncs of `ufuncs()` (numba's overloads of them): numba picks up an
    overload registered before it starts typing a function, not one that its typing of
    `vector_math.tanh` makes through the module's `__getattr__`."""
    for name in ufuncs():
        getattr(sys.modules[__name__], name)


def _ufunc(numpy_name):
    """`f(x)` and `f(x, out)`, numpy's ufunc `np.<numpy_name>` for numba code: for a
    C-ordered float64 array of one dimension or more, four elements a libmvec call (numba's
    own loop calls libm's function one element at a time: np.tanh of 4M elements took 68 ms
    there, 11 ms here, numpy's AVX2 loop 8 ms); numpy's ufunc as numba compiles it for
    anything else (a number, another dtype, a strided array or output, an output of another
    shape, which numpy broadcasts into, or one overlapping the input elsewhere than in
    place). Which applies is decided by the types, when numba compiles the call."""
    import numpy as np
    from numba import types
    from numba.extending import overload

    ufunc = getattr(np, numpy_name)
    which = names().index(ufuncs()[numpy_name])
    apply = _apply()

    def f(x, out=None):  # (what Python runs; numba compiles the overload below)
        return ufunc(x) if out is None else ufunc(x, out)

    f.__name__ = f.__qualname__ = numpy_name

    def contiguous_floats(t):
        return (
            isinstance(t, types.Array)
            and t.dtype == types.float64
            and t.layout == "C"
            and t.ndim >= 1
        )

    @overload(f, jit_options={"error_model": "numpy"})
    def typed(x, out=None):
        no_out = out is None or isinstance(out, (types.NoneType, types.Omitted))
        if no_out and contiguous_floats(x):

            def into_new(x, out=None):
                result = np.empty(x.shape)
                apply(which, x.ravel(), result.ravel())
                return result

            return into_new
        if no_out:
            return lambda x, out=None: ufunc(x)
        if not (contiguous_floats(x) and contiguous_floats(out) and x.ndim == out.ndim):
            return lambda x, out=None: ufunc(x, out)

        def into(x, out=None):
            start, end = x.ctypes.data, x.ctypes.data + 8 * x.size
            at = out.ctypes.data
            if x.shape != out.shape or (at != start and at < end and start < at + 8 * out.size):
                return ufunc(x, out)
            apply(which, x.ravel(), out.ravel())
            return out

        return into

    return f


def __getattr__(name):
    """`apply`, the constants `SIN`, `TANH`, ... that say which function it computes (their
    indices in `names()`), and the ufuncs `sin`, `tanh`, `arcsin`, ... (numpy's names: `_ufunc`):
    made on first use (numba compiles `apply` when called)."""
    if name == "apply" and functions():
        function = globals()[name] = _apply()
        return function
    if name in ufuncs():
        function = globals()[name] = _ufunc(name)
        return function
    if name.lower() in names() and name.isupper() and name.lower() in functions():
        return names().index(name.lower())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
