"""Masks joined with `|`, `&` and `^` (and `|=`, `&=`, `^=`), as published layer code writes
them: `m = (a > 0) | (b < 0)` was refused by the source front end ("the operator BitOr is not
supported") and by the trace (its traced values had no `|`). Both front ends, against central
finite differences; on floats numpy's TypeError, located."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches

A = np.array([1.0, -2.0, 3.0, 0.5])
B = np.array([-1.0, 2.0, 0.5, 1.2])


def numeric(fn, args, i, eps=1e-6):
    out = np.zeros_like(args[i])
    for j in range(args[i].size):
        step = np.zeros_like(args[i])
        step[j] = eps
        up = [a + step if k == i else a for k, a in enumerate(args)]
        down = [a - step if k == i else a for k, a in enumerate(args)]
        out[j] = (fn(*up) - fn(*down)) / (2 * eps)
    return out


def joined_masks(a, b):
    m = (a > 0) | (b < 0)
    k = (a < 1.5) & ~(b > 1.0)
    k ^= a > 2.5
    m |= b > 1.9
    return np.sum(np.where(m, a * b, a)) + np.sum(a[k] ** 2) + np.sum(np.where(m ^ k, b, 0.0))


def masked_write(a, b):
    z = a.copy()
    both = (a > 0) & (b > 0)
    z[both | (a < -1.0)] = b[both | (a < -1.0)] * 3.0
    bits = (np.arange(4) & 1) == 1  # (integers: bitwise)
    return np.sum(z * z) + np.sum(np.where(bits ^ (b > 0), a, -b))


@pytest.mark.parametrize("fn", [joined_masks, masked_write])
@pytest.mark.parametrize("front_end", ["source", "trace"])
def test_joined_masks_differentiate_in_both_front_ends(fn, front_end):
    memory_caches.forget(fn)  # (the other front end's code is not reused)
    g = sourcegrad.grad(fn, argnums=(0, 1))
    g.reads_source = front_end == "source"
    da, db = g(A.copy(), B.copy())
    np.testing.assert_allclose(da, numeric(fn, [A, B], 0), atol=1e-6)
    np.testing.assert_allclose(db, numeric(fn, [A, B], 1), atol=1e-6)


def test_the_generated_code_joins_them_as_written():
    memory_caches.forget(joined_masks)
    g = sourcegrad.grad(joined_masks, argnums=(0, 1))
    g(A, B)
    assert "m = (a > 0) | (b < 0)" in g.source
    assert "k = (a < 1.5) & ~(b > 1.0)" in g.source


def floats_or(a, b):
    return np.sum(a | b)


def test_floats_raise_numpys_type_error_located():
    with pytest.raises(TypeError, match="bitwise_or") as info:
        sourcegrad.grad(floats_or)(A, B)
    assert isinstance(info.value, sourcegrad.errors.SourcegradError)
    assert "test_bitwise_masks.py" in str(info.value)
