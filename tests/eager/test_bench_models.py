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


def test_gelu_erf_as_torch():
    import numpy as np

    import sourcegrad as sg

    x = np.linspace(-6, 6, 1001)
    for dt in ("float32", "float64"):
        ours = sg.nn.functional.gelu(sg.tensor(x, dtype=getattr(sg, dt))).numpy()
        theirs = torch.nn.functional.gelu(torch.tensor(x, dtype=getattr(torch, dt))).numpy()
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
