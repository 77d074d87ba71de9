"""Stages 4-5, specialise: the primal IR rewritten for one input signature.

Takes an `ir.Function` and its abstract values (`analysis.infer_shapes`: `{name: AVal}`)
and gives an `ir.Function` (the same object when nothing changes), which `pipeline`
infers again:

- `branches`: `decide_branches`, the `if`s this signature decides, kept once;
- `list_operands`: `arrays_of_lists`, lists passed to numpy's array functions made arrays;
- `masked_writes`: `selects_for_masked_writes`, `x[m] = c` and `x[m] = x[m] * c` through a
  boolean mask of x's shape made `np.where` selections.

(The other rewrites of this stage, per-row products batched and negations folded, are
passes of `optimize/`, which `pipeline.specialised` runs here too.)
"""
