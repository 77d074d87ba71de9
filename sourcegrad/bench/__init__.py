"""The benchmark suite: sourcegrad's compiled gradients against hand-written numpy and peers.

Run it as

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m sourcegrad.bench [--quick] [--only NAME]

(unset those two OpenBLAS overrides in the benchmark command only, never in tests
or CI). It prints a markdown table, and writes the results as JSON where `--json PATH`
asks (nothing by default).

- `workloads`: the workloads as plain numpy code, their hand-written gradients
  (the reference), and the variants (sourcegrad, HIPS autograd, torch eager,
  `jax.jit(jax.grad)`; a peer that is not installed is skipped);
- `runner`: the measuring child processes (single-threaded, checked before
  timed, peak memory in a fresh process per variant) and the report.
- `eager`: printed after the main table: the eager mode's per-op overhead and the
  training steps of `eager_models` (an MLP, an LSTM language model, a small GPT) run by
  sourcegrad eagerly, by `sourcegrad.compile(model)` and by torch eagerly, side by side in
  one process (ratios to torch's time);
- `dask_bench`: `python -m sourcegrad.bench --backend dask`, the logistic-regression
  gradient over data larger than memory on a dask.distributed cluster, against the same
  gradient hand-written with dask.array and numpy in memory;
- `gpu`: `python -m sourcegrad.bench.gpu`, the same workloads and the eager seed
  walkthrough on a CUDA GPU (CuPy; one line and exit 0 without a GPU).
"""
