"""A compiled nn.Embedding (compiled.lowering's embedding): the registry's `embedding`
entry, as eager's F.embedding, so its weight's gradient is eager's to the last bit (the
one-hot product's sums, where `weight[idx]`'s adjoint summed in float64) and torch's within
float32 rounding, repeated tokens included."""

import numpy as np
import pytest

real = pytest.importorskip("torch")  # (the oracle: the [oracle] extra)

import sourcegrad  # noqa: E402

nn = sourcegrad.nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(7, 5)
        self.out = nn.Linear(5, 3)

    def forward(self, tokens):
        return self.out(self.embed(tokens))


def _grads(model, tokens, weights):
    model.zero_grad(set_to_none=True)
    (model(tokens) * weights).sum().backward()
    return model.embed.weight.grad.numpy().copy(), model.out.weight.grad.numpy().copy()


def test_compiled_embedding_gradient_is_eagers_and_torchs():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 7, size=(4, 6))
    tokens[0, :3] = 2  # (a token repeated: its rows' gradients add up)
    weights = rng.normal(size=(4, 6, 3)).astype(np.float32)
    model = Tagger()
    compiled = sourcegrad.compile(model)
    t, w = sourcegrad.tensor(tokens), sourcegrad.tensor(weights)
    eager = _grads(model, t, w)
    mine = _grads(compiled, t, w)
    assert "embedding_grad" in compiled.source
    for a, b in zip(mine, eager):
        np.testing.assert_array_equal(a, b)
    ref = real.nn.Sequential()
    ref.embed = real.nn.Embedding(7, 5)
    ref.out = real.nn.Linear(5, 3)
    ref.load_state_dict({k: real.tensor(v.numpy()) for k, v in model.state_dict().items()})
    ref.zero_grad()
    (ref(real.tensor(tokens)) * real.tensor(weights)).sum().backward()
    np.testing.assert_allclose(mine[0], ref.embed.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine[1], ref.out.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
