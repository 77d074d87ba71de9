"""The composites written once (`nn/composites.py`, `ops/nn_layers.py`) give the compiled
module the eager layers' numbers exactly: the same operations in the same order, not a
second formula that agrees to rounding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import sourcegrad as torch
import sourcegrad.nn as nn


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(6)
        self.bn = nn.BatchNorm1d(6)
        self.gru = nn.GRU(6, 4)
        self.lstm = nn.LSTM(4, 3, proj_size=2)

    def forward(self, x):
        h = self.bn(self.ln(x).transpose(1, 2)).transpose(1, 2)
        out, _ = self.gru(h)
        out, _ = self.lstm(out)
        return out


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_a_compiled_module_computes_the_eager_layers_numbers_exactly(training):
    torch.manual_seed(0)
    eager = Stack().double().train(training)
    compiled_model = Stack().double().train(training)
    compiled_model.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_model)
    x = torch.randn(5, 2, 6, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a graph break would run it eagerly)
        out = compiled(x)
    expected = eager(x)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    for (name, p), q in zip(compiled_model.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(
            p.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-14, err_msg=name
        )


class Classifier(nn.Module):
    def __init__(self, reduction):
        super().__init__()
        self.fc = nn.Linear(5, 4)
        self.reduction = reduction

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(
            self.fc(x), y, ignore_index=2, reduction=self.reduction
        )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_a_compiled_cross_entropy_is_the_eager_one_exactly(reduction):
    """log_softmax then the registry's nll_loss, in both modes."""
    torch.manual_seed(0)
    model = Classifier(reduction).double()
    x = torch.randn(6, 5, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 2, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = torch.compile(model)(x, y)
    np.testing.assert_array_equal(out.detach().numpy(), model(x, y).detach().numpy())
