"""`sourcegrad.func`: torch.func's function transforms for the eager Tensor.

    from sourcegrad.func import grad, vmap, jacrev, jacfwd, hessian, functional_call
    per_sample_grads = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

Each transform takes a function of Tensors (or of lists, tuples and dicts of them, as
torch's pytrees) and returns a function, with torch.func's signatures, result structures
and error messages. They are built on the eager engine, not on functorch's levels:

* `grad`, `grad_and_value`, `vjp`, `jacrev`: reverse mode. The inputs are replaced by
  fresh tensors that require grad (an alias of the input when it is itself part of an
  outer graph or carries a tangent, so transforms compose: `grad(grad(f))`,
  `jacrev(jacrev(f))`), and `autograd.grad` gives the result; `jacrev` runs one backward
  per output element.
* `jvp`, `jacfwd`: forward mode (`autograd.forward_ad`: one dual level, tangents derived
  from the op registry); `jacfwd` runs one `jvp` per input element. torch has one forward
  level at a time, so neither may run inside another forward transform (`jacfwd(jacfwd(f))`,
  `jvp` inside a `dual_level`): that raises ForwardADError by name. `hessian` is
  `jacfwd(jacrev(f))`, forward over reverse, which needs one level only.
* `vmap` maps by looping: the function runs once per index of the mapped dimension on that
  slice, and the results are stacked along `out_dims`. The numbers are those of a batched
  run; what differs from torch's batching rules is that more is allowed: `.item()` and
  data-dependent Python control flow work per sample where torch refuses them. Random ops
  follow `randomness` ("error" raises torch's error, "same" replays one draw for every
  sample, "different" draws per sample).
* `functional_call` runs a module with some parameters and buffers replaced.

Results are detached unless an input is part of an outer graph (so a top-level
`grad(f)(x)` is a plain tensor, as in torch).

Why one module: torch.func's transforms compose with each other (jacfwd over jacrev,
vmap over grad) through the shared helpers here (argument flattening, detaching, the
forward-level guard); splitting them would spread one protocol over several files.
"""

from __future__ import annotations

import functools

from . import trees
from .autograd import forward_ad
from .eager import factories, shape_ops
from .eager.dual_state import DUAL, set_tangent, tangent_of
from .eager.engine import grad as _autograd_grad
from .eager.grad_mode import enable_grad
from .eager.tensor import Tensor
from .errors import ForwardADError

__all__ = [
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "vmap",
    "functional_call",
    "stack_module_state",
]


# --- inputs and outputs of a transform --------------------------------------------------------


def _check_argnums(argnums, n_args):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif (
        isinstance(argnums, tuple)
        and argnums
        and all(isinstance(a, int) and not isinstance(a, bool) for a in argnums)
    ):
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnum={a}, but only {n_args} positional inputs")
    return tuple(a % n_args for a in nums)


def _leaves(tree):
    leaves, treedef = trees.flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
    return leaves, treedef


def _connected(t) -> bool:
    """Whether `t` belongs to an outer transform or graph (so results must stay attached)."""
    return t.requires_grad or (DUAL.on and tangent_of(t) is not None)


def _differentiable(t):
    """A fresh tensor standing for `t` that requires grad: a view of `t` when `t` is part
    of an outer graph or carries a tangent (it keeps both), else a detached copy."""
    if _connected(t):
        with enable_grad():
            alias = shape_ops.view_as(t, t)
        if not alias.requires_grad:  # a tangent only: a leaf that keeps it
            tangent = tangent_of(alias)
            alias = t.detach().requires_grad_(True)
            set_tangent(alias, tangent)
        return alias
    return t.detach().requires_grad_(True)


def _detached(tree, connected):
    if connected:
        return tree
    leaves, treedef = trees.flatten(tree)
    return treedef.unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves])


def _zeros_for_none(grads, inputs):
    return [g if g is not None else factories.zeros_like(x) for g, x in zip(grads, inputs)]


def _prepared(args, argnums):
    """(args with the differentiated ones replaced, their leaves, their structures, and
    whether any belongs to an outer graph)."""
    args = list(args)
    leaves_of, treedefs, connected = [], [], False
    for a in argnums:
        leaves, treedef = _leaves(args[a])
        connected = connected or any(_connected(x) for x in leaves)
        fresh = [_differentiable(x) for x in leaves]
        args[a] = treedef.unflatten(fresh)
        leaves_of.append(fresh)
        treedefs.append(treedef)
    return args, leaves_of, treedefs, connected


def _split_aux(output, has_aux, name):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(
            f"{name}(f)(*args): output of function f should be a tuple: "
            "(output, aux) if has_aux is True"
        )
    return output


# --- reverse mode -----------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning `(gradient, value)` (`(gradient, (value, aux))` with has_aux) of
    scalar-valued `func` with respect to its arguments `argnums`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        args, leaves_of, treedefs, connected = _prepared(args, nums)
        with enable_grad():
            output = func(*args, **kwargs)
        value, aux = _split_aux(output, has_aux, "grad_and_value")
        if not isinstance(value, Tensor):
            raise RuntimeError(
                f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(value)}"
            )
        if value.dim() != 0:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                f"Tensor, got tensor with {value.dim()} dims. Maybe you wanted "
                "to use the vjp or jacrev APIs instead?"
            )
        flat = [x for leaves in leaves_of for x in leaves]
        grads = (
            _zeros_for_none(
                _autograd_grad(value, flat, create_graph=connected, allow_unused=True), flat
            )
            if value.requires_grad
            else [factories.zeros_like(x) for x in flat]
        )
        out, start = [], 0
        for treedef, leaves in zip(treedefs, leaves_of):
            out.append(treedef.unflatten(grads[start : start + len(leaves)]))
            start += len(leaves)
        result = out[0] if isinstance(argnums, int) else tuple(out)
        result = _detached(result, connected)
        value = _detached(value, connected)
        if has_aux:
            return result, (value, _detached(aux, connected))
        return result, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued `func` with respect to its arguments `argnums` (with
    has_aux: `(gradient, aux)`)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def vjp(func, *primals, has_aux=False):
    """`(output, vjp_fn)` (and aux): `vjp_fn(cotangents)` gives one gradient per primal."""
    args, leaves_of, treedefs, connected = _prepared(primals, range(len(primals)))
    with enable_grad():
        output = func(*args)
    output, aux = _split_aux(output, has_aux, "vjp")
    out_leaves, out_def = _leaves(output)
    flat = [x for leaves in leaves_of for x in leaves]

    def vjp_fn(cotangents):
        ct_leaves, ct_def = _leaves(cotangents)
        if ct_def != out_def:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as "
                f"pytree structure of outputs to the function. cotangents: "
                f"{ct_def}, primal output: {out_def}"
            )
        pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
        if not pairs:
            grads = [factories.zeros_like(x) for x in flat]
        else:
            create = connected or any(c.requires_grad for _, c in pairs)
            grads = _zeros_for_none(
                _autograd_grad(
                    [o for o, _ in pairs],
                    flat,
                    [c for _, c in pairs],
                    retain_graph=True,
                    create_graph=create,
                    allow_unused=True,
                ),
                flat,
            )
            grads = [g if create else g.detach() for g in grads]
        out, start = [], 0
        for treedef, leaves in zip(treedefs, leaves_of):
            out.append(treedef.unflatten(grads[start : start + len(leaves)]))
            start += len(leaves)
        return tuple(out)

    result = _detached(output, connected)
    if has_aux:
        return result, vjp_fn, _detached(aux, connected)
    return result, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of `func` with respect to `argnums`, one backward per output element:
    for an output of shape O and an input of shape I, a Tensor of shape O + I."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        args, leaves_of, treedefs, connected = _prepared(args, nums)
        with enable_grad():
            output = func(*args, **kwargs)
        output, aux = _split_aux(output, has_aux, "jacrev")
        out_leaves, out_def = _leaves(output)
        flat = [x for leaves in leaves_of for x in leaves]
        per_output = []
        for o in out_leaves:
            rows = []
            for i in range(o.numel()):
                with enable_grad():
                    element = o.reshape(-1)[i] if o.dim() else o
                if element.requires_grad:
                    grads = _autograd_grad(
                        element, flat, retain_graph=True, create_graph=connected, allow_unused=True
                    )
                    rows.append(_zeros_for_none(grads, flat))
                else:
                    rows.append([factories.zeros_like(x) for x in flat])
            jac = []
            for j, x in enumerate(flat):
                column = [row[j] for row in rows]
                stacked = (
                    shape_ops.stack(column)
                    if column
                    else factories.zeros(0, *x.shape, dtype=x.dtype)
                )
                jac.append(stacked.reshape(tuple(o.shape) + tuple(x.shape)))
            per_output.append(_by_argnums(jac, treedefs, leaves_of, argnums))
        result = _detached(out_def.unflatten(per_output), connected)
        return (result, _detached(aux, connected)) if has_aux else result

    return wrapper


def _by_argnums(values, treedefs, leaves_of, argnums):
    out, start = [], 0
    for treedef, leaves in zip(treedefs, leaves_of):
        out.append(treedef.unflatten(values[start : start + len(leaves)]))
        start += len(leaves)
    return out[0] if isinstance(argnums, int) else tuple(out)


# --- forward mode -----------------------------------------------------------------------------


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`(func(*primals), J tangents)` (and aux), by forward-mode AD."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
            "should be valid to call f(*primals)."
        )
    p_leaves, p_def = _leaves(primals)
    t_leaves, t_def = _leaves(tangents)
    if not isinstance(tangents, tuple) or p_def != t_def:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have "
            "the same python structure. For example, if primals is a tuple of "
            f"3 tensors, tangents also must be. Got primals with structure "
            f"{p_def} and tangents with structure {t_def}"
        )
    if DUAL.level is not None:
        raise ForwardADError(
            "sourcegrad.func.jvp (or jacfwd) inside another forward-mode "
            "transform or dual_level: torch's forward AD has one level at a "
            "time here; use jacrev for one of the two"
        )
    connected = any(x.requires_grad for x in p_leaves + t_leaves)
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        output = func(*p_def.unflatten(duals))
        output, aux = _split_aux(output, has_aux, "jvp")
        out_leaves, out_def = _leaves(output)
        values, jvps = [], []
        for o in out_leaves:
            primal, tangent = forward_ad.unpack_dual(o)
            values.append(primal)
            jvps.append(tangent if tangent is not None else factories.zeros_like(primal))
    result = (
        _detached(out_def.unflatten(values), connected),
        _detached(out_def.unflatten(jvps), connected),
    )
    return result + (_detached(aux, connected),) if has_aux else result


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of `func` with respect to `argnums`, one jvp per input element: for an
    output of shape O and an input of shape I, a Tensor of shape O + I."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        leaves_of, treedefs = [], []
        for a in nums:
            leaves, treedef = _leaves(args[a])
            leaves_of.append(leaves)
            treedefs.append(treedef)
        flat = [x for leaves in leaves_of for x in leaves]

        def along(tangent_flat):
            def f(*diff):
                call = list(args)
                start = 0
                for a, treedef, leaves in zip(nums, treedefs, leaves_of):
                    call[a] = treedef.unflatten(list(diff[start : start + len(leaves)]))
                    start += len(leaves)
                return func(*call, **kwargs)

            return jvp(f, tuple(flat), tuple(tangent_flat), has_aux=has_aux)

        columns = []  # per input leaf: the jvps along each of its elements
        aux = output = None
        for j, x in enumerate(flat):
            cols = []
            for i in range(x.numel()):
                basis = [factories.zeros_like(y) for y in flat]
                basis[j] = factories.eye(x.numel(), dtype=x.dtype)[i].reshape(x.shape)
                res = along(basis)
                output, t_out = res[0], res[1]
                aux = res[2] if has_aux else None
                cols.append(trees.flatten(t_out)[0])
            columns.append(cols)
        if output is None:  # no input element: run once for the output's structure
            res = along([factories.zeros_like(y) for y in flat])
            output, aux = res[0], (res[2] if has_aux else None)
        out_leaves, out_def = _leaves(output)
        per_output = []
        for k, o in enumerate(out_leaves):
            jac = []
            for x, cols in zip(flat, columns):
                if cols:
                    stacked = shape_ops.stack([c[k] for c in cols], dim=-1)
                else:
                    stacked = factories.zeros(tuple(o.shape) + (0,), dtype=o.dtype)
                jac.append(stacked.reshape(tuple(o.shape) + tuple(x.shape)))
            per_output.append(_by_argnums(jac, treedefs, leaves_of, argnums))
        result = out_def.unflatten(per_output)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of scalar-valued `func`: `jacfwd(jacrev(func))` (forward over reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)


# --- vmap -------------------------------------------------------------------------------------

_RANDOM_IN_VMAP = (
    "vmap: called random operation while in randomness error mode. Please "
    "either use the 'same' or 'different' randomness flags on vmap or perform "
    "the randomness operation out of vmap"
)


def _refuse_random():
    raise RuntimeError(_RANDOM_IN_VMAP)


def _func_name(func):
    return getattr(func, "__name__", repr(func))


def _in_dims_per_leaf(in_dims, args, func):
    """The in_dim of each leaf of `args` (in_dims is a prefix tree of `args`)."""
    if isinstance(in_dims, int) or in_dims is None:
        leaves, treedef = trees.flatten(args)
        return leaves, treedef, [in_dims] * len(leaves)
    if not isinstance(in_dims, tuple):
        raise ValueError(
            f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
            "expected `in_dims` to be int or a (potentially nested) tuple "
            f"matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(in_dims) != len(args):
        raise ValueError(
            f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
            "in_dims is not compatible with the structure of `inputs`. in_dims "
            f"has {len(in_dims)} entries but inputs has {len(args)}."
        )
    leaves, dims = [], []
    for arg, dim in zip(args, in_dims):
        arg_leaves, arg_def = trees.flatten(arg)
        if isinstance(dim, int) or dim is None:
            dims += [dim] * len(arg_leaves)
        else:
            dim_leaves, dim_def = trees.flatten(dim)
            if dim_def != arg_def:
                raise ValueError(
                    f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                    "in_dims is not compatible with the structure of `inputs`."
                )
            dims += dim_leaves
        leaves += arg_leaves
    return leaves, trees.flatten(args)[1], dims


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over a dimension of its inputs: run once per index, stacked (see the
    module's docstring for what this loop allows that torch's batching refuses)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or "
            f"'same'. Got {randomness}"
        )

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, treedef, dims = _in_dims_per_leaf(in_dims, args, func)
        sizes = []
        for leaf, dim in zip(leaves, dims):
            if dim is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                    f"Got in_dim={dim} for an input but the input is of type "
                    f"{type(leaf)}. We cannot vmap over non-Tensor arguments, "
                    "please use None as the respective in_dim"
                )
            if not -max(leaf.dim(), 1) <= dim < max(leaf.dim(), 1) or leaf.dim() == 0:
                raise ValueError(
                    f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                    f"Got in_dim={dim} for some input, but that input is a Tensor "
                    f"of dimensionality {leaf.dim()} so expected in_dim to satisfy "
                    f"-{leaf.dim()} <= in_dim < {leaf.dim()}."
                )
            sizes.append(leaf.shape[dim])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(set(sizes)) > 1:
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped "
                f"dimension, got sizes {sizes} for the mapped dimension"
            )
        state = factories.get_rng_state() if randomness == "same" else None
        results = []
        guard = _refuse_random if randomness == "error" else None
        for i in range(sizes[0]):
            if state is not None:
                factories.set_rng_state(state)
            sliced = [
                leaf.select(dim, i) if dim is not None else leaf for leaf, dim in zip(leaves, dims)
            ]
            with factories.random_guard(guard):
                results.append(func(*treedef.unflatten(sliced), **kwargs))
        return _stacked(results, out_dims, func)

    return wrapper


def _stacked(results, out_dims, func):
    first_leaves, out_def = trees.flatten(results[0])
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(first_leaves)
    else:
        dims, dims_def = trees.flatten(out_dims)
        if len(dims) != len(first_leaves):
            raise ValueError(
                f"vmap({_func_name(func)}, ..., out_dims={out_dims})(<inputs>): "
                f"out_dims is not compatible with the structure of `outputs`. "
                f"out_dims has structure {dims_def} but outputs has structure "
                f"{out_def}."
            )
    per_result = [trees.flatten(r)[0] for r in results]
    stacked = []
    for k, dim in enumerate(dims):
        column = [leaves[k] for leaves in per_result]
        if dim is None:
            stacked.append(column[0])
            continue
        if not isinstance(column[0], Tensor):
            raise ValueError(
                f"vmap({_func_name(func)}, ...): `{_func_name(func)}` must only "
                f"return Tensors, got type {type(column[0])}. Did you mean to set "
                "out_dims= to None for output?"
            )
        stacked.append(shape_ops.stack(column, dim=dim))
    return out_def.unflatten(stacked)


# --- functional_call --------------------------------------------------------------------------


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """`module(*args, **kwargs)` with the named parameters and buffers replaced by the given
    tensors for the call (restored afterwards)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        replacements = dict(parameter_and_buffer_dicts)
    else:
        replacements = {}
        seen = set()
        for d in parameter_and_buffer_dicts:
            repeated = sorted(seen & set(d))
            if repeated:
                raise ValueError(
                    f"{repeated} appeared in multiple dictionaries; behavior of "
                    "functional call is ambiguous"
                )
            seen |= set(d)
            replacements.update(d)
    originals = dict(module.named_parameters(remove_duplicate=False))
    originals.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:  # a name sharing its tensor with a replaced one gets the same replacement
        by_tensor = {id(originals[k]): v for k, v in replacements.items() if k in originals}
        for name, t in originals.items():
            if name not in replacements and id(t) in by_tensor:
                replacements[name] = by_tensor[id(t)]
    if strict:
        missing = [k for k in originals if k not in replacements]
        unexpected = [k for k in replacements if k not in originals]
        if missing or unexpected:
            lines = []
            if unexpected:
                lines.append(
                    "\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
                )
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n" + "\n".join(lines)
            )
    swapped = []
    try:
        for name, value in replacements.items():
            owner, _, attr = name.rpartition(".")
            sub = module.get_submodule(owner) if owner else module
            table = (
                sub._parameters
                if attr in sub._parameters
                else (sub._buffers if attr in sub._buffers else None)
            )
            if table is None:
                continue  # torch ignores a key the module does not have (unless strict)
            swapped.append((table, attr, table[attr]))
            table[attr] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old in reversed(swapped):
            table[attr] = old


# --- stack_module_state -----------------------------------------------------------------------


def _stacked_leaf(tensors, name):
    requires_grad = [t.requires_grad for t in tensors]
    if any(requires_grad) and not all(requires_grad):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = shape_ops.stack(tensors)
    # new leaves, unrelated to the models' parameters, that an optimizer can take directly
    return result.detach().requires_grad_() if all(requires_grad) else result


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new first dim,
    keyed by name, for ensembling with `vmap(functional_call ...)` (torch.func's)."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
