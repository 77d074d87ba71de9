"""Stage 8 (sourcegrad/compiler/optimize/): the derivative IR's rewrites (CSE, scalar factors, rank-one updates, in-place updates, buffer reuse)."""
