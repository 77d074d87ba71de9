"""The backends that take generated source further than numpy runs it.

Each takes the numpy-flavoured source `emit/` prints (and the IR it was printed from) and
gives a callable:

- `numba_backend`: the source rewritten for numba (`numba_stacks`: stacks of preallocated
  rows; `numba_fusion`: elementwise chains fused into loops; `numba_vector_math` and
  `numba_vector_calls`: glibc's vector math where it can be used) and compiled by
  `numba.njit`, with a fallback to numpy where numba cannot compile it;
- `dask_backend`: the dask-array source checked for functions Dask lacks, and the loaded
  function wrapped so that value and gradients are computed with one `dask.compute`.

(cupy needs no module of its own: it is a namespace in `emit.codegen.BACKENDS`.)
"""
