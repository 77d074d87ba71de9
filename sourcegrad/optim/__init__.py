"""`sourcegrad.optim`: torch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS) and
`lr_scheduler`, on the eager Tensor. See `optimizer` for the shared machinery."""

from . import lr_scheduler, swa_utils
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "LBFGS",
    "lr_scheduler",
    "swa_utils",
]
