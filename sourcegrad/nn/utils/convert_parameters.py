"""`parameters_to_vector` (one flat tensor, differentiable) and `vector_to_parameters`
(each parameter's data becomes a slice of the vector, sharing its memory, as torch)."""

from ...eager.shape_ops import cat
from ...eager.tensor import Tensor
from ...optim.optimizer import typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_param_device):
    """-1 for the CPU, the GPU index otherwise; two different ones raise torch's TypeError."""
    here = param.get_device() if param.device.type == "cuda" else -1
    if old_param_device is not None and here != old_param_device:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported."
        )
    return here


def parameters_to_vector(parameters):
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.reshape(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].reshape(param.shape).data
        pointer += num_param
