"""Replaying a rule template's recorded instantiation (sourcegrad.compiler.derive.template_replay) gives the
very code that evaluating the template again gives: compiled with replay and with every
template evaluated (shape_key patched to key nothing), the generated sources are equal, and
the replayed gradient matches central finite differences."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.bench import scaling
from sourcegrad.compiler.derive import templates

_BROADCASTS = """
def reductions(x, w, W):
    a = np.sum(x * w)
    b = np.sum(x * w + 1.0)
    c = np.mean(W @ x) * a
    d = np.mean(W @ x + w) * b
    e = (W @ x).T @ w / (1.0 + a * a)
    f = (W @ (x / 2.0)).T @ w / (1.0 + b * b)
    return a + b + c + d + e + f
"""


def _sources(fn, args, wrt, monkeypatch, make=sourcegrad.grad):
    replayed = make(fn, wrt=wrt)
    replayed.compile(args)
    evaluations = []
    evaluate = templates.Instantiator.evaluate
    with monkeypatch.context() as m:
        m.setattr(templates, "shape_key", lambda *a, **k: None)
        m.setattr(
            sourcegrad.api.memory_caches, "COMPILED", {}
        )  # (compiled again, not the code kept)
        m.setattr(
            templates.Instantiator,
            "evaluate",
            lambda self, *a: evaluations.append(1) or evaluate(self, *a),
        )
        evaluated = make(fn, wrt=wrt)
        evaluated.compile(args)
    assert len(evaluations) > 20  # every template evaluated
    return replayed, evaluated


def _jvp(fn, wrt):
    return sourcegrad.api.JVP(fn, (wrt,), False, "auto")  # (its source: jvp returns values)


@pytest.mark.parametrize("kind", ["straight", "nested", "broadcasts"])
def test_replay_generates_what_evaluation_generates(kind, tmp_path, monkeypatch):
    if kind == "straight":
        fn = scaling.load_function(scaling.straight_line_source(60), "chain", str(tmp_path))
        args, wrt = scaling.straight_line_args(), (0, 1, 2)
    elif kind == "nested":
        fn = scaling.load_function(scaling.nested_source(3), "nested", str(tmp_path))
        args, wrt = scaling.nested_args(), (0, 1)
    else:
        fn = scaling.load_function(_BROADCASTS, "reductions", str(tmp_path))
        args, wrt = scaling.straight_line_args(), (0, 1, 2)
    replayed, evaluated = _sources(fn, args, wrt, monkeypatch)
    assert replayed.source == evaluated.source
    got = replayed(*args)
    for pos in wrt:
        numeric = sourcegrad.api.numeric_grad(fn, args, pos)
        np.testing.assert_allclose(got[pos], numeric, rtol=1e-5, atol=1e-8)


def test_replay_in_forward_mode(tmp_path, monkeypatch):
    """JVP templates are replayed too (the instantiator in jvp_mode)."""
    fn = scaling.load_function(scaling.straight_line_source(30), "chain", str(tmp_path))
    args = scaling.straight_line_args()
    replayed, evaluated = _sources(fn, args, 0, monkeypatch, make=_jvp)
    assert replayed.source == evaluated.source


def test_long_function_replays_its_templates(tmp_path, monkeypatch):
    """Nearly every instantiation of a long function is a replay (what makes it fast)."""
    counts = {"replayed": 0, "all": 0}
    replay, template = templates.replay, templates.Instantiator.template

    def counting_replay(*a):
        counts["replayed"] += 1
        return replay(*a)

    def counting_template(self, *a):
        counts["all"] += 1
        return template(self, *a)

    monkeypatch.setattr(templates, "replay", counting_replay)
    monkeypatch.setattr(templates.Instantiator, "template", counting_template)
    fn = scaling.load_function(scaling.straight_line_source(200), "chain", str(tmp_path))
    sourcegrad.grad(fn, wrt=(0, 1, 2)).compile(scaling.straight_line_args())
    assert counts["all"] > 900 and counts["replayed"] >= 0.95 * counts["all"], counts
