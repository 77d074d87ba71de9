"""`sourcegrad.nn.utils`: gradient clipping, parameter/vector conversion, (`rnn`) packed
sequences, and the hook-based weight_norm and spectral_norm, as torch.nn.utils."""

from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from . import parametrizations, parametrize, prune, rnn
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]
