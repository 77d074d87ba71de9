"""Random draws inside differentiated code: numpy's random functions and the methods of a
`np.random.Generator` or `np.random.RandomState`.

A draw runs in the forward pass, where the user's code runs it, on the user's generator;
its value is a constant of the gradient (nothing flows back into a sample), and the
backward pass never draws again: it reads the value the forward drew. So the
reparameterisation trick just works: in `z = mu + sigma * rng.standard_normal(n)` the
gradient reaches `mu` and `sigma` through the sample drawn for this call.

Each draw is a primitive of its own, made on first use (`random.normal` for
`np.random.normal`, `random_method.standard_normal` for a generator's method), not
differentiable and not pure: the optimizer never merges two draws, drops an unused one
(it advances the generator), moves one out of a loop, or recomputes one in the backward.

Shapes: the analysis needs the shape and dtype of a draw without touching the user's
generator (that would change the numbers their program sees), so a rule's `fn` draws from
a throwaway generator of the same kind; generated code calls the user's.

Takes: a function or bound method from the frontend. Gives: the `Rule` of its draw, or
None when it is not a random draw; `same_draws` for derivatives computed in several
sweeps. Imports `ir` and `ops` only.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..ops import RULES, Spelling, defnondiff
from .ir import Assign, Call, ExprStmt, walk

# the objects whose methods draw: numpy's two generator APIs
GENERATOR_TYPES = (np.random.Generator, np.random.RandomState)


def _throwaway_like(generator):
    """A generator of the same kind, for shapes: drawing from it changes nothing of the user's."""
    if isinstance(generator, np.random.Generator):
        return np.random.default_rng(0)
    return np.random.RandomState(0)


def is_generator(value) -> bool:
    return isinstance(value, GENERATOR_TYPES)


def function_rule(fn):
    """The rule of `np.random.<name>` (a method of numpy's global RandomState, or one of the
    module's functions such as `default_rng`), or None when `fn` is not one."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if name is None or getattr(np.random, name, None) is not fn:
        return None
    op = f"random.{name}"
    if op not in RULES:
        if isinstance(owner, np.random.RandomState):

            def shapes(*args, **kwargs):
                return getattr(np.random.RandomState(0), name)(*args, **kwargs)
        elif name in ("default_rng", "RandomState", "Generator"):
            shapes = fn  # making a generator draws nothing
        else:  # `np.random.seed` and other functions that change the global state

            def shapes(*args, **kwargs):
                return None

        defnondiff(op, shapes, Spelling("func", op), pure=False, register_fn=False)
    return RULES[op]


def method_rule(name):
    """The rule of the draw `generator.<name>(...)`; its first argument is the generator."""
    op = f"random_method.{name}"
    if op not in RULES:

        def shapes(generator, *args, **kwargs):
            return getattr(_throwaway_like(generator), name)(*args, **kwargs)

        defnondiff(op, shapes, Spelling("method", name), pure=False, register_fn=False)
    return RULES[op]


def generators_in(function) -> list:
    """The generators an `ir.Function` draws from: those it reads as free values, and
    numpy's global one when it calls `np.random.<name>` functions."""
    found = [v for v in function.free.values() if is_generator(v)]
    if any(
        isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op.startswith("random.")
        or isinstance(s, ExprStmt)
        and isinstance(s.value, Call)
        and s.value.op == "pycall"
        for s in walk(function.body)
    ):
        found.append(np.random.mtrand._rand)
    return found


@contextmanager
def same_draws(generators):
    """For a derivative computed in several sweeps (a Hessian row by row, a Jacobian column
    by column): `again()` puts each generator back where the first sweep started, so every
    sweep differentiates the same sample; after the last, the state is that of one call."""
    states = [
        g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state()
        for g in generators
    ]

    def again():
        for g, state in zip(generators, states):
            if isinstance(g, np.random.Generator):
                g.bit_generator.state = state
            else:
                g.set_state(state)

    yield again
