"""Every differentiable registry entry has a forward-mode rule for each input it has a VJP for
(issue 19: "every rule has a JVP as well as its VJPs"), and the JVPs of the entries the
compiler's own tests do not reach (the torch ops of the eager mode) agree with central finite
differences of the entry's forward function.

A forward-mode rule is an explicit JVP, the VJP itself for an elementwise entry (its Jacobian
is diagonal), or a linearity mark (`Rule.linear`): "joint"/"multi", or a tuple of the inputs it
is linear in, which must then name every input with a VJP (forward mode treats the others as
piecewise constant, so a missing one would be a silent zero).
"""

import numpy as np
import pytest

from sourcegrad import ops
from sourcegrad.ops import registry


def _load_everything():
    """Register the entries of the optional families and of the eager nn modules."""
    pytest.importorskip("scipy.special")
    import scipy.stats  # noqa: F401

    import sourcegrad.nn  # noqa: F401  (convolution, pooling, batch norm, padding)

    registry.load_optional()


def forward_mode_gaps():
    """(entry, input) for each input with a VJP and no forward-mode rule."""
    gaps = []
    for name, op in sorted(ops.RULES.items()):
        if not op.differentiable or op.run_time_vjp:
            continue  # (run_time_vjp: a gradient called in the program: jvp_at_run_time)
        for i, vjp in enumerate(op.vjps):
            if vjp is None:
                continue
            if op.jvps:
                ok = op.jvp_for(i) is not None
            elif op.kind == "elementwise" or op.linear in ("joint", "multi"):
                ok = True
            else:
                ok = isinstance(op.linear, tuple) and i in op.linear
            if not ok:
                gaps.append((name, i))
    return gaps


def test_every_differentiable_entry_has_a_jvp():
    _load_everything()
    assert forward_mode_gaps() == []


R = np.random.default_rng(11)


def arr(*shape):
    return R.normal(size=shape)


# entry -> (its forward's arguments, the keyword arguments, the positions to perturb)
SAMPLES = {
    "softmax": ((arr(3, 4),), {"axis": 1}, (0,)),
    "log_softmax": ((arr(3, 4),), {"axis": 0}, (0,)),
    "logsumexp": ((arr(3, 4),), {"axis": 1, "keepdims": False}, (0,)),
    "vector_norm": ((arr(3, 4),), {"ord": 2, "axis": 1}, (0,)),
    "mse_loss": ((arr(3, 4), arr(3, 4)), {"reduction": "mean"}, (0, 1)),
    "addmm": ((arr(4), arr(3, 2), arr(2, 4)), {}, (0, 1, 2)),
    "fill_tensor": ((arr(3, 4), arr()), {}, (0, 1)),
    "smooth_l1_loss": ((arr(3, 4), arr(3, 4)), {"reduction": "sum", "beta": 0.7}, (0, 1)),
    "huber_loss": ((arr(3, 4), arr(3, 4)), {"reduction": "mean", "delta": 0.8}, (0, 1)),
    "binary_cross_entropy": (
        (R.uniform(0.1, 0.9, (3, 4)), R.uniform(0, 1, (3, 4))),
        {"reduction": "mean"},
        (0, 1),
    ),
    "binary_cross_entropy_with_logits": (
        (arr(3, 4), R.uniform(0, 1, (3, 4))),
        {"pos_weight": np.array([1.5, 0.5, 2.0, 1.0]), "reduction": "sum"},
        (0, 1),
    ),
    "cdist": ((arr(3, 2), arr(4, 2)), {"p": 3.0}, (0, 1)),
    "linalg_cross": ((arr(2, 3), arr(2, 3)), {}, (0, 1)),
    "batch_norm_train": ((arr(4, 3, 2), R.uniform(0.5, 2, 3), arr(3), 1e-5), {}, (0, 1, 2)),
    "embedding": ((arr(5, 3), np.array([[0, 4], [4, 2]])), {"padding_idx": 2}, (0,)),
    "layer_norm": (
        (arr(4, 3, 2), R.uniform(0.5, 2, (3, 2)), arr(3, 2), (1, 2), 1e-5),
        {},
        (0, 1, 2),
    ),
    "batch_norm_eval": (
        (arr(4, 3, 2), R.uniform(0.5, 2, 3), arr(3), arr(3), R.uniform(0.5, 2, 3), 1e-5),
        {},
        (0, 1, 2),
    ),
    "convolution": (
        (arr(2, 2, 5), arr(3, 2, 2), arr(3), (1,), (1,), (1,), False, (0,), 1),
        {},
        (0, 1, 2),
    ),
    "constant_pad": ((arr(2, 3), (1, 2)), {"value": 0.5}, (0,)),
    "resample": ((arr(2, 3), None, arr(4, 3)), {}, (0,)),
    "index_put": ((arr(5), arr(2), (np.array([1, 3]),)), {}, (0, 1)),
    "nll_loss": ((arr(3, 4), np.array([0, 3, 1])), {"reduction": "mean"}, (0,)),
    "unbind": ((arr(3, 2),), {"axis": 0}, (0,)),
    "lstm_layer": (
        (arr(3, 2, 3), arr(2, 4), arr(2, 4), arr(16, 3), arr(16, 4), arr(16), arr(16)),
        {},
        (0, 1, 2, 3, 4, 5, 6),
    ),
    "lstm_layer reversed": (
        (arr(3, 2, 3), arr(2, 4), arr(2, 4), arr(16, 3), arr(16, 4), arr(16), arr(16)),
        {"reverse": True},
        (0, 1, 2, 3, 4, 5, 6),
    ),
}


def _tangent_of(op, i, t, ans, args, kwargs):
    """The forward-mode derivative of `op` along input i's tangent t."""
    if op.jvps:
        return op.jvp_for(i)(t, ans, *args, **kwargs)
    if op.linear == "multi":  # linear in each input: the others stay
        return op.forward(*[t if j == i else a for j, a in enumerate(args)], **kwargs)
    assert isinstance(op.linear, tuple) and i in op.linear
    zeros = [np.zeros_like(a) if j in op.linear and j != i else a for j, a in enumerate(args)]
    zeros[i] = t
    return op.forward(*zeros, **kwargs)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_forward_mode_matches_finite_differences(name):
    _load_everything()
    op = ops.get(name.split()[0])
    args, kwargs, positions = SAMPLES[name]
    ans = op.forward(*args, **kwargs)
    eps = 1e-6
    for i in positions:
        t = R.normal(size=np.shape(args[i]))

        def at(step, i=i, t=t):
            moved = list(args)
            moved[i] = args[i] + step * t
            return op.forward(*moved, **kwargs)

        ours = _tangent_of(op, i, t, ans, args, kwargs)
        plus, minus = at(eps), at(-eps)
        if isinstance(ans, (list, tuple)):
            numeric = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
            for a, n in zip(ours, numeric):
                np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_allclose(
                ours, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-7, err_msg=f"{name}, input {i}"
            )


def test_the_readme_claims_no_more_functions_than_the_registry_has():
    """The table of docs/guide/supported.md (python -m sourcegrad.bench.coverage) never
    overstates the counts."""
    import pathlib
    import re

    from sourcegrad.bench import coverage

    _load_everything()
    readme = (pathlib.Path(__file__).parent.parent / "docs" / "guide" / "supported.md").read_text()
    claimed = {
        m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(r"^\s*\| ([\w.]+) \| (\d+) \| (\d+) \|$", readme, re.MULTILINE)
    }
    actual = coverage.counts()
    assert set(claimed) - {"total"} <= set(actual) and claimed
    # numpy 2.5 removed np.row_stack (vstack's alias), which the table's numpy counts
    removed = sum(not hasattr(np, name) for name in ("row_stack",))
    for module, (compiled, eager) in claimed.items():
        have = (
            actual[module]
            if module != "total"
            else tuple(sum(v[i] for v in actual.values()) for i in (0, 1))
        )
        slack = removed if module in ("numpy", "total") else 0
        assert compiled <= have[0] + slack and eager <= have[1], module
