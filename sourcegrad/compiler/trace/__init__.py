"""The trace front end: a Python function run on traced values -> `ir.Function`.

The AST front end (`compiler.frontend`) reads a function's source and models Python
construct by construct. This one lets Python run the function: its arguments are `Traced`
values that record every numpy operation they meet (operators, ufuncs and array functions
through numpy's `__array_ufunc__` / `__array_function__` protocols, methods, indexing), each
as the registry's op (`sourcegrad.ops`), into the same IR the AST front end makes. Objects,
decorators, `*args`, generators, `functools` and whatever else Python does, it does: only
the numpy operations on traced values are recorded.

    trace_function(fn, args, wrt, names) -> Trace(function: ir.Function, guards, why)

What Python decides on a traced value (`if x.sum() > 0`, `int(n)`, `float(s)` of a value
no gradient flows through) is recorded as a guard the generated code checks
(`runtime.trace_guard`): a call whose values decide otherwise raises `GuardMiss`, and the
caller traces again for that path. A traced value that carries a gradient and leaves for
plain Python or numpy (`float()`, `np.asarray`, `.item()`, `math.*`, a write into a plain
array, a C extension) is refused, located at the user's line (`TraceEscapeError`). A trace
longer than `MAX_STATEMENTS` (a long Python loop) is refused with the loop's line.

The modules, in the order they import one another: `state` (which trace runs in this
thread), `values` (the `Traced` value and its numpy protocols), `patches` (numpy's, math's
and scipy's functions that bypass the protocols, such as np.asarray, math.exp and
scipy.special.logsumexp, and the random draws, replaced while a trace runs),
`stored_arguments` (arguments the function stores into objects, stored again on each call),
`python_state` (the changes to objects outliving the call: refused), `recorder` (the
statements, names, guards, locations and dependencies of one trace).
"""

from .frames import in_a_library
from .recorder import MAX_STATEMENTS, Trace, trace_function
from .values import Traced

__all__ = ["MAX_STATEMENTS", "Trace", "Traced", "in_a_library", "trace_function"]
