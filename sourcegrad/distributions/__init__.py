"""`sourcegrad.distributions`, as `torch.distributions`: probability distributions over the
eager Tensor, with reparameterised sampling (`rsample`), log densities, entropies and
closed-form KL divergences whose gradients flow to the parameters as torch's do.

One module per distribution, at torch's module paths (`distributions.normal.Normal`,
`distributions.kl.kl_divergence`, `distributions.constraints`, `distributions.transforms`),
so code written against torch.distributions imports the same names. Samples come from
sourcegrad's generator (`sourcegrad.manual_seed`): reproducible, but not torch's streams.

Imports: the eager surface (`sourcegrad`), numpy, and scipy.special when a gamma-family
sample is differentiated.
"""

from . import constraints, kl, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from .uniform import Uniform

__all__ = [
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "ComposeTransform",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "Gamma",
    "Independent",
    "Laplace",
    "LogNormal",
    "MixtureSameFamily",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Poisson",
    "SigmoidTransform",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "constraints",
    "kl",
    "kl_divergence",
    "register_kl",
    "transforms",
]
