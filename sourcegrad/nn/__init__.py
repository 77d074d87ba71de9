"""`sourcegrad.nn`: `Parameter` and `functional` (the eager library has no Module classes yet)."""
from . import functional
from .parameter import Parameter

__all__ = ["Parameter", "functional"]
from . import utils  # noqa: E402,F401 - nn.utils: clip_grad_norm_, parameters_to_vector, ...
