"""`sourcegrad.autograd.functional`: Jacobians and Hessians of functions of Tensors.

Built on `autograd.grad` (reverse mode, one backward per output element), with
torch's signatures. `jvp` and `hvp` use the double-vjp trick, so they need a
function whose backward is itself differentiable (create_graph).
"""
from __future__ import annotations

from ..eager import factories, shape_ops
from ..eager.engine import grad
from ..eager.grad_mode import enable_grad
from ..eager.tensor import Tensor


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    return tuple(t.detach().requires_grad_(True) if not create_graph or not t.requires_grad
                 else t for t in _tuple(inputs))


def _grads_or_zeros(outputs, inputs, grad_outputs, create_graph, strict):
    if not outputs.requires_grad:
        if strict:
            raise RuntimeError("Output 0 of the user-provided function does not require "
                               "gradients. The outputs must be computed in a differentiable "
                               "manner from the input when running in strict mode.")
        return tuple(factories.zeros_like(t) for t in inputs)
    gs = grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
              allow_unused=True)
    return tuple(factories.zeros_like(t) if g is None else g for g, t in zip(gs, inputs))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """d func / d inputs, shaped out.shape + in.shape (a tuple for a tuple of inputs)."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with enable_grad():
        out = func(*xs)
        rows = [[] for _ in xs]
        flat = out.reshape(-1)
        for i in range(flat.numel()):
            gs = _grads_or_zeros(flat[i], xs, None, create_graph, strict)
            for k, g in enumerate(gs):
                rows[k].append(g if create_graph else g.detach())
    jac = tuple(shape_ops.stack(r).reshape(tuple(out.shape) + tuple(x.shape)) if r else
                factories.zeros(tuple(out.shape) + tuple(x.shape)) for r, x in zip(rows, xs))
    return jac[0] if single else jac


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The matrix of second derivatives of a scalar function."""
    single = isinstance(inputs, Tensor)

    def first(*xs):
        out = func(*xs)
        gs = grad(out, xs, create_graph=True, allow_unused=True)
        return gs[0] if single else gs

    if single:
        return jacobian(lambda x: first(x), inputs, create_graph, strict)
    raise NotImplementedError("sourcegrad: hessian of several inputs is not supported")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with enable_grad():
        out = func(*xs)
        if v is None and out.numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        gs = _grads_or_zeros(out, xs, v, create_graph, strict)
    result = out if create_graph else out.detach()
    gs = gs if create_graph else tuple(g.detach() for g in gs)
    return result, gs[0] if single else gs


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by differentiating a vjp with respect to its cotangent."""
    xs = _prepare(inputs, True)
    vs = _tuple(v) if v is not None else tuple(factories.ones_like(x) for x in xs)
    with enable_grad():
        out = func(*xs)
        u = factories.zeros_like(out).requires_grad_(True)
        gs = grad(out, xs, u, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
        if not pairs:
            jv = factories.zeros_like(out)
        else:
            jv, = grad([g for g, _ in pairs], u, [w for _, w in pairs],
                       create_graph=create_graph, allow_unused=True)
            if jv is None:
                jv = factories.zeros_like(out)
    return (out if create_graph else out.detach()), (jv if create_graph else jv.detach())


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, True)
    with enable_grad():
        out = func(*xs)
        gs = grad(out, xs, create_graph=True, allow_unused=True)
        vs = _tuple(v) if v is not None else tuple(factories.ones_like(x) for x in xs)
        hv = grad([g for g in gs if g is not None], xs, [w for g, w in zip(gs, vs)
                                                          if g is not None],
                  create_graph=create_graph, allow_unused=True)
    hv = tuple(factories.zeros_like(x) if h is None else (h if create_graph else h.detach())
               for h, x in zip(hv, xs))
    return (out if create_graph else out.detach()), (hv[0] if single else hv)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the same as vhp, since the Hessian is symmetric."""
    return vhp(func, inputs, v, create_graph, strict)

__all__ = ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"]
