"""scipy.integrate: odeint, differentiated in y0, t and args by the adjoint ODE.

Imported by the registry once the program has imported scipy.integrate (`registry._OPTIONAL`).
`y = odeint(func, y0, t, args)` is one op taking the user's function: the front end passes a
function defined at module level (or imported) as a value (`Rule.function_params`; a lambda or
nested def, which the compiler inlines where it is called, cannot be handed to scipy and is
refused, located), and generated code calls `scipy.integrate.odeint` with it. The rules need
the derivatives of `func` itself: they ask the compiler for them when they run, through
`program.USER_FUNCTION_TRANSFORMS` (its `vjp` and `jvp`, put there by `sourcegrad`'s
`__init__`), so `func` is differentiated as any function the compiler differentiates.

* Reverse mode (the VJPs run when the backward runs: `run_time_vjp`): the adjoint a(t) = dL/dy
  is integrated backward from t[-1] to t[0] together with y itself,
      dy/dt = f(y, t),  da/dt = -(df/dy)^T a,  d(argsbar)/dt = -(df/dargs)^T a,
  a jumping by g[i] at each t[i]; y0bar = a(t[0]), tbar[i] = g[i] . f(y[i], t[i]) for i >= 1
  and tbar[0] = -a(t[0]^+) . f(y0, t[0]) (a before g[0] is added). One backward solve serves the
  three inputs (remembered for the last (g, ans)).
* Forward mode: the tangent s = dy obeys ds/dt = (df/dy) s + (df/dargs) argsdot, s(t[0]) = y0dot
  - f(y0, t[0]) tdot[0], integrated with y; a moved t[i] adds f(y[i], t[i]) tdot[i] (y[0] is y0
  wherever t[0] is: its tangent is 0).
* A second derivative through odeint is not written (the rules are Python run when the
  backward runs): it raises NoRuleError. full_output=True (a tuple result) is refused.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate as scipy_integrate

from .. import errors, trees
from .examples import arg, ex
from .program import USER_FUNCTION_TRANSFORMS
from .registry import Spelling, defprimitive, defvjp

# (the transforms of one function are made once: the compiled code is kept per signature)
_TRANSFORMS: dict = {}


def _transform(kind, func, wrt):
    """The compiler's `vjp` or `jvp` of func: a VJP object for `wrt`, or the jvp function."""
    if not USER_FUNCTION_TRANSFORMS:
        import sourcegrad  # noqa: F401  (puts the compiler's transforms in place)
    if kind == "jvp":
        return USER_FUNCTION_TRANSFORMS["jvp"]
    key = (id(func), wrt)
    made = _TRANSFORMS.get(key)
    if made is None or made[0] is not func:
        if len(_TRANSFORMS) >= 64:
            _TRANSFORMS.clear()
        made = (func, USER_FUNCTION_TRANSFORMS["vjp"](func, wrt=wrt))
        _TRANSFORMS[key] = made
    return made[1]


def _as_tuple(args):
    return args if isinstance(args, tuple) else (args,)  # (scipy's rule for args)


def _floating(value) -> bool:
    if trees.kind_of(value) != trees.LEAF and not trees.is_static(value):
        # (np.asarray of a list of (W, b) tuples raised numpy's ValueError from here)
        raise errors.NonDifferentiableInputError(
            "scipy.integrate.odeint's args holds a parameter tree (a list, tuple or dict of "
            "arrays); its derivative takes arrays and numbers as the items of args: pass the "
            "arrays as separate items (args=(W1, b1, W2, b2)) or one flat vector"
        )
    return np.asarray(value).dtype.kind == "f"


def _solver_options(rtol, atol, mxstep, hmax, hmin, mxordn, mxords):
    """The options of the user's odeint call that the derivative's solves use too."""
    return dict(
        rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax, hmin=hmin, mxordn=mxordn, mxords=mxords
    )


def _refuse_full_output(full_output):
    if full_output:
        raise errors.NoRuleError(
            "scipy.integrate.odeint(full_output=True) is not differentiated (its result is a "
            "tuple with solver statistics): call it without full_output"
        )


_LAST: list = []  # [(the inputs, compared by identity), (y0bar, tbar, argsbar)]


def odeint_adjoints(g, ans, func, y0, t, args, tfirst, options):
    """(y0bar, tbar, argsbar) of y = odeint(func, y0, t, args) for the adjoint g of y, by
    the adjoint ODE (see the module docstring); argsbar has one item per item of args (0.0
    for the ones that are not floats)."""
    args = _as_tuple(args)
    key = (g, ans, func, y0, t, args)
    if _LAST and len(_LAST[0]) == len(key) and all(a is b for a, b in zip(_LAST[0], key)):
        return _LAST[1]
    times = np.asarray(t, dtype=np.float64)
    ys = np.asarray(ans, dtype=np.float64)
    g = np.reshape(np.asarray(g, dtype=np.float64), ys.shape)
    n = ys.shape[1]
    moving = [i for i, a in enumerate(args) if _floating(a)]
    at_y = 1 if tfirst else 0
    vjp = _transform("vjp", func, (at_y, *(2 + i for i in moving)))
    sizes = [np.size(args[i]) for i in moving]

    def rate(y, time):
        return np.ravel(func(time, y, *args) if tfirst else func(y, time, *args))

    def augmented(state, time):
        y, a = state[:n], state[n : 2 * n]
        value, pullback = vjp(*((time, y) if tfirst else (y, time)), *args)
        parts = pullback(np.reshape(-a, np.shape(value)))
        return np.concatenate([np.ravel(value), *(np.ravel(p) for p in parts)])

    a = g[-1].copy()
    args_bar = np.zeros(sum(sizes))
    t_bar = np.zeros(times.shape)
    for i in range(len(times) - 1, 0, -1):
        t_bar[i] = np.dot(g[i], rate(ys[i], times[i]))
        state = np.concatenate([ys[i], a, args_bar])
        back = scipy_integrate.odeint(
            augmented, state, np.array([times[i], times[i - 1]]), tfirst=False, **options
        )[1]
        a, args_bar = back[n : 2 * n], back[2 * n :]
        if i - 1 > 0:
            a = a + g[i - 1]
    if len(times) > 1:
        t_bar[0] = -np.dot(a, rate(ys[0], times[0]))
        a = a + g[0]
    else:
        a = g[0].copy()
    out_args, offset = [], 0
    for i, item in enumerate(args):
        if i in moving:
            size = sizes[moving.index(i)]
            part = np.reshape(args_bar[offset : offset + size], np.shape(item))
            out_args.append(float(part) if isinstance(item, float) else part)
            offset += size
        else:
            out_args.append(0.0)
    y0_bar = np.reshape(a, np.shape(y0))
    result = (y0_bar, np.reshape(t_bar, np.shape(t)), out_args)
    _LAST[:] = [key, result]
    return result


def odeint_tangent(
    func, y0, t, args, ans, part, tangent, tfirst, rtol, atol, mxstep, hmax, hmin, mxordn, mxords
):
    """The tangent of y = odeint(func, y0, t, args) along `tangent`, the tangent of y0 (part
    0), of t (1) or of args (2): ds/dt = (df/dy) s + (df/dargs) argsdot, integrated with y from
    s(t[0]) = y0dot, or -f(y0, t[0]) tdot[0] (see the module docstring)."""
    args = _as_tuple(args)
    times = np.asarray(t, dtype=np.float64)
    ys = np.asarray(ans, dtype=np.float64)
    n = ys.shape[1]
    jvp = _transform("jvp", func, None)
    arg_dots = (
        tuple(d if part == 2 and _floating(a) else None for a, d in zip(args, _as_tuple(tangent)))
        if part == 2
        else (None,) * len(args)
    )

    def rate(y, time):
        return np.ravel(func(time, y, *args) if tfirst else func(y, time, *args))

    def augmented(state, time):
        y, s = state[:n], state[n:]
        primals = ((time, y) if tfirst else (y, time)) + args
        dots = ((None, s) if tfirst else (s, None)) + arg_dots
        value, dot = jvp(func, primals, dots)
        return np.concatenate([np.ravel(value), np.ravel(dot)])

    if part == 0:
        start = np.ravel(np.asarray(tangent, dtype=np.float64)) * np.ones(n)
    elif part == 1:
        tdot = np.reshape(np.asarray(tangent, dtype=np.float64), times.shape)
        start = -rate(ys[0], times[0]) * tdot[0]
    else:
        start = np.zeros(n)
    options = _solver_options(rtol, atol, mxstep, hmax, hmin, mxordn, mxords)
    solved = scipy_integrate.odeint(
        augmented, np.concatenate([ys[0], start]), times, tfirst=False, **options
    )
    out = solved[:, n:]
    if part == 1:  # (y[0] is y0 wherever t[0] is: its tangent is 0)
        for i in range(len(times)):
            out[i] = out[i] + rate(ys[i], times[i]) * tdot[i]
    return np.reshape(out, np.shape(ans))


for _helper in (odeint_adjoints, odeint_tangent):
    # (Python run when the derivative runs: a second derivative through them raises)
    defprimitive(
        _helper.__name__,
        _helper,
        Spelling("module", f"sourcegrad.ops.scipy_integrate.{_helper.__name__}"),
    )

# The VJPs run when the backward runs (`run_time_vjp`): each takes its part of one backward
# solve. The JVPs are templates calling odeint_tangent.
defvjp(
    "scipy_odeint",
    scipy_integrate.odeint,
    Spelling("module", "scipy.integrate.odeint"),
    None,
    lambda g, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
        _refuse_full_output(full_output)
        or odeint_adjoints(
            g,
            ans,
            func,
            y0,
            t,
            args,
            tfirst,
            _solver_options(rtol, atol, mxstep, hmax, hmin, mxordn, mxords),
        )[0]
    ),
    lambda g, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
        _refuse_full_output(full_output)
        or odeint_adjoints(
            g,
            ans,
            func,
            y0,
            t,
            args,
            tfirst,
            _solver_options(rtol, atol, mxstep, hmax, hmin, mxordn, mxords),
        )[1]
    ),
    lambda g, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
        _refuse_full_output(full_output)
        or odeint_adjoints(
            g,
            ans,
            func,
            y0,
            t,
            args,
            tfirst,
            _solver_options(rtol, atol, mxstep, hmax, hmin, mxordn, mxords),
        )[2]
    ),
    jvps=(
        None,
        lambda dot, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
            odeint_tangent(
                func,
                y0,
                t,
                args,
                ans,
                0,
                dot,
                tfirst,
                rtol,
                atol,
                mxstep,
                hmax,
                hmin,
                mxordn,
                mxords,
            )
        ),
        lambda dot, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
            odeint_tangent(
                func,
                y0,
                t,
                args,
                ans,
                1,
                dot,
                tfirst,
                rtol,
                atol,
                mxstep,
                hmax,
                hmin,
                mxordn,
                mxords,
            )
        ),
        lambda dot, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False: (
            odeint_tangent(
                func,
                y0,
                t,
                args,
                ans,
                2,
                dot,
                tfirst,
                rtol,
                atol,
                mxstep,
                hmax,
                hmin,
                mxordn,
                mxords,
            )
        ),
    ),
    run_time_vjp=True,
    pure=True,
    shape="odeint",
    function_params=("func", "Dfun"),
)


# Example inputs for the registry's test grid (ops/examples.py): dynamics defined here (a
# module-level function, as odeint needs), their parameters differentiated through args.
def decay(y, t, rate, shift):
    """dy/dt = -rate y + shift sin(t) (componentwise): the grid's example dynamics."""
    return -rate * y + shift * np.sin(t)


EXAMPLES = {
    "scipy_odeint": [
        ex(decay, arg(3), np.linspace(0.0, 1.0, 4), (arg(3, domain="positive"), arg(3)), hvp=False),
        ex(
            decay,
            arg(2),
            np.array([0.5, 0.8, 1.2]),
            (arg(py=True, domain="positive"), 0.3),
            hvp=False,
        ),
    ],
}
