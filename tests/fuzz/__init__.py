"""Differential fuzzing of the compiler: random programs, compiled gradients vs oracles."""
