"""The compiler: a Python function's source in, generated derivative source out.

This package is its one door: what is imported from outside `sourcegrad.compiler` is named
here (tests/test_layout.py checks that the rest of the package imports nothing else).
The entry is `compile(fn, args, mode) -> Generated(source, manifest, ir, ...)`, stages 1-9
of `pipeline` in order, and `load` (stage 10); the api runs the same stages one by one
(`lower`, `prepare`, `generate`, `load`) with its caches between them. Around them, the
few names the api, the command line and the drawings need: the IR's node types (what a
front end produces), abstract values and signature keys, the facts the api asks of a
signature, and the backends' and the memory plans' helpers that run with the generated
code.

The stages and their order are listed in one place, `pipeline` (what each takes and
gives); `sourcegrad.api` runs them per input signature. The folders, one per stage:

- `ir` (the intermediate representation: A-normal form with structured loops and
  branches), `names` (fresh names clear of the user's) and `random_draws` (the draws both
  front ends record), at the top: every stage speaks them;
- `frontend/` (source -> IR: parse, resolve names, inline, lower; `source_check`: the
  source is the code Python runs) and `trace/` (a function run on traced values -> IR);
- `analysis/` (abstract values, shape inference, activity, the checks; `lifetimes` and
  `shape_names`, which optimize and emit ask);
- `specialise/` (the IR rewritten for one signature: `branches` it decides,
  `list_operands` made arrays);
- `derive/` (`reverse`, `forward`, `templates` with `template_replay`; under a memory
  plan `checkpointing`, `memory_budget`, `row_blocks`);
- `optimize/` (cleanup, algebra, loops, memory);
- `emit/` (`codegen` and `pyprint`: IR -> readable Python; `linebreak`: long lines broken
  as black breaks them);
- `backends/` (`numba_backend` with `numba_fusion`, `numba_stacks` and the vector math;
  `dask_backend`).

Inside, the folders import one way (tests/test_layout.py, `COMPILER_FLOORS`, says which).
Outside, imports run one way too: `sourcegrad.runtime`, `sourcegrad.errors` and `sourcegrad.ops` (the
registry) below; nothing here imports `sourcegrad.api`, `sourcegrad.eager` (but for the
eager `checkpoint`'s call, made when it runs) or the command line above.
"""

from .analysis import AVal, aval_of, signature_key, updated_parameters
from .dependencies import flat_members, python_data, same_members
from .backends.dask_backend import check_inputs as check_dask_inputs
from .backends.dask_backend import is_dask
from .backends.dask_backend import like_input as like_dask_input
from .backends.dask_backend import refuse_transform as refuse_dask_transform
from .backends.numba_backend import numpy_functions as numba_numpy_functions
from .backends.numba_backend import refused as numba_refused
from .backends.numba_stacks import PREVIOUS_VALUE
from .derive.checkpointing import describe_total, saved_bytes
from .derive.memory_budget import MemoryPlan, memory_plan
from .emit.codegen import BACKENDS, comment_lines
from .facts import (
    PowerSite,
    check_power_operands,
    complex_power_error,
    complex_power_sites,
    differs_for_scalars,
    generators_of,
    holds_complex,
    is_real,
    may_power_python_numbers,
    numpy_numbers,
    ops_called,
    zero_d_arrays,
)
from .frontend import function_run_by
from .frontend.source_check import StaleSourceError, check_current
from .ir import (
    Assign,
    Call,
    Const,
    For,
    Function,
    If,
    Marker,
    Pop,
    Push,
    Return,
    Tup,
    Var,
    While,
    reads_of,
    walk,
)
from .pipeline import (
    About,
    Generated,
    Mode,
    compile,
    generate,
    load,
    lower,
    prepare,
)
from .random_draws import generators_in, same_draws
from .trace import Traced, in_a_library, trace_function
from .trace.recorder import generators_read_by
from .trace.state import active as active_trace

__all__ = [
    # the pipeline (stages 1-10)
    "About",
    "Generated",
    "Mode",
    "compile",
    "generate",
    "load",
    "lower",
    "prepare",
    "trace_function",
    "in_a_library",
    "Traced",
    "active_trace",
    "generators_read_by",
    "function_run_by",
    "check_current",
    "StaleSourceError",
    "python_data",
    "same_members",
    "flat_members",
    # the IR
    "Assign",
    "Call",
    "Const",
    "For",
    "Function",
    "If",
    "Marker",
    "Pop",
    "Push",
    "Return",
    "Tup",
    "Var",
    "While",
    "reads_of",
    "walk",
    # signatures and what they decide
    "AVal",
    "aval_of",
    "signature_key",
    "updated_parameters",
    "PowerSite",
    "check_power_operands",
    "complex_power_error",
    "complex_power_sites",
    "differs_for_scalars",
    "generators_of",
    "holds_complex",
    "is_real",
    "may_power_python_numbers",
    "numpy_numbers",
    "ops_called",
    "zero_d_arrays",
    "generators_in",
    "same_draws",
    # backends and memory plans
    "BACKENDS",
    "comment_lines",
    "is_dask",
    "check_dask_inputs",
    "like_dask_input",
    "refuse_dask_transform",
    "numba_numpy_functions",
    "numba_refused",
    "PREVIOUS_VALUE",
    "MemoryPlan",
    "memory_plan",
    "saved_bytes",
    "describe_total",
]
