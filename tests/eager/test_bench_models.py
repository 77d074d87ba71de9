"""The eager benchmark's models (bench/eager_models.py): the same lines run by torch, by
sourcegrad eagerly and by `sourcegrad.compile(model)` give the same first losses (the
benchmark times steps that compute the same thing). Timing is the benchmark's, not here."""

import pytest

torch = pytest.importorskip("torch")

from sourcegrad.bench import eager  # noqa: E402


@pytest.mark.parametrize("name", ["MLP", "LSTM LM", "GPT"])
def test_the_three_variants_train_alike(name):
    variants = eager.step_variants(name, torch)
    losses = {v: loss for v, (_, loss) in variants.items()}
    for v in ("eager", "compiled"):
        assert losses[v] == pytest.approx(losses["torch"], rel=1e-5), losses
    for fn, _ in variants.values():  # a second step (after the optimizer's first) runs too
        fn()


def test_gelu_is_one_node_as_torchs():
    """F.gelu is one registry entry (GeluBackward0, torch's node), float32's normal CDF from
    erfc in float32 arithmetic: values and gradients as torch's to 1e-6."""
    import numpy as np

    import sourcegrad as sg

    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, 1e-30, -1e-30, -np.inf]])
    for dt in ("float32", "float64"):
        res = []
        for lib in (torch, sg):
            t = lib.tensor(x, dtype=getattr(lib, dt), requires_grad=True)
            y = lib.nn.functional.gelu(t)
            y.backward(lib.ones_like(y))
            res.append((y.detach().numpy(), t.grad.numpy(), type(y.grad_fn).__name__))
        (y0, g0, n0), (y1, g1, n1) = res
        assert n0 == n1 == "GeluBackward0" and y1.dtype == y0.dtype
        np.testing.assert_allclose(y1, y0, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(g1, g0, rtol=1e-6, atol=1e-6)
