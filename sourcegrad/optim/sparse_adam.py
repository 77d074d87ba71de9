"""`SparseAdam`, as torch's: Adam's update on the entries a sparse gradient names.

sourcegrad has no sparse gradients: `nn.Embedding(sparse=True)` (and `F.embedding(...,
sparse=True)`) is refused with `UnsupportedOptionError`, and every gradient is dense. Given a
dense gradient, torch's SparseAdam raises RuntimeError at `step()`; so does this one, with
torch's message and the reason it is always the case here. The constructor is torch's (its
argument checks and errors; dense, real parameters), so code that builds one runs up to its
first step with a gradient; a step with no gradients does nothing, as torch's.
"""

from ..eager.grad_mode import enable_grad
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [
            [index, d_index]
            for index, group in enumerate(self.param_groups)
            for d_index, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam "
                        "instead (sourcegrad has no sparse gradients: every gradient is dense, "
                        "and nn.Embedding(sparse=True) is refused)"
                    )
        return loss
