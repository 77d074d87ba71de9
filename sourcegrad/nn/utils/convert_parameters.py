"""parameters_to_vector / vector_to_parameters: one flat vector for all parameters."""
from __future__ import annotations

from ...eager import shape_ops
from ...eager.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, old_param_device):
    device = param.get_device() if param.is_cuda else -1
    if old_param_device is None:
        return device
    if device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return old_param_device


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated (a differentiable function of them)."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_same_device(param, param_device)
        vec.append(param.reshape(-1))
    return shape_ops.cat(vec)


def vector_to_parameters(vec, parameters):
    """Replace each parameter's data by its slice of vec (no gradient through it, as torch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_same_device(param, param_device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
