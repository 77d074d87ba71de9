"""The op registry: its queries, and its one analysis of which inputs a rule reads (the
compiler keeps what is read by name, the eager engine a Meta of what is read for shape)."""

import numpy as np
import pytest

from sourcegrad import ops
from sourcegrad.eager import spec


@pytest.mark.parametrize(
    "rule, param, level",
    [
        ("add", "x", ops.SHAPE),  # unbroadcast(g, x): the compiler folds the shape
        ("sum", "x", ops.SHAPE),  # x.shape
        ("getitem", "x", ops.META),  # unindex(g, x, index): the array itself is passed
        ("multiply", "y", ops.VALUE),  # g * y
        ("exp", "x", ops.NONE),  # g * ans
        ("exp", "ans", ops.VALUE),
    ],
)
def test_read_levels(rule, param, level):
    assert ops.read_level(ops.get(rule), param) == level


def test_the_two_modes_read_the_one_analysis():
    getitem = ops.get("getitem")
    assert ops.reads_value_of(getitem, "x")  # compiler: keeps x (unindex reads it)
    assert spec.reads(getitem.vjps[0])["x"] == spec.SHAPE  # eager: a Meta of x is enough
    add = ops.get("add")
    assert not ops.reads_value_of(add, "x") and ops.reads_shape_of(add, "x")
    assert spec.reads(add.vjps[0])["x"] == spec.SHAPE


def test_property_queries():
    assert ops.has("reshape", "view") and not ops.has("exp", "view")
    assert ops.has("matmul_op", "fresh") and ops.has("matmul_op", "owned")
    assert ops.has("var", "reduction") and ops.has("exp", "elementwise")
    assert not ops.has("no such op", "view")
    # (x.flatten() copies: its own entry, not ravel, which may return a view)
    assert ops.op_for_method("flatten") == "flatten" and ops.op_for_method("ravel") == "ravel"
    assert ops.op_for_method("cumsum") is None
    assert ops.get("amax").method == "max" and ops.get("reshape").method is None
    assert ops.get("outer").shape == "dot"
    with pytest.raises(ValueError, match="unknown op property"):
        ops.mark("no such property", "exp")


def test_numpy_functions_torch_has_are_visible_to_the_compiler():
    for fn in (np.cumsum, np.cumprod, np.flip, np.roll, np.tril, np.triu, np.tile):
        assert ops.rule_for_function(fn) is not None, fn.__name__
