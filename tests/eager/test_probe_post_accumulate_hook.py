"""register_post_accumulate_grad_hook against torch: a hook that returns something (a
`p.grad.mul_(2)` written as the hook's value) is an error in torch, not silently ignored."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_X = np.array([1.5, -2.0, 3.0])


def _run(lib, hook):
    x = lib.tensor(_X, requires_grad=True)
    x.register_post_accumulate_grad_hook(hook)
    (x * x).sum().backward()
    return x.grad.numpy()


def test_a_hook_returning_a_value_raises_as_torch():
    with pytest.raises(RuntimeError) as want:
        _run(torch, lambda p: p.grad.mul_(2))
    with pytest.raises(RuntimeError) as got:
        _run(sg, lambda p: p.grad.mul_(2))
    assert str(got.value) == str(want.value)


def test_a_hook_returning_none_changes_grad_in_place_as_torch():
    def hook(p):
        p.grad.mul_(2)

    np.testing.assert_allclose(_run(sg, hook), _run(torch, hook), rtol=1e-15)
