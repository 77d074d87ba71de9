"""Stage 10's backends (sourcegrad/compiler/backends/ and the CuPy / Dask code generation): numba, Dask, CuPy."""
