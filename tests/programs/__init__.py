"""Programs written the way published autograd/JAX examples are written (issue 20).

One module per program. Each exposes `objective` (the function to differentiate),
`make_args()` (its arguments, seeded) and optionally `WRT` (the argument(s) to differentiate
with respect to, default 0), `RESET` (puts the random generators an objective draws from back
to their start) and `NEEDS` (a short name for the feature it exercises). test_programs.py
compiles each gradient and checks it against central finite differences.
"""
