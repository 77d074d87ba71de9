"""HIPS autograd's `autograd.misc` spellings, for code moving from autograd.

`flatten(value)` takes a parameter tree (nested lists, tuples, dicts, NamedTuples and
dataclasses of arrays and numbers) and returns `(vector, unflatten)`; `optimizers` holds
`sgd`, `rmsprop` and `adam`, which take a gradient function `grad(params, i)` and a tree of
initial parameters and return the optimized tree. Code written as
`from autograd.misc import flatten` / `from autograd.misc.optimizers import adam` runs
with `sourcegrad.misc` in their place.
"""

from .flatten import flatten, flatten_func

__all__ = ["flatten", "flatten_func"]
