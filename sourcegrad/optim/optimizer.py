"""`Optimizer`: parameter groups, per-parameter state, `zero_grad`, `state_dict` as torch has them.

An optimizer takes an iterable of Tensors (e.g. `model.parameters()`) or of dicts
(parameter groups, each with its own options; missing options come from the
optimizer's defaults). Per-parameter state (`optimizer.state[p]`) holds Tensors,
as torch's does (`step` is a float32 scalar Tensor), so `state_dict()` has torch's
format: state keyed by the parameter's index in the groups, and `param_groups`
whose `params` are those indices. Subclasses implement `_update(p, grad, group)`
on numpy arrays, in the parameter's own dtype (torch's single-tensor formulas);
the base `step` calls it for every parameter with a gradient and bumps the
parameter's version counter, as torch's in-place update does. A subclass may update a
whole group at once (`_update_together`, Adam's: see `_together`), with the same numbers.
"""

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from ..eager.grad_mode import enable_grad, no_grad
from ..eager.hooks import add_hook
from ..eager.tensor import Tensor

__all__ = [
    "Optimizer",
    "required",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
]

_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) before every optimizer's step; a handle to remove it."""
    return add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) after every optimizer's step; a handle to remove it."""
    return add_hook(_global_step_post_hooks, hook)


def _with_step_hooks(step):
    """Run the global and per-optimizer step hooks around `step`, in torch's order: a pre
    hook may return (new_args, new_kwargs)."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        for pre_hook in [
            *_global_step_pre_hooks.values(),
            *self.__dict__.get("_optimizer_step_pre_hooks", {}).values(),
        ]:
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, "
                        f"new_kwargs), but got {result}."
                    )
        out = step(*args, **kwargs)
        for post_hook in [
            *self.__dict__.get("_optimizer_step_post_hooks", {}).values(),
            *_global_step_post_hooks.values(),
        ]:
            post_hook(self, args, kwargs)
        return out

    wrapper._with_step_hooks = True
    return wrapper


class _RequiredParameter:
    """Marks an option without a default (torch.optim.optimizer.required)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def typename(obj) -> str:
    """torch.typename: 'torch.FloatTensor' for a Tensor, 'module.Class' otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_step(value=0.0) -> Tensor:
    """The `step` counter as torch keeps it: a float32 0-d Tensor."""
    return Tensor._make(np.array(value, dtype=np.float32))


def state_like(p, fill=0.0) -> Tensor:
    """A state buffer of p's shape, dtype and device (torch.full_like(p, fill))."""
    data = p._data
    out = data.copy()
    out[...] = fill
    return Tensor._make(out)


def bump(step: Tensor) -> float:
    """`step_t += 1; step = step_t.item()` on the float32 counter."""
    step._data += np.float32(1)
    return float(step._data)


class Optimizer:
    """Base class: parameter groups with their hyper-parameters, per-parameter state."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_with_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params, defaults):
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                "Tensors or dicts, but got " + typename(params)
            )
        param_groups = list(params)  # TypeError "'int' object is not iterable", as torch
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            self.__dict__.setdefault(name, OrderedDict())

    # --- hooks: each register_* returns a handle whose remove() unregisters the hook ---------

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after step."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, before state_dict() builds the dict."""
        return _add_ordered(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a replacement state dict."""
        return _add_ordered(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a replacement, before loading."""
        return _add_ordered(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, after loading."""
        return _add_ordered(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (the rest from `defaults`)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, "
                "but the ordering of tensors in sets will change between runs. "
                "Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        # named parameters: (name, tensor) pairs, as model.named_parameters() gives
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError(
                    "all optimizer params should be with/without names. "
                    "Some param names are missing"
                )
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + typename(param)
                )
            if not self.defaults.get("differentiable", None) and not (
                param.is_leaf or param.retains_grad
            ):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required "
                    f"optimization parameter {name}"
                )
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; see "
                "github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the gradients (`set_to_none=True`) or zero them in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g._grad_fn is not None:
                        p._grad = g = g.detach()
                    else:
                        g.requires_grad_(False)
                    g._data[...] = 0

    @_with_step_hooks
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure()'s loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p._grad is not None]
                for p in params:
                    if getattr(p._grad, "is_sparse", False):
                        raise RuntimeError(
                            f"{type(self).__name__} does not support sparse gradients"
                        )
                for p in self._update_together(group, params):
                    self._update(p, p._grad._data, group)
                for p in params:
                    p._get_vc().value += 1
        return loss

    def _update(self, p, grad, group):
        """Update p._data in place from grad (an array); state is self.state[p]."""
        raise NotImplementedError

    def _update_together(self, group, params):
        """Update some of the group's `params` (those with a gradient) at once; return the
        others, for `_update` to take one by one (see `_together`)."""
        return params

    # --- state dicts ------------------------------------------------------------------------

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}, as torch.

        The state's Tensors are the optimizer's own (not copies), as in torch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a `state_dict()`: options per group, and copies of the state cast to each
        parameter's dtype and device (`step` stays as saved), as torch does."""
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match "
                "the size of optimizer's group"
            )
        id_map = {}
        for g, s in zip(groups, saved_groups):
            id_map.update(zip(s["params"], g["params"]))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _cast(param, value, key) for key, value in v.items()}
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)


def _add_ordered(hooks, hook, prepend):
    handle = add_hook(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _cast(param, value, key=None):
    """A copy of a saved state value, its Tensors on param's device (and in param's
    floating dtype, except `step`)."""
    if isinstance(value, Tensor):
        data = value._data
        if key != "step" and param._data.dtype.kind in "fc":
            data = data.astype(param._data.dtype)
        else:
            data = data.copy()
        if type(data) is not type(param._data):  # numpy <-> CuPy
            return Tensor._make(data).to(param.device)
        return Tensor._make(data)
    if key == "step" and isinstance(value, (int, float)):
        return scalar_step(value)  # a pre-2.0 int step
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value
