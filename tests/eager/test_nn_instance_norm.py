"""nn.InstanceNorm1d/2d/3d and F.instance_norm against torch (float64).

Outputs, gradients wrt the input and the affine parameters, the running statistics after
training steps (momentum and the cumulative average), eval with and without tracked
statistics, unbatched inputs, state-dict keys and reprs, and torch's errors and warnings
(a channel count that does not match, a wrong rank, one spatial element, a pre-0.4
checkpoint's running statistics) must be torch's.
"""

import itertools
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(12)
INPUTS = {
    1: R.standard_normal((3, 4, 6)),
    2: R.standard_normal((3, 4, 5, 6)),
    3: R.standard_normal((2, 4, 3, 2, 3)),
}


def outcome(call):
    """What a call gives: its value, or its error's type and message; and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            value = f"{type(e).__name__}: {e}"
    return value, [str(w.message) for w in caught]


def program(lib, d, affine, track, momentum, unbatched):
    m = getattr(lib.nn, f"InstanceNorm{d}d")(
        4, affine=affine, track_running_stats=track, momentum=momentum, eps=1e-4
    ).double()
    if affine:
        with lib.no_grad():
            m.weight.copy_(lib.tensor([1.0, 2, 0.5, -1]))
            m.bias.copy_(lib.tensor([0.1, 0.2, 0.3, 0.4]))
    out = [" ".join(m.state_dict()), repr(m)]
    x = lib.tensor(INPUTS[d][0] if unbatched else INPUTS[d], requires_grad=True)
    for i in range(3):
        y = m(x * (i + 1))
        (y * y.detach().cos()).sum().backward()
    out += [y, x.grad, *m.state_dict().values(), *(p.grad for p in m.parameters())]
    m.eval()
    out.append(m(x))
    out += outcome(lambda: m(lib.tensor(INPUTS[d][:, :3])))
    out += outcome(lambda: m(lib.zeros(*([2] * (d + 3)))))
    m.train()
    out += outcome(lambda: m(lib.zeros(*([2, 4] + [1] * d)).double()))
    weight = lib.linspace(0.5, 2, 4).double()
    out.append(lib.nn.functional.instance_norm(lib.tensor(INPUTS[d]), weight=weight))
    return out


def assert_same(expected, got):
    assert len(expected) == len(got)
    for a, b in zip(expected, got):
        if isinstance(a, list):
            assert_same(a, b)
        elif isinstance(a, str):
            assert a == b
        elif a is None:
            assert b is None
        else:
            np.testing.assert_allclose(
                b.detach().numpy(), a.detach().numpy(), rtol=1e-9, atol=1e-12
            )


@pytest.mark.parametrize(
    "d, affine, track, momentum, unbatched",
    list(itertools.product((1, 2, 3), (False, True), (False, True), (0.1, None), (False, True))),
)
def test_instance_norm_matches_torch(d, affine, track, momentum, unbatched):
    args = (d, affine, track, momentum, unbatched)
    assert_same(program(torch, *args), program(sg, *args))


def test_old_checkpoint_running_stats_refused_as_torch():
    def load(lib):
        m = lib.nn.InstanceNorm2d(3)
        m.load_state_dict({"running_mean": lib.zeros(3), "running_var": lib.ones(3)})

    with pytest.raises(RuntimeError) as expected:
        load(torch)
    with pytest.raises(RuntimeError) as got:
        load(sg)
    assert str(got.value) == str(expected.value)
