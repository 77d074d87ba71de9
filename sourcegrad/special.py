"""`sourcegrad.special`, as `torch.special`: the eager Tensor's special functions
(`sourcegrad.eager.special`, made from the registry's entries). erf, expit, exp2, expm1,
log1p, sinc, round, softmax, log_softmax and logsumexp are here at import; the rest (gammaln,
digamma, erfinv, i0, xlogy, ...) are scipy.special's rules, made on first use when scipy is
installed (importing sourcegrad never imports scipy).

Imports: the eager package only.
"""

from .eager.special import SPECIAL as _SPECIAL  # noqa: F401
from .eager.special import special_function as __getattr__  # noqa: F401

globals().update(_SPECIAL)


def __dir__():
    from .eager.special import load

    load()
    return sorted(set(globals()) | set(_SPECIAL))
