"""optim.SparseAdam (issue 38): sourcegrad has no sparse gradients (nn.Embedding(sparse=True)
is refused), so every gradient is dense and SparseAdam's step refuses it, as torch 2.13's does
for a dense gradient; its constructor checks are torch's."""

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.nn.unsupported import UnsupportedOptionError

torch = pytest.importorskip("torch")


def test_a_dense_gradient_is_refused_as_torch_refuses_it():
    for lib in (torch, sg):
        embedding = lib.nn.Embedding(5, 3)  # (dense: sparse=True is refused here)
        optimizer = lib.optim.SparseAdam(embedding.parameters(), lr=0.1)
        optimizer.step()  # (no gradient yet: nothing happens)
        before = embedding.weight.detach().clone()
        embedding(lib.tensor([1, 3])).sum().backward()
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            optimizer.step()
        np.testing.assert_array_equal(np.asarray(embedding.weight.detach()), np.asarray(before))


def test_sparse_embedding_gradients_are_refused_by_name():
    with pytest.raises(UnsupportedOptionError, match="sparse=True"):
        sg.nn.Embedding(5, 3, sparse=True)(sg.tensor([1]))


@pytest.mark.parametrize(
    "kwargs",
    [{"lr": 0.0}, {"eps": 0.0}, {"betas": (1.0, 0.999)}, {"betas": (0.9, -0.1)}],
)
def test_constructor_errors_are_torchs(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.SparseAdam([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        sg.optim.SparseAdam([sg.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_defaults_and_state_dict_are_torchs():
    ours = sg.optim.SparseAdam([sg.zeros(2, requires_grad=True)])
    theirs = torch.optim.SparseAdam([torch.zeros(2, requires_grad=True)])
    assert ours.defaults == theirs.defaults
    assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]
