"""Fixtures shared by the test suite.

`source_front_end_only`: gradients refuse what the source (AST) front end does not read,
instead of tracing it (`Gradient.traces_allowed`): for the tests of that front end's own
refusals and messages. `trace_front_end_only`: every gradient is made from a trace. `SOURCEGRAD_CHECK=1` in the environment makes every gradient's first
call per signature compare the two front ends (`grad(f, check=True)`).
"""

import pytest

from sourcegrad.api.gradient import Gradient


@pytest.fixture
def source_front_end_only(monkeypatch):
    monkeypatch.setattr(Gradient, "traces_allowed", False)


@pytest.fixture
def trace_front_end_only(monkeypatch):
    """Every gradient made from a trace (`Gradient.reads_source`): the trace front end's
    own behaviour, on functions the source front end reads as well."""
    monkeypatch.setattr(Gradient, "reads_source", False)


@pytest.fixture(autouse=True)
def _no_patch_leak(request):
    import numpy as np

    before = np.random.default_rng
    yield
    assert np.random.default_rng is before, f"patch leaked by {request.node.nodeid}"


@pytest.fixture(autouse=True)
def _cross_check_off_where_marked(request, monkeypatch):
    """Tests of how often a function runs or compiles (`no_cross_check`): the cross-check
    (SOURCEGRAD_CHECK=1) runs the function a second time, by design."""
    if request.node.get_closest_marker("no_cross_check") is not None:
        monkeypatch.delenv("SOURCEGRAD_CHECK", raising=False)
