"""Small helpers the update rules share: hyper-parameters as Python numbers, array modules."""

from ..eager import devices
from ..eager.tensor import Tensor


def to_scalar(x):
    """A hyper-parameter given as a 1-element Tensor, as a Python number (torch's _to_scalar)."""
    return x.item() if isinstance(x, Tensor) else x


def check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def sqrt(data):
    """Elementwise square root in data's own array module (numpy or CuPy)."""
    return devices.xp_of(data).sqrt(data)


def maximum(a, b, out=None):
    """Elementwise maximum in a's own array module (numpy or CuPy)."""
    return devices.xp_of(a).maximum(a, b, out=out)


def lerp_(data, end, weight):
    """data += weight * (end - data) in place, with the two formulas torch's lerp kernel uses."""
    if abs(weight) < 0.5:
        data += weight * (end - data)
    else:
        data[...] = end - (end - data) * (1 - weight)


def real_view(data):
    """A complex array seen as (real, imag) float pairs, like torch.view_as_real: the
    non-linear rules (squares, square roots) then act on each part, as torch's do."""
    if data.dtype.kind != "c":
        return data
    return data.view(data.real.dtype)
