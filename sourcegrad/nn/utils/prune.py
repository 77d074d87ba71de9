"""`nn.utils.prune`: torch's pruning of a module's parameters by masks, on the eager Tensor.

Pruning `name` of a module moves the parameter to `name_orig`, registers the buffer
`name_mask` (1 keeps an entry, 0 prunes it) and a forward pre-hook (the pruning method)
that sets the plain attribute `name = name_mask * name_orig` before every forward, so the
gradient reaches `name_orig` through the mask. Pruning the same parameter again combines
the masks in a `PruningContainer` (the new method only sees the entries, or channels, still
kept). `remove(module, name)` makes the pruning permanent: `name` is a parameter again,
holding the masked values. The methods and their arguments are torch's:
`l1_unstructured` (the `amount` smallest |w|), `random_unstructured`, `ln_structured`
(whole slices along `dim` with the smallest n-norm), `random_structured`,
`global_unstructured` (one threshold over several parameters), `custom_from_mask`,
`identity`; `amount` is a fraction in [0, 1] or a count. Random methods draw from
sourcegrad's generator, so their masks are not torch's draws; the others give torch's masks
for the same weights (barring ties in |w|).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ...eager import factories
from ...eager.tensor import Tensor
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


# --- amounts ----------------------------------------------------------------------------------


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _count_to_prune(amount, tensor_size):
    count = amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)
    if count > tensor_size:
        raise ValueError(
            f"amount={amount} should be smaller than the number of parameters to "
            f"prune={tensor_size}"
        )
    return count


def _validate_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {tuple(t.shape)} with {t.dim()} dims"
        )
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t, dim, kept):
    """A mask of t's shape, 1 on the slices `kept` (indices or booleans) along `dim`."""
    mask = factories.zeros_like(t)
    index = [slice(None)] * t.dim()
    index[dim] = kept
    mask[tuple(index)] = 1
    return mask


# --- the methods ------------------------------------------------------------------------------


class BasePruningMethod(ABC):
    """A pruning method: `compute_mask(t, default_mask)`; as a forward pre-hook it sets the
    pruned attribute from `name_orig` and `name_mask` before every forward."""

    _tensor_name: str
    PRUNING_TYPE = "unstructured"

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for tensor t, given the mask of the entries already pruned."""

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):  # noqa: C901
        """Prune `module.name` with this method (combined with an earlier pruning of it)."""
        previous = [
            (key, hook)
            for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name
        ]
        if len(previous) > 1:
            raise AssertionError(
                f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                f"{module}. Use a PruningContainer."
            )
        for key, _ in previous:
            del module._forward_pre_hooks[key]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if previous:
            old = previous[0][1]
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of {module}"
                )
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = factories.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # put the parameter back
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (the module is not touched)."""
        scores = importance_scores if importance_scores is not None else t
        if default_mask is None:
            default_mask = factories.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: `name` becomes a parameter holding the masked values."""
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning methods of one parameter: each new mask only prunes what the
    earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                f"Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                f"'{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            kept = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim if method.dim >= 0 else t.dim() + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {t.dim()}")
            others = [d for d in range(t.dim()) if d != dim]
            index = [slice(None)] * t.dim()
            index[dim] = default_mask.sum(dim=others) != 0  # the channels still kept
            kept = tuple(index)
        elif method.PRUNING_TYPE == "global":
            kept = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):  # type: ignore[override]
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries chosen at random."""

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count != 0:
            drawn = factories.rand_like(t).reshape(-1)
            mask.view(-1)[drawn.topk(count).indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of smallest absolute value."""

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count != 0:
            smallest = t.abs().reshape(-1).topk(count, largest=False).indices
            mask.view(-1)[smallest] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole slices along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        count = _count_to_prune(self.amount, t.shape[self.dim])
        if count == 0:
            return default_mask
        drawn = factories.rand(t.shape[self.dim])
        threshold = drawn.kthvalue(count).values
        return _channel_mask(t, self.dim, drawn > threshold) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` slices along `dim` of smallest n-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        count = _count_to_prune(self.amount, size)
        if count == 0:
            return default_mask
        dim = self.dim if self.dim >= 0 else t.dim() + self.dim
        others = [d for d in range(t.dim()) if d != dim]
        norm = t.norm(p=self.n, dim=others)
        kept = norm.topk(size - count, largest=True).indices
        return _channel_mask(t, dim, kept) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):  # type: ignore[override]
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError("the mask's shape must be the parameter's")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):  # type: ignore[override]
        return super().apply(module, name, mask=mask)


# --- the functions ----------------------------------------------------------------------------


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def _current_mask(module, name):
    mask = getattr(module, name + "_mask", None)
    return mask if isinstance(mask, Tensor) else factories.ones_like(getattr(module, name))


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs together: one method over their concatenation, so the
    `amount` smallest entries of all of them are pruned (per-parameter masks result)."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector(
        [importance_scores.get((m, name), getattr(m, name)) for m, name in parameters]
    )
    default_mask = parameters_to_vector([_current_mask(m, name) for m, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found '
            f"method {pruning_method} of type {method.PRUNING_TYPE}"
        )
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for m, name in parameters:
        param = getattr(m, name)
        custom_from_mask(m, name, mask=final_mask[start : start + param.numel()].view_as(param))
        start += param.numel()


def remove(module, name):
    """Make the pruning of `module.name` permanent (see `BasePruningMethod.remove`)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module) -> bool:
    """Whether `module` or one of its submodules has a pruned parameter."""
    return any(
        isinstance(hook, BasePruningMethod)
        for sub in module.modules()
        for hook in sub._forward_pre_hooks.values()
    )
