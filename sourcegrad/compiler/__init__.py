"""The compiler: a Python function's source in, generated derivative source out.

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
