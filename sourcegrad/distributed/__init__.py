"""`sourcegrad.distributed`: torch.distributed for one process.

sourcegrad has no communication backend, so a process group can hold only this process:
`init_process_group` checks its rendezvous as torch's env:// does (the same ValueError
when RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT is missing, torch's RuntimeError for
"nccl"), then accepts a world of size 1 and refuses a larger one. In that world the
collectives are what they are for one rank (all_reduce leaves the tensor as it is,
all_gather copies it, broadcast does nothing). Before `init_process_group` every query
and collective raises torch's "Default process group has not been initialized" ValueError.
So scripts that test `dist.is_available()` / `dist.is_initialized()`, or `RANK` in the
environment, before going distributed run unchanged on one process.
"""

from __future__ import annotations

import enum
import os
import warnings

from ..errors import SourcegradError

__all__ = [
    "ReduceOp",
    "GroupMember",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "new_group",
    "reduce",
    "reduce_scatter_tensor",
    "scatter",
]

_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


class DistributedNotSupportedError(SourcegradError, RuntimeError):
    """A process group of more than one process: sourcegrad has no communication backend."""


class ReduceOp:
    """The reduction of a collective (`ReduceOp.SUM`, ...), printed as torch prints it."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class ProcessGroup:
    """The group of one process that `init_process_group` makes."""

    def __init__(self, backend):
        self._backend = backend

    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1

    def name(self) -> str:
        return self._backend


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = -100


class _Work:
    """What a collective with async_op=True returns: already complete."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def is_available() -> bool:
    return True


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    """True: a group of one process under the name "gloo" is what sourcegrad runs."""
    return True


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def _world():
    if GroupMember.WORLD is None:
        raise ValueError(_NOT_INITIALIZED)
    return GroupMember.WORLD


def _env(name):
    value = os.environ.get(name)
    if value is None:
        raise ValueError(
            "Error initializing torch.distributed using env:// rendezvous: environment "
            f"variable {name} expected, but not set"
        )
    return value


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Join the default process group: one process only (see the module doc)."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = str(backend).lower() if backend is not None else "gloo"
    if name.startswith("nccl") and timeout is None:
        warnings.warn(
            "Attempted to get default timeout for nccl backend, but NCCL support is not compiled",
            stacklevel=2,
        )
    if store is None and init_method in (None, "env://"):
        rank = int(_env("RANK")) if rank == -1 else rank
        world_size = int(_env("WORLD_SIZE")) if world_size == -1 else world_size
        _env("MASTER_ADDR")
        _env("MASTER_PORT")
    if name.startswith("nccl"):
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name.startswith("mpi"):
        raise RuntimeError("Distributed package doesn't have MPI built in")
    if world_size not in (-1, 1) or rank not in (-1, 0):
        raise DistributedNotSupportedError(
            f"sourcegrad: a process group of {world_size} processes (this one rank {rank}) "
            "is not supported: sourcegrad has no communication backend, and runs "
            "torch.distributed for a single process (world_size=1, rank=0) only"
        )
    GroupMember.WORLD = ProcessGroup(name)


def destroy_process_group(group=None):
    if GroupMember.WORLD is None:
        raise AssertionError("Process group cannot be None")
    GroupMember.WORLD = None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, **kwargs):
    return _world()


def get_rank(group=None) -> int:
    _world()
    return 0


def get_world_size(group=None) -> int:
    _world()
    return 1


def get_backend(group=None) -> str:
    return _world().name()


def _done(async_op):
    return _Work() if async_op else None


def barrier(group=None, async_op=False, device_ids=None):
    _world()
    return _done(async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """One rank: the tensor is its own sum, mean, min and max."""
    _world()
    return _done(async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    _world()
    return _done(async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    _world()
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _world()
    if len(tensor_list) != 1:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for 1 rank")
    tensor_list[0].copy_(tensor)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _world()
    output_tensor.copy_(input_tensor.reshape(output_tensor.shape))
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    _world()
    output.copy_(input.reshape(output.shape))
    return _done(async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    _world()
    if gather_list is not None:
        gather_list[0].copy_(tensor)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    _world()
    if scatter_list is not None:
        tensor.copy_(scatter_list[0])
    return _done(async_op)


def all_gather_object(object_list, obj, group=None):
    _world()
    object_list[0] = obj


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    _world()
