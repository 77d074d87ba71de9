"""nn.CTCLoss / F.ctc_loss (issue 38) against torch 2.13 in float64: values and gradients for
every reduction, blank, zero_infinity, padded and concatenated targets, unbatched input; the
gradient through log_softmax against central finite differences; torch's errors."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
T, N, C = 7, 4, 5
LOGITS = R.normal(size=(T, N, C))
# repeated labels (2, 2), a single label, an empty target; the third input is too short for
# its target (1, 1, 1 needs 5 steps, it has 4): an infinite loss
PADDED = np.array([[1, 2, 2], [3, 1, 0], [1, 1, 1], [4, 0, 0]])
INPUT_LENGTHS = [7, 5, 4, 3]
TARGET_LENGTHS = [3, 2, 3, 0]
WEIGHTS = R.normal(size=N)


def _run(m, logits, targets, reduction, zero_infinity=False, blank=0, raw=False, lengths=None):
    """The loss and the gradient of (weighted) loss with respect to logits (or raw log_probs)."""
    x = m.tensor(logits, requires_grad=True)
    log_probs = x if raw else x.log_softmax(-1)
    loss = m.nn.functional.ctc_loss(
        log_probs,
        m.tensor(targets),
        INPUT_LENGTHS if lengths is None else lengths[0],
        TARGET_LENGTHS if lengths is None else lengths[1],
        blank=blank,
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    weights = m.tensor(WEIGHTS[: loss.numel()].reshape(tuple(loss.shape)))
    (grad,) = m.autograd.grad((loss * weights).sum(), [x])
    return np.asarray(loss.detach()), np.asarray(grad), loss.grad_fn.name()


def _agree(*args, **kwargs):
    ours, theirs = _run(sg, *args, **kwargs), _run(torch, *args, **kwargs)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-8, atol=1e-10)
    assert ours[2] == theirs[2]
    return ours


@pytest.mark.parametrize("zero_infinity", [True, False])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_padded_targets_match_torch(reduction, zero_infinity):
    loss = _agree(LOGITS, PADDED, reduction, zero_infinity)[0]
    if reduction == "none":
        assert (loss[2] == 0) if zero_infinity else np.isinf(loss[2])


def test_concatenated_targets_blank_and_raw_log_probs_match_torch():
    concatenated = np.concatenate([row[:n] for row, n in zip(PADDED, TARGET_LENGTHS)])
    _agree(LOGITS, concatenated, "mean", True)
    # blank=2: the labels avoid it
    _agree(LOGITS, np.where(PADDED == 2, 0, PADDED), "sum", True, blank=2)
    # on log_probs that are not a log_softmax, torch's formula (not the true derivative): the same
    _agree(R.normal(size=(T, N, C)), PADDED, "none", True, raw=True)


def test_unbatched_and_float32_match_torch():
    lengths = ([6], [2])
    for reduction in ("none", "mean"):
        _agree(LOGITS[:6, 0], np.array([3, 1]), reduction, lengths=lengths)
    ours = sg.nn.functional.ctc_loss(
        sg.tensor(LOGITS, dtype=sg.float32).log_softmax(2),
        sg.tensor(PADDED, dtype=sg.int32),
        sg.tensor(INPUT_LENGTHS),
        sg.tensor(TARGET_LENGTHS),
        zero_infinity=True,
    )
    theirs = torch.nn.functional.ctc_loss(
        torch.tensor(LOGITS, dtype=torch.float32).log_softmax(2),
        torch.tensor(PADDED, dtype=torch.int32),
        torch.tensor(INPUT_LENGTHS),
        torch.tensor(TARGET_LENGTHS),
        zero_infinity=True,
    )
    assert ours.dtype == sg.float32
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-5)


def test_module_matches_the_function():
    module = sg.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert module.blank == 0 and module.zero_infinity and module.reduction == "sum"
    x = sg.tensor(LOGITS).log_softmax(2)
    direct = sg.nn.functional.ctc_loss(
        x, sg.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS, reduction="sum", zero_infinity=True
    )
    assert float(module(x, sg.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS)) == float(direct)


def test_gradient_through_log_softmax_is_the_finite_difference():
    lengths = ([7, 5, 6, 3], [3, 2, 2, 0])  # (every loss finite)
    logits = R.normal(size=(T, N, C))
    _, grad, _ = _run(sg, logits, PADDED, "mean", lengths=lengths)

    def loss(value):
        found = sg.nn.functional.ctc_loss(
            sg.tensor(value).log_softmax(2), sg.tensor(PADDED), *lengths
        )
        return float(found) * WEIGHTS[0]  # (_run weighs the loss)

    eps = 1e-6
    numeric = np.zeros_like(logits)
    for i in np.ndindex(logits.shape):
        up, down = logits.copy(), logits.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=1e-8)


def test_second_derivative_is_refused_as_torch_does():
    x = sg.tensor(LOGITS, requires_grad=True)
    loss = sg.nn.functional.ctc_loss(
        x.log_softmax(2), sg.tensor(PADDED), [7, 5, 6, 3], [3, 2, 2, 0]
    )
    (grad,) = sg.autograd.grad(loss, [x], create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward"):
        grad.sum().backward()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"blank": 5},
        {"input_lengths": [7, 5, 6]},
        {"target_lengths": [3, 2]},
        {"input_lengths": [8, 5, 6, 3]},
        {"input_lengths": [-1, 5, 6, 3]},
        {"target_lengths": [4, 2, 2, 0]},
        {"target_lengths": [-1, 2, 2, 0]},
        {"targets": np.zeros((3, 3), np.int64)},
        {"targets": np.zeros(4, np.int64)},
        {"reduction": "average"},
        {"input_lengths": np.array([7.0, 5.0, 6.0, 3.0]), "target_lengths": np.array([3, 2, 2, 0])},
        {"input_lengths": np.array([7, 5, 6, 3])},
    ],
)
def test_errors_match_torch(kwargs):
    def call(m):
        arguments = {
            "targets": PADDED,
            "input_lengths": [7, 5, 6, 3],
            "target_lengths": [3, 2, 2, 0],
        }
        arguments.update(kwargs)
        for name in ("targets", "input_lengths", "target_lengths"):
            if isinstance(arguments[name], np.ndarray):
                arguments[name] = m.tensor(arguments[name])
        return m.nn.functional.ctc_loss(m.tensor(LOGITS).log_softmax(2), **arguments)

    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(sg)
    if theirs.type is not TypeError:  # (torch's TypeError lists its signatures)
        assert str(ours.value).split(" (while")[0] == str(theirs.value).split(" (while")[0]


def test_a_label_outside_the_classes_is_refused():
    # (torch reads past the classes and returns a number; here an error names the problem)
    with pytest.raises(RuntimeError, match="label range"):
        sg.nn.functional.ctc_loss(
            sg.tensor(LOGITS).log_softmax(2), sg.tensor(PADDED + 3), [7, 5, 6, 3], [3, 2, 2, 0]
        )
