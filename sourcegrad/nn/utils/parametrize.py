"""`nn.utils.parametrize`: torch's parametrizations, a tensor of a module computed on access.

`register_parametrization(module, "weight", P)` moves the parameter (or buffer) to
`module.parametrizations.weight.original` and makes `module.weight` a property that returns
`P(original)` each time it is read, so the gradient reaches `original` through P; assigning
`module.weight = w` stores `P.right_inverse(w)` (when P has one). Several parametrizations
of one tensor chain (`parametrizations.weight[0]`, `[1]`, ...); a `right_inverse` returning
a sequence gives `original0`, `original1`, ... (as weight_norm's g and v). As in torch, the
module's class is replaced by a subclass `Parametrized<Class>` holding the properties, and
`remove_parametrizations` restores it (leaving the last value as a plain parameter, or the
original). Inside `with cached():` each parametrized tensor is computed once. The state
dict keys are torch's (`parametrizations.weight.original`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import contextmanager

from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]


class _Cache:
    """The values computed inside `cached()` blocks, keyed by (module id, tensor name)."""

    depth = 0
    values: dict = {}


@contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (reused by every access)."""
    _Cache.depth += 1
    try:
        yield
    finally:
        _Cache.depth -= 1
        if not _Cache.depth:
            _Cache.values.clear()


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_value(dest, src):
    """dest takes src's value (and shape), keeping its identity (torch's `set_`): an optimizer
    holding the parameter keeps training it."""
    dest.data = src.detach()


def _check_result(value, expected_dtype, expected_shape, what):
    if not isinstance(value, Tensor):
        raise ValueError(f"{what} must return a tensor. Got {type(value).__name__}.")
    if value.dtype != expected_dtype:
        raise ValueError(
            f"Registering a parametrization may not change the dtype of the tensor, unless "
            f"`unsafe` flag is enabled.\nunparametrized dtype: {expected_dtype}\n"
            f"parametrized dtype: {value.dtype}"
        )
    if value.shape != expected_shape:
        raise ValueError(
            f"Registering a parametrization may not change the shape of the tensor, unless "
            f"`unsafe` flag is enabled.\nunparametrized shape: {expected_shape}\n"
            f"parametrized shape: {value.shape}"
        )


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its unconstrained `original` (or originals)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: "
                    f"{new.dtype}"
                )
            if new is not original:
                with no_grad():
                    _set_value(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, original_i in enumerate(new):
                if not isinstance(original_i, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(original_i).__name__}."
                    )
                if isinstance(original, Parameter):
                    original_i = Parameter(original_i.detach(), original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", original_i)
        if not self.unsafe:
            _check_result(self(), original_dtype, original_shape, "A parametrization")

    def right_inverse(self, value):
        """Store `value`: the originals become the right inverses of the chain at value."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                        f"`original` has dtype {self.original.dtype}"
                    )
                _set_value(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    _set_value(getattr(self, f"original{i}"), tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy_parametrized(self, memo):
    # the instance's dict, copied; the class (made at run time) is kept as it is
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _refuse_pickling(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _inject_new_class(module):
    cls = module.__class__
    members: dict = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _deepcopy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _Cache.depth:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _Cache.values:
            _Cache.values[key] = parametrization()
        return _Cache.values[key]

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module, tensor_name=None) -> bool:
    """Whether `module` has a parametrization (on `tensor_name`, if given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make `module.tensor_name` the value of `parametrization` at an unconstrained original
    (see the module doc)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _check_result(x, y.dtype, y.shape, "A parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    _check_result(z, y.dtype, y.shape, "right_inverse")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo the parametrizations of `tensor_name`: it becomes a parameter (or buffer) again,
    holding its current parametrized value (or the original, leave_parametrized=False)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set_value(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
            "parametrized in terms of a sequence of tensors."
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before `register_parametrization` replaced it."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Give `to_module` the parametrizations of `from_module` (all, or `tensor_name`'s), with
    the originals' values."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                _set_value(target.original, source.original)
            else:
                for i in range(source.ntensors):
                    _set_value(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
