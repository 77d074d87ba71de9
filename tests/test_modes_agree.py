"""Both modes, one rule table: the same numpy function run eagerly on Tensors (numpy's
functions dispatch to Tensor ops) and compiled by sourcegrad.grad gives the same gradients."""

import numpy as np
import pytest

import sourcegrad

from .compiler.cases import CASES

if not hasattr(sourcegrad, "tensor"):
    pytest.skip("the eager Tensor is not part of this build", allow_module_level=True)

# cases that use something the eager Tensor does not implement (its own gap, listed here
# so that a new gap fails loudly instead of being skipped silently)
EAGER_GAPS = {
    "f_python_floats",
    "f_tensordot",
    "f_einsum",
    "f_square_abs_builtin",
    "f_constant_global",
    "f_mod",
    "f_nondiff",
    "f_max_reduce",
    "f_outer_inner",
}


def eager_gradients(fn, args, positions):
    tensors = [
        sourcegrad.tensor(
            np.asarray(a, dtype=np.float64), dtype=sourcegrad.float64, requires_grad=i in positions
        )
        if isinstance(a, (float, np.ndarray)) and np.asarray(a).dtype.kind == "f"
        else a
        for i, a in enumerate(args)
    ]
    out = fn(*tensors)
    out.backward()
    return [
        tensors[i].grad.numpy() if tensors[i].grad is not None else np.zeros(np.shape(args[i]))
        for i in positions
    ]


@pytest.mark.parametrize("fn, make_args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_and_eager_agree(fn, make_args, wrt):
    if fn.__name__ in EAGER_GAPS:
        pytest.skip(f"{fn.__name__} uses an op the eager Tensor does not implement")
    args = make_args(np.random.default_rng(0))
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    compiled = sourcegrad.grad(fn, wrt=wrt)(*args)
    compiled = compiled if isinstance(wrt, tuple) else (compiled,)
    for c, e in zip(compiled, eager_gradients(fn, args, positions)):
        np.testing.assert_allclose(np.asarray(c), e, rtol=1e-12, atol=1e-14)
