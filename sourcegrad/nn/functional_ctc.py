"""`torch.nn.functional.ctc_loss`: the connectionist temporal classification loss.

The negative log likelihood of each target sequence is the alpha recursion over the target
with blanks between and around its labels, in log space (numpy, per batch element, vectorised
over the extended target). Its node, `CtcLossBackward0`, computes the gradient as torch's CPU
kernel does (`ctc_loss_backward_cpu_template`): with beta the same recursion run backwards,

    grad[t, c] = exp(log_probs[t, c]) - exp(logsumexp_{s: l'(s) = c}(alpha[t, s] + beta[t, s])
                                           + nll - log_probs[t, c])

times the incoming gradient, zero after an input's length and, with zero_infinity, for an
infinite loss. The first term is torch's: it is the gradient of the loss with respect to the
logits whose log_softmax log_probs is (it vanishes through log_softmax's backward, each time
step's softmax summing to 1), so through `log_softmax` the gradient is the true one (checked
against finite differences), and on raw log_probs it is torch's number. As torch's, the
backward does not differentiate again (under create_graph its result's node raises torch's
error). The reductions are eager ops after the node, as
torch composes them: `mean` divides each loss by its target length (at least 1) and
averages, `sum` adds.

Imports: numpy and the eager engine (`Tensor`, `Function`, grad mode, `NotImplementedNode`).
"""

from __future__ import annotations

import numpy as np

from ..eager.function import Function
from ..eager.grad_mode import STATE
from ..eager.node import NotImplementedNode
from ..eager.tensor import Tensor

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf
_CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


def _logsumexp(*terms):
    """Elementwise log(sum(exp(terms))) with -inf where every term is -inf (no NaN)."""
    stacked = np.stack(terms)
    top = stacked.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(stacked - safe).sum(axis=0)) + safe


def _extended(target, blank):
    """The target with a blank before, between and after its labels (2L + 1 entries), and
    where the skip from s - 2 to s is allowed (a label unlike the one two back)."""
    ext = np.full(2 * len(target) + 1, blank, np.int64)
    ext[1::2] = target
    skip = np.zeros(len(ext), bool)
    skip[2:] = ext[2:] != ext[:-2]
    skip[::2] = False  # (a blank never skips)
    return ext, skip


def _later(row, k):
    """row moved k places to the right (entry s is row[s - k]), -inf where nothing comes."""
    return np.concatenate((np.full(k, _NEG_INF), row))[: len(row)]


def _earlier(row, k):
    """row moved k places to the left (entry s is row[s + k]), -inf where nothing comes."""
    return np.concatenate((row, np.full(k, _NEG_INF)))[k:]


def _alpha(lp, ext, skip):
    """log alpha[t, s] for t < len(lp): the log probability of the prefixes ending at s."""
    n_time, n_ext = len(lp), len(ext)
    alpha = np.full((n_time, n_ext), _NEG_INF)
    alpha[0, :2] = lp[0, ext[:2]]
    for t in range(1, n_time):
        prev = alpha[t - 1]
        two_back = np.where(skip, _later(prev, 2), _NEG_INF)
        alpha[t] = _logsumexp(prev, _later(prev, 1), two_back) + lp[t, ext]
    return alpha


def _beta(lp, ext, skip):
    """log beta[t, s]: the log probability of the suffixes from s at t (lp[t] counted)."""
    n_time, n_ext = len(lp), len(ext)
    beta = np.full((n_time, n_ext), _NEG_INF)
    beta[-1, -2:] = lp[-1, ext[-2:]]
    # the skip into s + 2 is allowed where s + 2 may be reached from s
    skip_into = np.concatenate((skip, [False, False]))[2:]
    for t in range(n_time - 2, -1, -1):
        nxt = beta[t + 1]
        two_on = np.where(skip_into, _earlier(nxt, 2), _NEG_INF)
        beta[t] = _logsumexp(nxt, _earlier(nxt, 1), two_on) + lp[t, ext]
    return beta


def _nll(alpha, n_ext):
    last = alpha[-1]
    return -_logsumexp(last[n_ext - 1], last[n_ext - 2] if n_ext > 1 else _NEG_INF)


class _Problem:
    """The checked arguments in numpy: log_probs (T, N, C), one target array per batch
    element, the input lengths."""

    def __init__(self, log_probs, targets, input_lengths, target_lengths, blank):
        self.log_probs = np.asarray(log_probs._data)
        self.blank = blank
        n_time, batch, n_classes = self.log_probs.shape
        if not 0 <= blank < n_classes:
            raise RuntimeError("blank must be in label range")
        if len(input_lengths) != batch:
            raise RuntimeError("input_lengths must be of size batch_size")
        if len(target_lengths) != batch:
            raise RuntimeError("target_lengths must be of size batch_size")
        tg = np.asarray(targets._data).astype(np.int64)
        for length in target_lengths:
            if length < 0:
                raise RuntimeError(
                    f"Expected target_lengths to have value at least 0, but got value {length}"
                    + _CHECKING
                )
        if tg.ndim == 1:  # (concatenated)
            ends = np.cumsum(target_lengths)
            if len(ends) and ends[-1] != len(tg):
                raise RuntimeError(
                    f"Expected tensor to have size {ends[-1]} at dimension 0, but got "
                    f"size {len(tg)} for argument #2 'targets'" + _CHECKING
                )
            self.targets = [tg[end - n : end] for end, n in zip(ends, target_lengths)]
        else:
            if tg.shape[0] != batch:
                raise RuntimeError(
                    f"Expected tensor to have size {batch} at dimension 0, but got size "
                    f"{tg.shape[0]} for argument #2 'targets'" + _CHECKING
                )
            longest = max(target_lengths, default=0)
            if tg.shape[1] < longest:
                raise RuntimeError(
                    f"Expected tensor to have size at least {longest} at dimension 1, but got "
                    f"size {tg.shape[1]} for argument #2 'targets'" + _CHECKING
                )
            self.targets = [row[:n] for row, n in zip(tg, target_lengths)]
        for b, length in enumerate(input_lengths):
            if length < 0:
                raise RuntimeError(
                    f"Expected input_lengths to have value at least 0, but got value {length}"
                    + _CHECKING
                )
            if length > n_time:
                raise RuntimeError(
                    f"Expected input_lengths to have value at most {n_time}, but got value "
                    f"{length}" + _CHECKING
                )
            # (torch reads past the classes here; a wrong number is worse than an error)
            if len(self.targets[b]) and not (
                0 <= self.targets[b].min() <= self.targets[b].max() < n_classes
            ):
                raise RuntimeError(f"targets must be in label range [0, {n_classes})")
        self.input_lengths = list(input_lengths)

    def sequence(self, b):
        ext, skip = _extended(self.targets[b], self.blank)
        return self.log_probs[: self.input_lengths[b], b].astype(np.float64), ext, skip


class _CtcLoss(Function):
    """The per-sequence negative log likelihoods (N,), torch's `_ctc_loss`."""

    @staticmethod
    def forward(ctx, log_probs, problem, zero_infinity):
        nll = np.empty(log_probs._data.shape[1])
        for b in range(len(nll)):
            lp, ext, skip = problem.sequence(b)
            nll[b] = _nll(_alpha(lp, ext, skip), len(ext)) if len(lp) else np.inf
        ctx.problem, ctx.zero_infinity, ctx.nll = problem, zero_infinity, nll
        ctx.save_for_backward(log_probs)
        return Tensor._make(nll.astype(log_probs._data.dtype))

    @staticmethod
    def backward(ctx, grad):
        (log_probs,) = ctx.saved_tensors
        problem, nll = ctx.problem, ctx.nll
        g = np.asarray(grad._data)
        out = np.zeros(problem.log_probs.shape, np.float64)
        for b in range(len(nll)):
            lp, ext, skip = problem.sequence(b)
            if not len(lp) or (ctx.zero_infinity and np.isinf(nll[b])):
                continue
            both = _alpha(lp, ext, skip) + _beta(lp, ext, skip)
            # logsumexp over the extended positions s that carry each class c
            per_class = np.full(lp.shape, _NEG_INF)
            for c in np.unique(ext):
                per_class[:, c] = _logsumexp(*both[:, ext == c].T)
            with np.errstate(invalid="ignore", over="ignore"):
                out[: len(lp), b] = (np.exp(lp) - np.exp(per_class + nll[b] - lp)) * g[b]
        grad_log_probs = Tensor._make(out.astype(problem.log_probs.dtype))
        if STATE.enabled:  # (create_graph: the gradient depends on log_probs, torch refuses)
            edges = (log_probs._edge(), grad._edge())
            grad_log_probs._grad_fn = NotImplementedNode(edges, "aten::_ctc_loss_backward")
            grad_log_probs._requires_grad = True
        return grad_log_probs, None, None


# torch's node name (the class's own would read `_CtcLossBackward`)
_CtcLoss._backward_cls.__name__ = "CtcLossBackward0"
_CtcLoss._backward_cls.__qualname__ = "CtcLossBackward0"


def _lengths(lengths, name):
    if isinstance(lengths, Tensor):
        if lengths._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in np.asarray(lengths._data).reshape(-1)]
    if isinstance(lengths, int):
        raise TypeError(
            f"ctc_loss(): argument '{name}' must be tuple of ints, but found element of type int"
        )
    return [int(v) for v in lengths]


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """The CTC loss of log_probs (T, N, C) (or (T, C) unbatched), normally log_softmax's
    output, against targets (N, S) padded or (sum(target_lengths),) concatenated."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError(
            "ctc_loss() received an invalid combination of arguments: input_lengths and "
            "target_lengths must be both tuples of ints or both Tensors"
        )
    input_lengths = _lengths(input_lengths, "input_lengths")
    target_lengths = _lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    problem = _Problem(log_probs, targets, input_lengths, target_lengths, blank)
    losses = _CtcLoss.apply(log_probs, problem, zero_infinity)
    if zero_infinity:
        losses = losses.where(losses != np.inf, losses.new_zeros(()))
    if not batched:
        losses = losses.squeeze(0)
    if reduction == "mean":
        lengths = Tensor._make(np.maximum(np.asarray(target_lengths), 1).astype(losses._data.dtype))
        return (losses / lengths).mean()
    if reduction == "sum":
        return losses.sum()
    return losses
