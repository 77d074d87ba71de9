"""A traced function that changes an object outliving the call is refused, never silently
run once.

The code made from a trace repeats only its numpy operations: a `HIST.append(...)`, a
`self.calls += 1`, a `cache["k"] = v` happened at the trace and never again (HIST stayed one
entry long over 51 calls). Each form is refused here, naming the object and the user's line,
with the user's state put back; the source front end refuses the same statements (checked
too, with the trace turned off), and what the function builds locally is still traced.
"""

import functools

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad

X = np.array([0.3, -1.2, 0.8])

HIST: list = []
SEEN: set = set()
CACHE: dict = {}
NESTED = {"log": []}


class Counter:
    def __init__(self):
        self.n = 0
        self.log = []


class Slotted:
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


class Registry:
    count = 0


COUNTER = Counter()
SLOTTED = Slotted()


def _loss(x):
    return np.sum(np.sin(x) ** 2)


def appends_a_number(x):
    HIST.append(x.shape[0])  # (not a gradient's value: it was traced and kept once)
    return _loss(x)


def appends_an_array(x):
    HIST.append(x)
    return _loss(x)


def adds_to_a_set(x):
    SEEN.add(len(SEEN))
    return _loss(x)


def stores_in_a_dict(x):
    CACHE["k"] = x * 2.0
    return _loss(x)


def appends_in_a_nested_list(x):
    NESTED["log"].append(1)
    return _loss(x)


def counts_on_a_slotted_object(x):
    SLOTTED.n += 1
    return _loss(x)


def counts_on_a_class(x):
    Registry.count += 1
    return _loss(x)


def logs_on_an_object(x):
    COUNTER.log.append(2)
    return _loss(x)


def _records(x):
    HIST.append(3)
    return x


def appends_in_a_helper(x):
    try:  # (`try` is traced)
        return _loss(_records(x))
    except KeyError:
        return 0.0


class Model:
    def __init__(self):
        self.calls = 0
        self.seen = []
        self.w = np.ones(3)

    def __call__(self, x):
        self.seen.append(x)
        return np.sum(self.w * x**2)


def _closure():
    log = []

    def loss(x):
        log.append(1)
        return _loss(x)

    return loss, log


CASES = [
    (appends_a_number, "the list HIST", "HIST.append(x.shape[0])"),
    (appends_an_array, "the list HIST", "HIST.append(x)"),
    (adds_to_a_set, "the set SEEN", "SEEN.add(len(SEEN))"),
    (stores_in_a_dict, "the dict CACHE", 'CACHE["k"] = x * 2.0'),
    (appends_in_a_nested_list, "the list NESTED['log']", 'NESTED["log"].append(1)'),
    (counts_on_a_slotted_object, "'n' of a Slotted object", "SLOTTED.n += 1"),
    (counts_on_a_class, "'count' of the class Registry", "Registry.count += 1"),
    (logs_on_an_object, "the list COUNTER.log", "COUNTER.log.append(2)"),
    (appends_in_a_helper, "the list HIST", "HIST.append(3)"),
]


def _state():
    return (list(HIST), set(SEEN), dict(CACHE), list(NESTED["log"]), SLOTTED.n, Registry.count)


@pytest.mark.parametrize("fn, what, line", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_change_to_an_outside_object_is_refused_named_located_and_put_back(fn, what, line):
    before = _state()
    with pytest.raises(errors.OutsideChangeError, match="changes") as raised:
        _traced(fn)(X)
    assert what in str(raised.value)
    assert raised.value.loc.text.strip().startswith(line)
    assert raised.value.loc.file == __file__
    assert _state() == before and COUNTER.log == []


@pytest.mark.parametrize("fn, what, line", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_source_front_end_refuses_them_too_or_the_trace_does(fn, what, line):
    # (the default path: the source front end's refusal sends the call to the trace)
    before = _state()
    with pytest.raises(errors.SourcegradError):
        sourcegrad.grad(fn)(X)
    assert _state() == before


def test_a_callable_object_appending_its_inputs_is_refused():
    model = Model()
    with pytest.raises(errors.UnsupportedSyntaxError, match="the list self.seen") as raised:
        sourcegrad.grad(model)(X)
    assert raised.value.loc.text.strip() == "self.seen.append(x)"
    assert model.seen == [] and model.calls == 0


def test_a_closure_list_appended_to_is_refused():
    loss, log = _closure()
    with pytest.raises(errors.UnsupportedSyntaxError, match="the list log") as raised:
        _traced(loss)(X)
    assert raised.value.loc.text.strip() == "log.append(1)"
    assert log == []


def _traced(fn):
    """fn's gradient by the trace front end (as for a callable object)."""
    g = sourcegrad.grad(fn)
    g.reads_source = False
    return g


class Lazy:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])

    @functools.cached_property
    def scale(self):
        return 2.0

    def __call__(self, x):
        built = {"k": []}  # (built by the call: changed freely)
        built["k"].append(x)
        return np.sum(self.w * built["k"][0] ** 2) * self.scale


def test_what_the_call_builds_and_a_cached_property_are_not_refused():
    model = Lazy()
    g = sourcegrad.grad(model)
    for _ in range(3):
        np.testing.assert_allclose(g(X), numeric_grad(model, (X,), 0), rtol=1e-6, atol=1e-9)
    assert g.traced


@pytest.mark.parametrize("fn, what, line", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_source_front_end_alone_refuses_them(fn, what, line):
    before = _state()
    g = sourcegrad.grad(fn)
    g.traces_allowed = False
    with pytest.raises(errors.SourcegradError):
        g(X)
    assert _state() == before


class Box:
    n = 0


BOX = Box()


def counts_by_setattr(x):
    setattr(BOX, "n", BOX.n + 1)  # noqa: B010 (the form tested)
    return _loss(x)


def test_the_source_front_end_makes_a_setattr_on_every_call():
    g = sourcegrad.grad(counts_by_setattr)
    for _ in range(4):
        np.testing.assert_allclose(g(X), numeric_grad(_loss, (X,), 0), rtol=1e-6, atol=1e-9)
    assert not g.traced and BOX.n == 4
    with pytest.raises(errors.UnsupportedSyntaxError, match="'n' of a Box object"):
        _traced(counts_by_setattr)(X)  # (the trace would make it once: refused)
    assert BOX.n == 4
