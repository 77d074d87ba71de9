"""Optimizations on IR: `optimize(fn, shapes, dtypes, ...)`, the passes it runs in order.

`optimize` takes an `ir.Function` (structured: loops and branches allowed) and returns a
new one computing the same result; its passes live in the package's modules by kind:

- `list_adjoints`: the adjoint of a list read item by item (`q, k, v = np.split(...)`) made
  the list of the items' adjoints, not a sum of one list of zeros per item;
- `cleanup`: copy propagation and CSE of single-assignment names, dead-code elimination
  (liveness over loops to a fixed point; pushes, pops and calls made for their effect
  kept), values computed only for a `.shape` or `.size` the signature already knows;
- `rank_one`: a loop's rank-one updates (`acc += np.outer(u, v)`), bias sums and row
  updates done once after it from row buffers (`batch_rank_one_updates`);
- `algebra`: scalar factors sunk into the cheapest operand (`sink_scalar_factors`),
  negations folded into products (`negate_products`), and what a call makes
  (`makes_new_value`: a fresh array, never a view or an input);
- `memory`: large elementwise results computed into dead buffers (`reuse_dead_buffers`;
  never a pullback's residuals), saves nobody reads dropped, first updates assigned;
- `updates`: writes through an index (`setitem`, `zero_at`) into the buffer of an array
  this function made and nothing reads after, a sliced or masked read's adjoint added where
  it goes (`acc[i] += g`) instead of as full-size zeros, `unbroadcast` of two parts of one
  boolean mask dropped (`updates_in_place`); with `masked_adjoints` (which it runs) the
  adjoint of a function of masked elements written through the mask computed on whole
  arrays (`np.where(m, d_z * z, 0.0)` for `unindex(d_z[m] * e, x, m)`) and `indices`
  (which elements two indices share);
- `hoisting` and `row_products`: run on the primal before differentiation (the api
  calls them through `sourcegrad.compiler.pipeline`): loop invariants and transposes taken once
  before the loop, `U @ xs[t]` for every row as one `xs @ U.T` (plus a bias the loop adds).

Names assigned more than once (variables of loops and branches, adjoint accumulators)
are never propagated or shared: their value depends on where they are read. Constant
folding and 0/1 algebra happen earlier, while rule templates are instantiated, where the
static facts are at hand. The modules import one way: cleanup <- algebra <- memory,
cleanup <- list_adjoints, rank_one <- row_products, indices <- masked_adjoints <- updates;
this module runs them.
"""

from __future__ import annotations

from ..ir import Function
from .algebra import sink_scalar_factors
from .cleanup import Cleaner, eliminate_dead_code, inline_shape_only_values
from .hoisting import hoist_transposes
from .list_adjoints import gather_item_adjoints
from .memory import (
    CUPY_BUFFER_REUSE_MIN_BYTES,
    NUMBA_BUFFER_REUSE_MIN_BYTES,
    assign_first_updates,
    drop_unread_saves,
    fusible_elementwise,
    reuse_dead_buffers,
)
from .rank_one import batch_rank_one_updates
from .updates import updates_in_place

# the passes other stages call (the pipeline, the api, checkpointing)
from .algebra import makes_new_value, negate_products
from .cleanup import RECOMPUTED_NOTE
from .hoisting import hoist_loop_invariants
from .row_products import batch_row_products

__all__ = [
    "RECOMPUTED_NOTE",
    "batch_row_products",
    "hoist_loop_invariants",
    "makes_new_value",
    "negate_products",
    "optimize",
    "reuse_dead_buffers",
]


# the size from which a result is computed into a dead buffer, where it differs from numpy's
_BUFFER_REUSE_MIN_BYTES = {
    "cupy": CUPY_BUFFER_REUSE_MIN_BYTES,
    "numba": NUMBA_BUFFER_REUSE_MIN_BYTES,
}


def optimize(
    fn: Function,
    shapes: dict | None = None,
    dtypes: dict | None = None,
    keep_residuals: bool = False,
    backend: str = "numpy",
    numbers: frozenset = frozenset(),
    batch_rows: object = True,
) -> Function:
    """The passes, in order (see the package docstring): cleanup, then the array passes.

    `shapes` (name -> shape tuple, from the signature) lets values that are computed
    only for their shape be replaced by that shape; with `dtypes` too, rank-one updates
    accumulated in a loop become one matrix product after it. `backend` sets the size
    from which results are computed into dead buffers (never for dask; for numba not the
    elementwise statements its fusion may make one pass: `fusible_elementwise`);
    `numbers` names the values that
    are floating numbers (Python floats, numpy floating scalars). `batch_rows="nested"` (under a
    memory plan) batches the rank-one updates of loops inside another loop only (a segment's
    rows), leaving a top-level loop's per trip: its row buffers would hold every trip.
    """
    clean = Cleaner(fn.params)
    body = clean(gather_item_adjoints(clean(fn.body), fn.params))
    arrays = bool(shapes) and bool(dtypes)
    # sizes read from the inputs (`len(Y)`) where code is read; numbers where a kernel is
    # fused (cupy.fuse, numba_fusion), which a call in an elementwise run would break up
    user_names = fn.user_names if backend not in ("cupy", "numba") else None
    if shapes:
        body = clean(inline_shape_only_values(body, set(fn.params), shapes, user_names))
    if arrays:
        body = clean(updates_in_place(body, fn.params, shapes, dtypes))
    if arrays:
        if batch_rows:  # (an accumulator that became a row buffer is a copy of it now)
            body = clean(
                batch_rank_one_updates(
                    body, set(fn.params), shapes, dtypes, user_names, batch_rows != "nested"
                )
            )
        body = eliminate_dead_code(assign_first_updates(body, set(fn.params), shapes, dtypes))
    if arrays or numbers:
        shapes, dtypes = dict(shapes or {}), dict(dtypes or {})  # (the pass names new values)
        body = eliminate_dead_code(
            sink_scalar_factors(body, set(fn.params), shapes, dtypes, numbers)
        )
    if arrays:
        body = eliminate_dead_code(drop_unread_saves(body))
    # (dask arrays are immutable: no `out=`; numba fuses runs of elementwise statements into
    # one pass over memory (numba_fusion), which computing into buffers would split: those
    # statements make their own arrays there)
    if arrays and backend != "dask":
        body = reuse_dead_buffers(
            body,
            set(fn.params),
            shapes,
            dtypes,
            keep_residuals,
            _BUFFER_REUSE_MIN_BYTES.get(backend),
            frozenset(fn.user_names),
            fusible_elementwise(body, fn.params, shapes, dtypes)
            if backend == "numba"
            else frozenset(),
        )
    body = hoist_transposes(body, set(fn.params))
    return Function(
        fn.name,
        fn.params,
        body,
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
        fn.stack,
    )
