"""`gradcheck` / `gradgradcheck`: backward against central finite differences, as torch checks.

For each input that requires grad and each of its elements, the numerical
Jacobian is `(f(x + eps) - f(x - eps)) / (2 eps)`; the analytical one comes
from backward with a unit `grad_output` per output element. Both are laid out
as torch lays them out (rows: input elements, columns: output elements) and
compared with `|a - n| <= atol + rtol * |n|`. Backward is run twice to check it
is reentrant. A failure raises `GradcheckError` (a RuntimeError) with torch's
message, or returns False when `raise_exception=False`.
"""

import warnings

import numpy as np

from ..eager import devices, factories
from ..eager.engine import grad
from ..eager.grad_mode import enable_grad
from ..eager.tensor import Tensor


class GradcheckError(RuntimeError):
    """A gradient that disagrees with its finite-difference estimate."""


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _outputs(func, inputs, which=None):
    """func's Tensor outputs (only those at the positions in `which`, when given)."""
    outs = _as_tuple(func(*inputs))
    if which is not None:
        return [outs[i] for i in which]
    return [o for o in outs if isinstance(o, Tensor)]


def _differentiable(func, inputs):
    """The positions of func's outputs that require grad (torch's _differentiable_outputs)."""
    with enable_grad():
        outs = _as_tuple(func(*inputs))
    return [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]


def _numerical(func, inputs, wrt, outputs, eps, which=None):
    """One Jacobian per (output, input): shape (input.numel(), output.numel())."""
    jacobians = {}
    for j in wrt:
        x = inputs[j]
        data = x._data
        for o, out in enumerate(outputs):
            jacobians[o, j] = np.zeros((data.size, out._data.size), np.float64)
        for k in range(data.size):
            idx = np.unravel_index(k, data.shape)
            orig = data[idx].copy()
            # the data is changed under the tensor (no version bump): no graph spans the calls
            data[idx] = orig + eps
            plus = [
                devices.host(o._data).astype(np.float64).reshape(-1)
                for o in _outputs(func, inputs, which)
            ]
            data[idx] = orig - eps
            minus = [
                devices.host(o._data).astype(np.float64).reshape(-1)
                for o in _outputs(func, inputs, which)
            ]
            data[idx] = orig
            for o in range(len(outputs)):
                jacobians[o, j][k] = (plus[o] - minus[o]) / (2 * eps)
    return jacobians


def _analytical(func, inputs, wrt, which):
    with enable_grad():
        outputs = _outputs(func, inputs, which)
    jacobians = {}
    for o, out in enumerate(outputs):
        for j in wrt:
            jacobians[o, j] = np.zeros((inputs[j]._data.size, out._data.size), np.float64)
        if not out.requires_grad:
            continue
        for m in range(out._data.size):
            unit = np.zeros(out._data.size, out._data.dtype)
            unit[m] = 1
            seed = Tensor._make(devices.to_device(unit.reshape(out.shape), out.device))
            gs = grad(out, [inputs[j] for j in wrt], seed, retain_graph=True, allow_unused=True)
            for j, g in zip(wrt, gs):
                if g is not None:
                    jacobians[o, j][:, m] = devices.host(g._data).astype(np.float64).reshape(-1)
    return outputs, jacobians


def _fail(message, raise_exception):
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-06,
    atol=1e-05,
    rtol=0.001,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
) -> bool:
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but "
            "none of them have requires_grad=True."
        )
    for i in wrt:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating "
                "point or complex. This check will likely fail if all the inputs are "
                "not of double precision floating point or complex. ",
                UserWarning,
                stacklevel=2,
            )
    which = _differentiable(func, inputs)
    if not which:
        # no output needs a gradient: the function must then not depend on the inputs
        everything = _outputs(func, inputs)
        for num in _numerical(func, inputs, wrt, everything, eps).values():
            if not np.allclose(num, 0.0, rtol=rtol, atol=atol):
                return _fail("Numerical gradient for function expected to be zero", raise_exception)
        return True
    outputs, analytical = _analytical(func, inputs, wrt, which)
    numerical = _numerical(func, inputs, wrt, outputs, eps, which)
    from ..eager.factories import tensor as _tensor

    for (o, j), num in numerical.items():
        ana = analytical[o, j]
        if not np.allclose(ana, num, rtol=rtol, atol=atol):
            return _fail(
                f"Jacobian mismatch for output {o} with respect to input {j},\n"
                f"numerical:{_tensor(num)!r}\nanalytical:{_tensor(ana)!r}\n",
                raise_exception,
            )
    _, again = _analytical(func, inputs, wrt, which)
    for key, ana in analytical.items():
        if np.max(np.abs(again[key] - ana), initial=0.0) > nondet_tol:
            return _fail(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.",
                raise_exception,
            )
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-06,
    atol=1e-05,
    rtol=0.001,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
) -> bool:
    """gradcheck of the first derivatives (computed with create_graph=True)."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    which = _differentiable(func, inputs)
    if grad_outputs is None:
        # random grad_outputs in [-1, 1) that require grad, like torch's make_tensor
        rng = np.random.default_rng(0)
        with enable_grad():
            outs = _outputs(func, inputs, which)
        grad_outputs = tuple(
            factories.from_numpy(
                rng.uniform(-1.0, 1.0, o._data.shape).astype(
                    o._data.dtype if o._data.dtype.kind in "fc" else np.float64
                )
            )
            .to(o.device)
            .requires_grad_(True)
            for o in outs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        xs, gos = args[:n], args[n:]
        outputs = _outputs(func, xs, which)
        gs = grad(outputs, [xs[i] for i in wrt], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
    )


__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]
