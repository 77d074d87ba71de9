"""The public transformations: `grad`, `value_and_grad`, `vjp`, `hessian`, ...

Each is a thin constructor of a gradient object (`sourcegrad.api.gradient`) with JAX's,
torch.func's and autograd's spellings of its options (`argnums`/`argnum`, `has_aux`,
decorator forms, `vjp(f, *primals)`), or a composition of them (`hvp` is the JVP of the
gradient, `hessian` one HVP per element, `jacobian` rows of pullbacks or columns of JVPs);
`show` prints the generated source. A default that means "not given" is an `Unset`, whose
repr says what leaving it out means (`help(grad)` shows `wrt=<argument 0>`).
"""

from __future__ import annotations

import functools
import types
from collections import OrderedDict
from typing import IO, Any, Callable, Optional, Union

import numpy as np

from .. import errors
from ..compiler import function_run_by, generators_of, memory_plan, same_draws
from ..eager.tensor import Tensor
from ..ops import rule_for_function
from ..utils.checkpoint import checkpoint as eager_checkpoint
from .arguments import ALIAS, UNSET, Unset, Wrt, is_unset, jit_backend, wrt_of
from .gradient import VJP, Gradient, forward_jacobian, jvp

_UFUNC_CALLERS: dict = {}  # numpy ufunc -> the Python function calling it (one, kept)


def _called(fn):
    """A numpy ufunc with a rule (np.sqrt, np.tanh) given where a Python function is
    expected, as autograd's `grad(np.sqrt)` is written: the Python function of its nin
    arguments that calls it (read by the source front end as the rule's call). Anything
    else is returned as it is."""
    if not isinstance(fn, np.ufunc) or fn.nin not in (1, 2) or rule_for_function(fn) is None:
        return fn
    made = _UFUNC_CALLERS.get(fn)
    if made is None:
        made = _UFUNC_CALLERS[fn] = _unary(fn) if fn.nin == 1 else _binary(fn)
        made.__name__ = made.__qualname__ = fn.__name__
    return made


def _unary(ufunc):
    def called(x):
        return ufunc(x)

    return called


def _binary(ufunc):
    def called(x, y):
        return ufunc(x, y)

    return called


def _made(fn, wrt, with_value, backend, has_aux, kind, plan=None, check=False):
    """`kind(fn, ...)`, or a decorator making it when fn is None (`@grad(wrt=1)`)."""
    if fn is None:
        return lambda f: _made(f, wrt, with_value, backend, has_aux, kind, plan, check)
    fn = _called(fn)
    if kind is Gradient and has_aux and not with_value:
        made = AuxGradient(fn, wrt, backend, plan)
        made.gradient.check = made.gradient.check or check
        return made
    if plan is not None:  # (checkpointing: sourcegrad.compiler.derive.checkpointing)
        made = kind(fn, wrt, with_value, backend, has_aux, memory_plan=plan)
    else:
        made = kind(fn, wrt, with_value, backend, has_aux)
    made.check = made.check or check
    return made


def grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = UNSET,
    *,
    argnums: Wrt = ALIAS,
    argnum: Wrt = ALIAS,
    has_aux: bool = False,
    backend: str = "auto",
    jit: bool = False,
    checkpoint_loops: Union[int, str, tuple, None] = None,
    memory: Union[int, str, None] = None,
    check: bool = False,
) -> Any:
    """The gradient of a scalar-valued numpy function, as generated Python source. An output
    of one element (shape (1,), (1, 1), ...) is differentiated as its element, as autograd's
    grad and torch's backward() take it; a larger one raises NonScalarOutputError (use vjp).

    `grad(f)`, `grad(f, wrt=1)`, `@grad` and `@grad(wrt=("w", "b"))` all work. `wrt`
    is an argument index, an argument name, or a tuple of them (then the result is a
    tuple of gradients); `argnums=` (JAX) and `argnum=` (autograd) are the same. Each
    gradient has its input's shape and dtype.

    `has_aux=True` (as in JAX): f returns `(output, aux)`; only the output is
    differentiated, and the result is `(gradient, aux)`.

    `backend` is "numpy", "cupy", "numba", "dask" or "auto" (the default: CuPy code for CuPy
    arrays, Dask code for Dask arrays, numpy code otherwise); code is generated once per
    backend and input signature. "numba" (or `jit=True` with the numpy or auto backend)
    compiles the numpy code with numba where numba can type it, and runs the numpy code
    after one `JitFallbackWarning` where it cannot (`sourcegrad.compiler.backends.numba_backend`).

    `checkpoint_loops=k` (an int, "sqrt", or "revolve" / ("revolve", s): Griewank's binomial
    checkpointing with s snapshots) and `memory=` (bytes, or "min") trade time for memory:
    loops keep a snapshot every k trips (or revolve's) and recompute the rest in the backward
    (`sourcegrad.compiler.derive.checkpointing`, `sourcegrad.compiler.derive.memory_budget`); under a
    budget in bytes, a batch the code is row-wise along goes through in blocks of rows
    (`sourcegrad.compiler.derive.row_blocks`). A budget smaller than a loop's least (one snapshot
    and one trip's values) raises `MemoryBudgetError` naming the smallest that works.
    `g.saved` lists what the backward keeps and `g.saved_bytes(*args)` its total.

    What the source front end does not read (an object with `__call__`, `*args` wrappers,
    generators, `try`, a function typed at the prompt) is traced: Python runs f on traced
    values recorded into the same IR (`sourcegrad.compiler.trace`; `g.traced` says why).
    `check=True` (or `SOURCEGRAD_CHECK=1`) computes the first call of each signature both
    from the source and from a trace, and raises `FrontEndMismatchError` if they differ.
    """
    return _made(
        fn,
        wrt_of(wrt, argnums, argnum),
        False,
        jit_backend(backend, jit),
        has_aux,
        Gradient,
        memory_plan(checkpoint_loops, memory),
        check,
    )


# grad(f) written inside differentiated code is made while compiling (frontend)
grad._sourcegrad_makes_gradient = True  # type: ignore[attr-defined]


def value_and_grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = UNSET,
    *,
    argnums: Wrt = ALIAS,
    argnum: Wrt = ALIAS,
    has_aux: bool = False,
    backend: str = "auto",
    jit: bool = False,
    checkpoint_loops: Union[int, str, tuple, None] = None,
    memory: Union[int, str, None] = None,
    check: bool = False,
) -> Any:
    """Like `grad`, but the result is `(f(*args), gradient)`; with `has_aux=True` (as in
    JAX) it is `((output, aux), gradient)`."""
    return _made(
        fn,
        wrt_of(wrt, argnums, argnum),
        True,
        jit_backend(backend, jit),
        has_aux,
        Gradient,
        memory_plan(checkpoint_loops, memory),
        check,
    )


def grad_and_aux(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = UNSET,
    *,
    argnum: Wrt = ALIAS,
    argnums: Wrt = ALIAS,
    backend: str = "auto",
    jit: bool = False,
) -> Any:
    """autograd's `grad_and_aux`: f returns `(output, aux)`; the result is
    `(gradient of output, aux)`. The same as `grad(f, has_aux=True)`."""
    return _made(fn, wrt_of(wrt, argnums, argnum), False, jit_backend(backend, jit), True, Gradient)


class AuxGradient:
    """`grad(f, has_aux=True)`: `(gradient, aux)` for a function returning `(output, aux)`.

    The generated code returns `(aux, gradient)` (aux where a value goes, so the compiled
    gradient's machinery for a value serves it); this puts the pair in JAX's order."""

    def __init__(self, fn, wrt, backend="auto", memory_plan=None):
        self.gradient = Gradient(fn, wrt, False, backend, has_aux=True, memory_plan=memory_plan)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        aux, gradient = self.gradient(*args, **kwargs)
        return gradient, aux

    @property
    def source(self) -> str:
        return self.gradient.source

    @property
    def saved(self) -> list:
        return self.gradient.saved

    def saved_bytes(self, *args: Any, trips: Optional[int] = None) -> int:
        return self.gradient.saved_bytes(*args, trips=trips)

    def __repr__(self):
        return f"<sourcegrad gradient of {self.gradient._label} with aux>"

    def _repr_markdown_(self):
        return self.gradient._repr_markdown_()

    def _repr_html_(self):
        return self.gradient._repr_html_()


def elementwise_grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = UNSET,
    *,
    argnum: Wrt = ALIAS,
    argnums: Wrt = ALIAS,
    backend: str = "auto",
) -> Any:
    """autograd's `elementwise_grad`: the sum of each column of f's Jacobian, in one
    backward pass (the vector-Jacobian product with ones shaped like the output). For a
    function applied elementwise, that is the derivative at each element."""
    if fn is None:
        return lambda f: elementwise_grad(f, wrt, argnum=argnum, argnums=argnums, backend=backend)
    wrt = wrt_of(wrt, argnums, argnum)
    fn = _called(fn)
    if not isinstance(function_run_by(fn), types.FunctionType | Gradient):
        return Gradient(fn, wrt, backend=backend)  # (which says why it cannot be)
    return Gradient(_summed(fn), wrt, backend=backend)


def _summed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its output summed: the gradient of the sum is the vector-Jacobian product
    with ones. A Python function the compiler reads like any wrapper (functools.wraps gives
    it fn's signature), so an elementwise_grad of an elementwise_grad is a second-order
    gradient, as grad(grad(f)) is."""

    @functools.wraps(fn)
    def summed(*args, **kwargs):
        return np.sum(fn(*args, **kwargs))

    return summed


def hvp(fn: Callable[..., Any], wrt: Wrt = UNSET, *, argnums: Wrt = ALIAS) -> Callable[..., Any]:
    """`hvp(f)(*args, v)`: the Hessian of f (with respect to argument `wrt`, or JAX's and
    torch.func's `argnums`) times v, without forming the Hessian: the forward-mode
    derivative of the compiled gradient along v.

    As autograd's `hessian_tensor_product`: every argument of f (keywords and defaults bind
    as they do for f), then the vector, shaped like the differentiated argument."""
    gradient = Gradient(fn, wrt_of(wrt, argnums, ALIAS))

    def product(*args_and_v, **kwargs):
        if not args_and_v:
            raise _hvp_call_error(gradient, 0, "no vector v was given")
        *given, v = args_and_v
        try:
            bound = gradient._signature.bind(*given, **kwargs)
        except TypeError as exc:
            raise _hvp_call_error(gradient, len(args_and_v), str(exc)) from None
        bound.apply_defaults()
        args = tuple(bound.arguments.values())
        tangents = [None] * len(args)
        tangents[gradient.wrt[0]] = v
        return jvp(gradient, args, tangents)[1]

    product.position = gradient.wrt[0]  # type: ignore[attr-defined]
    return product


def _hvp_call_error(gradient, count, why):
    """The error of a call of `hvp(f)` that does not give f's arguments and then v."""
    name = getattr(gradient.fn, "__name__", "f")
    params = gradient._params
    wrt = params[gradient.wrt[0]] if gradient.wrt and gradient.wrt[0] < len(params) else "x"
    return errors.CallArgumentsError(
        f"hvp(f) is called with f's arguments and then the vector v: "
        f"hvp({name})({', '.join(params + ['v'])}), v shaped like {wrt!r}; it got "
        f"{count} positional value{'s' if count != 1 else ''} ({why})"
    )


def hessian(
    fn: Callable[..., Any], wrt: Wrt = UNSET, *, argnums: Wrt = ALIAS
) -> Callable[..., np.ndarray]:
    """`hessian(f)(*args)`: forward over reverse, one Hessian-vector product per input
    element, with respect to argument `wrt` (an index or a name; `argnums=` as in JAX's and
    torch.func's `hessian`)."""
    product = hvp(fn, wrt_of(wrt, argnums, ALIAS))

    def full(*args):
        x = args[product.position]  # type: ignore[attr-defined]
        size = int(np.prod(np.shape(x), dtype=np.int64))
        rows = []
        with same_draws(generators_of(fn)) as again:
            for i in range(size):
                again()  # each row differentiates the sample the first row drew
                basis = np.zeros(size)
                basis[i] = 1.0
                v = basis.reshape(np.shape(x)) if np.shape(x) else 1.0
                rows.append(np.asarray(product(*args, v)))
        return np.stack(rows).reshape(np.shape(x) + np.shape(x))

    return full


EVERY_PRIMAL: Any = Unset("argument 0; with primals, every primal")  # vjp's wrt


def vjp(
    fn: Optional[Callable[..., Any]] = None,
    *primals: Any,
    wrt: Wrt = EVERY_PRIMAL,
    argnums: Wrt = ALIAS,
    argnum: Wrt = ALIAS,
    backend: str = "auto",
    jit: bool = False,
) -> Any:
    """Reverse mode for any output, in two forms.

    `vjp(f)(*args)` (and `vjp(f, wrt)(*args)`, `@vjp`, `@vjp(wrt=1)`) returns
    `(value, pullback)`, and `pullback(cotangent)` the gradient (a tuple when `wrt` is a
    tuple): the pullback of argument 0 unless `wrt` says otherwise.

    `vjp(f, *primals)` is JAX's and torch.func's form: it returns `(f(*primals), vjp_fn)`,
    and `vjp_fn(cotangent)` a tuple with one gradient per primal (per argument `wrt` names,
    when given as a keyword). The two are told apart by what follows `f`: an int, a name, or
    a tuple or list of them is `wrt` (an int cannot be differentiated, so it is never a
    primal); anything else (an array, a float) is a primal.

    `backend` and `jit` as for `grad`: under numba both the forward and the backward are
    compiled."""
    backend = jit_backend(backend, jit)
    if primals and not (len(primals) == 1 and _names_arguments(primals[0])):
        if not is_unset(argnums) or not is_unset(argnum):
            chosen = wrt_of(wrt, argnums, argnum)
        else:
            chosen = wrt if not is_unset(wrt) else tuple(range(len(primals)))
        if fn is None:
            raise errors.SourcegradError("vjp(f, *primals): f is None")
        positions = chosen if isinstance(chosen, (tuple, list)) else (chosen,)
        return _vjp_of(fn, tuple(positions), backend)(*primals)
    if primals:  # vjp(f, wrt): the curried form
        if not is_unset(wrt) or not is_unset(argnums) or not is_unset(argnum):
            raise errors.WrtError(
                f"vjp got wrt={primals[0]!r} both as its second argument and as a keyword: "
                "give it once"
            )
        wrt = primals[0]
    chosen = wrt_of(wrt, argnums, argnum)
    if fn is None:
        return lambda f: VJP(f, chosen, False, backend)
    return VJP(fn, chosen, False, backend)


def _names_arguments(value: Any) -> bool:
    """Is `value` what `wrt` takes (an index, a name, or a tuple or list of them), rather
    than a primal? (A bool is neither: it is refused as a wrt, not taken for one.)"""
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_names_arguments(item) for item in value)
    return isinstance(value, (int, str)) and not isinstance(value, bool)


_VJPS: OrderedDict = OrderedDict()  # (fn, wrt, backend) -> VJP, the most recent VJPS_KEPT
VJPS_KEPT = 64


def _vjp_of(fn, wrt, backend):
    """The VJP object of `vjp(f, *primals)`, kept for the next call of that form (a training
    loop calling `vjp(f, x)` each step goes straight to the compiled code, as `jvp` does)."""
    try:
        key = (fn, wrt, backend)
        made = _VJPS.get(key)
    except TypeError:  # an unhashable callable: made each time
        return VJP(fn, wrt, False, backend)
    if made is None:
        made = _VJPS[key] = VJP(fn, wrt, False, backend)
        while len(_VJPS) > VJPS_KEPT:
            _VJPS.popitem(last=False)
    else:
        _VJPS.move_to_end(key)
    return made


def jacobian(
    fn: Callable[..., Any],
    wrt: Wrt = UNSET,
    mode: str = "rev",
    *,
    argnums: Wrt = ALIAS,
    backend: str = "auto",
) -> Callable[..., np.ndarray]:
    """`jacobian(f)(*args)`: the Jacobian of f with respect to one argument (`wrt`, or
    `argnums=` as JAX's `jacrev`/`jacfwd` take it), shape `out.shape + in.shape`: row by row
    from the pullback (mode="rev", JAX's `jacrev`: one backward pass per output element) or
    column by column from the JVP (mode="fwd", `jacfwd`: one per input element)."""
    wrt = wrt_of(wrt, argnums, ALIAS)
    if isinstance(wrt, (tuple, list)):
        raise errors.WrtError("jacobian takes one wrt argument")
    if mode not in ("rev", "fwd"):
        raise errors.SourcegradError(f"mode must be 'rev' or 'fwd', got {mode!r}")
    if mode == "fwd":
        return forward_jacobian(fn, wrt, backend)
    pull = VJP(fn, wrt, False, backend)

    def jac(*args):
        value, pullback = pull(*args)
        out_shape = np.shape(value)
        rows = []
        for i in range(int(np.prod(out_shape, dtype=np.int64))):
            basis = np.zeros(int(np.prod(out_shape, dtype=np.int64)))
            basis[i] = 1.0
            rows.append(np.asarray(pullback(basis.reshape(out_shape) if out_shape else 1.0)))
        x = args[pull.wrt[0]]
        return (
            np.stack(rows).reshape(out_shape + np.shape(x))
            if rows
            else np.zeros(out_shape + np.shape(x))
        )

    jac.vjp = pull  # type: ignore[attr-defined]
    return jac


def show(
    fn: Callable[..., Any],
    *args: Any,
    wrt: Wrt = 0,
    backend: str = "auto",
    file: Optional[IO[str]] = None,
) -> str:
    """Print the generated gradient source of `fn` for the signature of `args`."""
    g = fn if isinstance(fn, Gradient) else Gradient(fn, wrt, False, backend)
    source = g.compile(args).source
    print(source, end="", file=file)
    return source


# --- sourcegrad.checkpoint(fn): a call whose values the backward makes again -----------------


class Checkpointed:
    """`sourcegrad.checkpoint(fn)`: calls `fn`. Inside differentiated code the compiler inlines
    it and marks its statements (`marked`), and the backward recomputes the values of the call
    it reads (`recompute_regions`) instead of keeping them from the forward. Called on eager
    tensors it is `sourcegrad.utils.checkpoint.checkpoint(fn, ..., use_reentrant=False)`."""

    _sourcegrad_checkpoint = True  # (the frontend inlines a call of it, marked)

    def __init__(self, fn):
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if any(isinstance(a, Tensor) for a in list(args) + list(kwargs.values())):
            return eager_checkpoint(self.__wrapped__, *args, use_reentrant=False, **kwargs)
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self):
        return f"<sourcegrad.checkpoint of {getattr(self.__wrapped__, '__qualname__', '?')}>"


def checkpoint(fn: Callable[..., Any]) -> Any:
    """Mark `fn`'s calls as checkpointed: the backward pass recomputes the intermediates of a
    call instead of saving them (JAX's `checkpoint`, torch's `utils.checkpoint`). Use it as a
    decorator on a helper, or as `y = checkpoint(block)(x, W)` inside the differentiated
    function (`block` defined at module level). In compiled code a call made outside any loop
    is recomputed; inside a loop use `grad(f, checkpoint_loops=k)`. The generated backward
    recomputes the call's statements just before their first use, each commented with the
    user's line and `checkpoint`; the call's inputs are what is kept."""
    if not callable(fn):
        raise errors.SourcegradError(f"checkpoint takes a function, got {type(fn).__name__}")
    return Checkpointed(fn)


checkpoint._sourcegrad_makes_checkpoint = True  # type: ignore[attr-defined] # checkpoint(f) inside compiled code: made now
