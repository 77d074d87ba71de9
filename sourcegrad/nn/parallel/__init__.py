"""`nn.parallel`: DataParallel and DistributedDataParallel around a module, for one process.

`DataParallel(module)` runs the module (torch does the same without GPUs).
`DistributedDataParallel(module)` needs the default process group
(`sourcegrad.distributed.init_process_group`, a world of one process) and raises torch's
ValueError without it; with it, a step is the module's step (one rank: its gradients are
already the average). Both hold the module as `.module`, so their state_dict keys start
with "module.", as torch's.
"""

from __future__ import annotations

import contextlib

from ... import distributed as _dist
from ..modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
        **kwargs,
    ):
        super().__init__()
        self.process_group = process_group if process_group is not None else _dist._world()
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce for the block (nothing to skip on one rank)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
