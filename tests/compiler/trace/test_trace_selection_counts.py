"""The length of a selection by a boolean mask, read by a traced function (`len(x[x > 0])`,
`.shape`, `.size`): the data decide it, not the signature, so the trace
records it and guards it (`Recorder.fact`). Before, the trace's count was a constant of the
code, and a call on data selecting another count returned a silently wrong gradient (the
mean of the positive elements: 1/3 where 1/4 was due). Each function here is compiled once
and called on inputs whose masks select different counts, each gradient checked against
central finite differences; shapes the signature fixes stay unguarded.
"""

import copy

import numpy as np
import pytest

import sourcegrad
from sourcegrad.bench import layers

from .test_trace_frontend import numeric
from .test_trace_rolling import Weights


def by_len(x, w):
    p = Weights(w)
    kept = x[x > 0]
    return np.sum(kept * p.w) / (len(kept) + 1)


def by_shape(x, w):
    p = Weights(w)
    kept = x[x > 0.5] * p.w
    return np.sum(kept**2) / (kept.shape[0] + 1.0)


def by_size(x, w):
    p = Weights(w)
    kept = np.exp(x[x < 0]) * p.w  # (computed from a selection: its shape is the data's too)
    return np.sum(kept) * kept.size


def by_np_shape(x, w):
    p = Weights(w)
    kept = x[x > 0]  # (np.shape and np.size are ops of the code: computed, never guarded)
    return np.sum(np.sin(kept * p.w)) / (np.shape(kept)[0] + np.size(kept) + 1)


def of_a_selection(x, w):
    p = Weights(w)
    kept = x[x > -0.5]
    again = kept[kept < 0.5] * p.w  # (a selection of a selection)
    return np.sum(again**2) / (len(again) + 2)


def by_a_given_mask(x, m, w):
    p = Weights(w)
    kept = x[m] * p.w  # (a mask the caller gives: its count is the caller's data)
    return np.sum(kept**2) / (len(kept) + 1)


INPUTS = [
    np.array([1.0, -1.0, 2.0, 0.3, -0.2]),
    np.array([1.0, 1.5, 2.0, 0.7, 0.2]),
    np.array([-1.0, -1.5, 0.1, -0.7, -0.2]),
]


@pytest.mark.parametrize(
    "fn", [by_len, by_shape, by_size, by_np_shape, of_a_selection], ids=lambda f: f.__name__
)
def test_a_selections_length_is_the_datas_on_every_call(fn):
    g = sourcegrad.grad(fn)
    for x in INPUTS:
        got = g(x.copy(), 0.7)
        np.testing.assert_allclose(got, numeric(fn, (x, 0.7)), rtol=1e-6, atol=1e-8)
    assert ("trace_guard(" in g.source) is (fn is not by_np_shape)


def test_the_length_of_a_selection_by_a_mask_the_caller_gives():
    g = sourcegrad.grad(by_a_given_mask)
    x = INPUTS[0]
    for m in (x > 0, x > -5.0, np.array([True, False, False, False, False])):
        got = g(x.copy(), m, 0.7)
        np.testing.assert_allclose(got, numeric(by_a_given_mask, (x, m, 0.7)), rtol=1e-6)


def test_shapes_the_signature_fixes_are_not_guarded():
    """The LSTM's step reads `prev_h.shape[1]`, its stable sigmoid writes through masks: a
    write through a mask keeps the array's shape, so nothing there is guarded."""
    size = type("Size", (), {"params": dict(n=3, t=3, d=3, h=2)})
    args = layers.lstm_args(np.random.default_rng(0), size)
    g = sourcegrad.grad(layers.lstm, wrt=(0, 1, 2))
    for got, hand in zip(g(*copy.deepcopy(args)), layers.lstm_hand(*args)):
        np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-14)
    assert "trace_guard(" not in g.source


# A call with no rule on values no gradient flows through runs in the generated code
# (`np.unique`): its result is as long as the data make it, so its length read by the trace is
# guarded too. Before, `len(np.unique(np.floor(w)))` was the first call's count on every call
# (a silently wrong gradient), and np.unique's pair (`return_inverse=True`) raised an
# AttributeError inside the trace.
def by_len_of_unique(x, w):
    n = len(np.unique(np.floor(x * 2.0)))
    return np.sum(x[:n] ** 2) * w


def by_shape_of_unique(x, w):
    u = np.unique(np.floor(x * 2.0))
    return np.sum(np.sin(x[: u.shape[0]])) * w


def by_unique_inverse(x, w):
    _, inverse = np.unique(np.floor(x * 2.0), return_inverse=True)
    return np.sum(x**2 * inverse) * w + len(_) * np.sum(x)


@pytest.mark.parametrize(
    "fn", [by_len_of_unique, by_shape_of_unique, by_unique_inverse], ids=lambda f: f.__name__
)
def test_the_length_of_a_result_of_a_call_with_no_rule_is_the_datas(fn):
    g = sourcegrad.grad(fn)
    counts = set()
    for x in INPUTS:
        x = x + 0.13  # (off floor's steps: finite differences across one are not a slope)
        counts.add(len(np.unique(np.floor(x * 2.0))))
        got = g(x.copy(), 0.7)
        np.testing.assert_allclose(got, numeric(fn, (x, 0.7)), rtol=1e-6, atol=1e-8)
    assert len(counts) > 1  # (the inputs do give other counts)
    assert "trace_guard(" in g.source
