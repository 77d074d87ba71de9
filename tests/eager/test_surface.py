"""The eager surface comes from one place (`eager/surface.py`): the registry entries' torch
names and the eager-only ops' `@export`. What it lists is what `sourcegrad`, `Tensor` and
numpy dispatch offer, and a name defined twice or an entry without its op is refused."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import ops
from sourcegrad.eager import numpy_dispatch, surface
from sourcegrad.eager.tensor import Tensor


def test_every_function_of_the_surface_is_exported():
    for name, op in surface.FUNCTIONS.items():
        assert getattr(sourcegrad, name) is op, name
        assert name in sourcegrad.eager.__all__, name


def test_every_method_of_the_surface_is_installed():
    for name, op in surface.METHODS.items():
        assert getattr(Tensor, name) is op, name


def test_numpy_dispatch_serves_the_surface():
    for fn in surface.NUMPY:
        table = numpy_dispatch.UFUNCS if isinstance(fn, np.ufunc) else numpy_dispatch.FUNCTIONS
        assert fn in table, fn


def test_registry_entries_name_their_ops():
    # a hand-written op (sum) and a made one (nanmean) get the names their entries give
    for entry_name, function in [("sum", "sum"), ("np_nanmean", "nanmean"), ("tanh", "tanh")]:
        entry = ops.get(entry_name)
        op = surface.IMPLEMENTED[entry_name]
        assert function in entry.torch.function and surface.FUNCTIONS[function] is op
        assert all(surface.METHODS[m] is op for m in entry.torch.method)
    assert surface.NUMPY[np.nanmean] is surface.IMPLEMENTED["np_nanmean"]
    assert surface.NUMPY[np.sum] is not surface.IMPLEMENTED["sum"]  # its numpy call form


def test_a_name_defined_twice_is_refused():
    with pytest.raises(ValueError, match="'sum' is defined twice"):
        surface.export("sum")(lambda input: input)


def test_an_entry_with_torch_names_and_no_op_is_refused(monkeypatch):
    entry = ops.get("np_nanmax")
    monkeypatch.setattr(entry, "torch", ops.Torch("NanmaxBackward0", ("nanmax",)))
    with pytest.raises(TypeError, match=r"\['np_nanmax'\] have torch names but no eager op"):
        surface.check()
