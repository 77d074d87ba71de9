"""The compiler: a Python function's source in, generated derivative source out.

The stages and their order are listed in one place, `pipeline` (what each takes and
gives); `sourcegrad.api` runs them per input signature. The modules, lowest first:

- `ir` (the intermediate representation: A-normal form with structured loops and
  branches) and `names` (fresh names clear of the user's), `lifetimes`;
- `frontend/` (source -> IR: parse, resolve names, inline, lower), with `source_check`
  (the source is the code Python runs) and `random_draws` (draws run forward only);
- `analysis/` (abstract values, shape inference, activity, the checks) and `branches`
  (the branches a signature decides);
- `templates` (a registry rule instantiated on the IR), `reverse` (the adjoint sweep),
  `forward` (forward mode), `checkpointing` and `memory_budget` (recompute, not save);
- `optimize/` (cleanup, algebra, loops, memory);
- `codegen` and `pyprint` (IR -> readable Python), `linebreak` (long lines broken as black
  breaks them), `shape_names` (sizes written from the user's values), and the backends:
  `dask_backend`, `numba_backend` with `numba_fusion` and `numba_vector_math`.

Imports run one way: `sourcegrad.runtime`, `sourcegrad.errors` and `sourcegrad.ops` (the
registry) below; nothing here imports `sourcegrad.api`, `sourcegrad.eager` (but for the
eager `checkpoint`'s call, made when it runs) or the command line above.
"""
