"""The compiled gradient's stages, in order: the one place that lists them.

Plain data between stages: Python source, `ir.Function`s, dicts of abstract values
(`analysis.AVal`), generated source text.

    stage            function (module under compiler/)     takes -> gives
    1 lower          function_to_ir (frontend)             a Python function -> IR (A-normal form)
    2 hoist          hoist_loop_invariants (optimize)      IR -> IR (loop invariants out)
    3 infer          infer_shapes (analysis)               IR, input AVals -> {name: AVal}
    4 decide         decide_branches (specialise.branches) IR, AVals -> IR (branches this
                                                           signature decides, kept once)
    5 rewrite        arrays_of_lists                       IR, AVals -> IR (lists passed to
                     (specialise.list_operands),           numpy's array functions made arrays,
                     batch_row_products, hoist again,      per-row products as one matrix
                     negate_products (optimize)            product, ...)
    6 check          check_in_place_updates,               IR, AVals -> None or a located
                     check_real_values,                    SourcegradError
                     check_unmodelled_calls (analysis)
    7 differentiate  reverse (derive.reverse) |            IR, AVals -> derivative IR
                     derivative (derive.forward)
    8 optimize       optimize (optimize)                   IR -> IR (CSE, folding, dead code,
                                                           buffers reused)
    9 print          generate_module (emit.codegen)        IR -> Python source

`api.compiling` (`Gradient.compile`) runs them for one signature (stages 1-2 once per function,
through its IR cache; 3-6 here, in `specialised`; 7-9 per mode: a gradient, a VJP's
forward and backward, a JVP), and caches and loads what stage 9 prints.
"""

from __future__ import annotations

from .analysis import (
    check_in_place_updates,
    check_real_values,
    check_unmodelled_calls,
    infer_shapes,
)
from .specialise.branches import decide_branches
from .specialise.list_operands import arrays_of_lists
from .optimize import batch_row_products, hoist_loop_invariants, negate_products


def specialised(primal, written, avals, wrt_names, batch_rows=True):
    """Stages 3-6: the (hoisted) primal IR specialised to the inputs' abstract values `avals`.

    Takes the IR after stage 2 and the IR as written (`written`, before hoisting: the in-place
    check reads values where the user wrote them). Gives `(IR, {name: AVal})`: shapes
    inferred, decided branches kept once (repeated: a decided branch may decide a flag, an
    early return's), the rewrites applied (each followed by inference again), and the
    checks passed (or a located SourcegradError). `batch_rows=False` (under a memory plan)
    leaves per-row products per row: their batched form is an array per trip, made once and
    kept (for the RNN as large as the per-trip values checkpointing does without)."""
    env = infer_shapes(primal, avals)
    decided = decide_branches(primal, env)
    while decided is not primal:
        primal, env = decided, infer_shapes(decided, avals)
        decided = decide_branches(primal, env)
    # (hoisted again after the batching: the product it makes for an inner loop is invariant
    # in an outer one)
    rewrites = (arrays_of_lists,) + (
        (batch_row_products, _hoisted_again, negate_products) if batch_rows else (negate_products,)
    )
    for rewrite in rewrites:
        rewritten = rewrite(primal, env)
        if rewritten is not primal:
            primal, env = rewritten, infer_shapes(rewritten, avals)
    check_in_place_updates(written, env)
    check_real_values(primal, env, wrt_names)
    check_unmodelled_calls(primal, wrt_names)
    return primal, env


def _hoisted_again(fn, env):
    """hoist_loop_invariants again (the same function when nothing moves)."""
    hoisted = hoist_loop_invariants(fn)
    return fn if hoisted.body == fn.body else hoisted
