"""Stage 7, derive: a specialised primal IR -> its derivative's IR.

Takes the primal `ir.Function`, its abstract values (`{name: AVal}`) and what to
differentiate with respect to, and gives derivative IR (structured, not yet optimized):

- `reverse`: reverse mode, `reverse` (a gradient: the forward sweep with its saves, then
  the adjoint sweep) and `split_vjp` (a VJP's forward and backward as two functions);
- `forward`: forward mode (`derivative`, a JVP's tangent sweep; `forward_mode`);
- `templates` and `template_replay`: a registry rule's template instantiated on the IR
  (and replayed for operands of the same shape);
- `checkpointing`, `memory_budget` and `row_blocks`: under a memory plan, values
  recomputed instead of saved (loop segments, revolve, checkpointed calls, a batch in
  blocks of rows).

Below it: `analysis/` (abstract values, activity) and `optimize/` (the cleanup passes
checkpointing runs on the sweeps it rewrites).
"""
