"""`F.instance_norm`: normalise each (sample, channel) of an (N, C, *) input over its spatial
dims, as torch does it: a batch norm of the input viewed as (1, N * C, *).

Takes the input, optional running statistics and affine weight and bias of C elements,
`use_input_stats` (False: normalise by the running statistics), momentum and eps; returns
a tensor of the input's shape. As ATen's `instance_norm`, the weight and bias and the
running statistics are repeated N times for the batch norm, whose update of the repeated
statistics is then averaged over the N samples into the caller's buffers (written in place
without a graph). Gradients flow through F.batch_norm's node (NativeBatchNormBackward0).
"""

from __future__ import annotations

from ..eager.grad_mode import no_grad
from .norm_ops import batch_norm

__all__ = ["instance_norm"]


def _repeat(t, n):
    return None if t is None else t.repeat(n)


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """torch.nn.functional.instance_norm (see the module docstring)."""
    size = list(input.shape)
    if use_input_stats:
        spatial = 1
        for d in size[2:]:
            spatial *= d
        if spatial == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size "
                f"torch.Size({size})"
            )
    n, c = size[0], size[1]
    mean, var = _repeat(running_mean, n), _repeat(running_var, n)
    out = batch_norm(
        input.contiguous().reshape([1, n * c] + size[2:]),
        mean,
        var,
        _repeat(weight, n),
        _repeat(bias, n),
        use_input_stats,
        momentum,
        eps,
    )
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(mean.view(n, c).mean(0))
        if running_var is not None:
            running_var.copy_(var.view(n, c).mean(0))
    return out.view(size)
