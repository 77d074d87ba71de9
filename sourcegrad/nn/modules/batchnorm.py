"""BatchNorm1d/2d/3d: running statistics as buffers, momentum (None: cumulative average).

Buffers `running_mean` (zeros), `running_var` (ones) and `num_batches_tracked` (a 0-d
int64) when track_running_stats; parameters `weight` (ones) and `bias` (zeros) when
affine (no bias with bias=False). Training normalises by the batch's statistics and
updates the running ones; eval uses the running ones (the batch's when they are not
tracked), as torch.
"""

from __future__ import annotations

from ...eager import dtypes, factories
from .. import functional as F
from .. import init
from .module import Module
from .normalization import affine_parameters

__all__ = ["NormBase", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class NormBase(Module):
    """What BatchNorm and InstanceNorm share (torch's `_NormBase`): the affine parameters,
    the running-statistics buffers, their reset, repr and old-checkpoint loading."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        affine_parameters(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer(
                "running_mean", factories.zeros(num_features, device=device, dtype=dtype)
            )
            self.register_buffer(
                "running_var", factories.ones(num_features, device=device, dtype=dtype)
            )
            self.register_buffer(
                "num_batches_tracked", factories.tensor(0, dtype=dtypes.int64, device=device)
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (
            "{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
            "bias={use_bias}, track_running_stats={track_running_stats}".format(
                **self.__dict__, use_bias=self.bias is not None
            )
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed: keep the module's count
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (
                    self.num_batches_tracked
                    if self.num_batches_tracked is not None
                    else factories.tensor(0, dtype=dtypes.int64)
                )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


_NormBase = NormBase  # torch's name: code tests isinstance(m, batchnorm._NormBase)


class _BatchNorm(NormBase):
    """BatchNorm1d/2d/3d's forward (torch's `_BatchNorm`, which InstanceNorm is not)."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
