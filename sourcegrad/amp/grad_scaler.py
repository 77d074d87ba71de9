"""`GradScaler`: loss scaling for mixed precision, with torch's API and torch's arithmetic.

Disabled (`enabled=False`, or `device="cuda"` without a CUDA device: torch's warning) it
passes everything through: `scale(x)` is x, `step(opt)` is `opt.step()`, `update()` does
nothing, `get_scale()` is 1.0, `state_dict()` is {}. Enabled, `scale` multiplies by the
scale (a float32 0-d tensor, 2**16 at first), `unscale_` multiplies the optimizer's
gradients by its reciprocal and records whether any is inf or nan, `step` skips the
optimizer step then, and `update` backs the scale off after a skipped step or grows it
after `growth_interval` clean ones, as torch's `_amp_update_scale_`.
"""

from __future__ import annotations

import enum
import warnings
from collections import abc, defaultdict

import numpy as np

from ..eager import devices, dtypes, factories
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not devices.is_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # made by the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = (
            "This may indicate your script did not use scaler.scale(loss or outputs) earlier "
            "in the iteration."
        )
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = factories.full((), self._init_scale, dtype=dtypes.float32, device=dev)
        self._growth_tracker = factories.full(
            (), self._init_growth_tracker, dtype=dtypes.int32, device=dev
        )

    def scale(self, outputs):
        """outputs (a tensor, or an iterable of them) times the scale; outputs if disabled."""
        if not self._enabled:
            return outputs

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        found = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grad = param.grad
                    key = grad.device
                    flag = found.setdefault(
                        key, factories.full((), 0.0, dtype=dtypes.float32, device=key)
                    )
                    if not bool(np.all(np.isfinite(devices.host(grad._data)))):
                        flag.fill_(1.0)
                    grad.mul_(inv_scale.to(device=key, dtype=grad.dtype))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (once per step), noting infs/nans."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(), unless the unscaled gradients hold an inf or a nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back the scale off after a skipped step, grow it after growth_interval clean ones
        (or set it to new_scale)."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [
                found_inf
                for state in self._per_optimizer_states.values()
                for found_inf in state["found_inf_per_device"].values()
            ]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(float(f.item()) for f in found_infs):
                scale.mul_(self._backoff_factor)
                tracker.fill_(0)
            else:
                grown = int(tracker.item()) + 1
                if grown == self._growth_interval:
                    scale.mul_(self._growth_factor)
                    grown = 0
                tracker.fill_(grown)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self) -> float:
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            if self._growth_tracker is None:
                return self._init_growth_tracker
            return int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a "
                "disabled instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
