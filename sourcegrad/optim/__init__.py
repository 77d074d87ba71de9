"""`sourcegrad.optim`: torch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS,
Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, Adafactor; SparseAdam refuses dense gradients,
the only kind here, as torch does) and `lr_scheduler`, on the eager Tensor.
See `optimizer` for the shared machinery."""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "Optimizer",
    "SGD",
    "SparseAdam",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "LBFGS",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "Adafactor",
    "lr_scheduler",
    "swa_utils",
]
