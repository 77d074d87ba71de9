"""nn.AdaptiveLogSoftmaxWithLoss (issue 38) against torch 2.13 in float64: a torch state_dict
loads (same names and shapes), forward's (output, loss), the gradients of every parameter and
of the input, log_prob, predict (shortlist, clusters and a mix), unbatched input, and torch's
errors; the input gradient against central finite differences."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
X = R.normal(size=(9, 16))
TARGET = np.array([0, 3, 5, 11, 19, 12, 4, 7, 15])  # (shortlist, first and second cluster)


def _pair(head_bias=True, bias_value=None):
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(
        16, 20, [5, 12], div_value=2.0, head_bias=head_bias
    )
    theirs = theirs.double()
    if bias_value is not None:
        with torch.no_grad():
            theirs.head.bias.copy_(torch.tensor(bias_value))
    ours = sg.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 12], div_value=2.0, head_bias=head_bias)
    ours = ours.double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("head_bias", [True, False])
def test_forward_and_gradients_match_torch(head_bias):
    ours, theirs = _pair(head_bias)
    x, y = sg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    found, expected = ours(x, sg.tensor(TARGET)), theirs(y, torch.tensor(TARGET))
    assert type(found).__name__ == "_ASMoutput" and found._fields == ("output", "loss")
    _close(found.output, expected.output)
    _close(found.loss, expected.loss)
    found.loss.backward()
    expected.loss.backward()
    _close(x.grad, y.grad)
    for (name, p), (their_name, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == their_name and tuple(p.shape) == tuple(q.shape)
        _close(p.grad, q.grad)


def test_log_prob_and_predict_match_torch():
    # head biases that send the best of some rows, or all, to the clusters
    for bias in (None, [0, 0, 0, 0, 0, 3.0, 0], [-9.0] * 5 + [2.0, 2.0]):
        ours, theirs = _pair(bias_value=bias)
        _close(ours.log_prob(sg.tensor(X)), theirs.log_prob(torch.tensor(X)))
        assert ours.predict(sg.tensor(X)).tolist() == theirs.predict(torch.tensor(X)).tolist()
    log_prob = ours.log_prob(sg.tensor(X))
    np.testing.assert_allclose(np.exp(np.asarray(log_prob.detach())).sum(1), 1.0, rtol=1e-12)


def test_unbatched_input_matches_torch():
    ours, theirs = _pair()
    found = ours(sg.tensor(X[0]), sg.tensor(TARGET[4]))
    expected = theirs(torch.tensor(X[0]), torch.tensor(TARGET[4]))
    assert tuple(found.output.shape) == tuple(expected.output.shape) == ()
    _close(found.output, expected.output)


def test_input_gradient_is_the_finite_difference():
    ours, _ = _pair()
    x = sg.tensor(X, requires_grad=True)
    ours(x, sg.tensor(TARGET)).loss.backward()
    eps = 1e-6
    for i in [(0, 0), (3, 5), (4, 15), (8, 2)]:
        up, down = X.copy(), X.copy()
        up[i] += eps
        down[i] -= eps
        with sg.no_grad():
            numeric = (
                float(ours(sg.tensor(up), sg.tensor(TARGET)).loss)
                - float(ours(sg.tensor(down), sg.tensor(TARGET)).loss)
            ) / (2 * eps)
        assert abs(numeric - float(x.grad[i])) < 1e-8


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(16, 20, []),
        lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [12, 5]),
        lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 20]),
        lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 5]),
    ],
)
def test_bad_cutoffs_raise_as_torch(build):
    with pytest.raises(ValueError) as theirs:
        build(torch)
    with pytest.raises(ValueError) as ours:
        build(sg)
    assert str(ours.value) == str(theirs.value).replace("  ", " ")


@pytest.mark.parametrize(
    "x, target",
    [
        (X, TARGET[:5]),
        (X[None], TARGET),
        (X, np.array([[1]])),
        (X, np.where(TARGET == 19, 20, TARGET)),
        (X, np.array(3)),
    ],
)
def test_bad_inputs_raise_as_torch(x, target):
    ours_module, theirs_module = _pair()
    with pytest.raises(RuntimeError) as theirs:
        theirs_module(torch.tensor(x), torch.tensor(target))
    with pytest.raises(RuntimeError) as ours:
        ours_module(sg.tensor(x), sg.tensor(target))
    assert str(ours.value) == str(theirs.value)
