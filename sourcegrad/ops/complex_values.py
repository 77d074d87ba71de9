"""Complex numbers: np.real, np.imag, np.conj/conjugate, np.angle, np.real_if_close, the
`.real`/`.imag` attributes, torch's view_as_real and view_as_complex, and which ops
differentiate complex values at all.

Takes nothing; registers the entries (names `np_<function>`) and marks with the property
"complex" its own entries (the others whose rules hold for complex values say so where they are
defined: `complex=True`). Any other op that a
complex value on the gradient's path goes through is refused (`errors.ComplexValueError`)
by the compiler (`reverse`, `forward`, `analysis.check_real_values`) and by the eager mode
(`eager.spec.record`): never a silently wrong number.

The convention of the rules (the one JAX's rules have). A VJP of a complex value passes
the *conjugate* of the gradient torch shows, so that a holomorphic function's rule is the one
written for real numbers (`g * f'(z)`, the plain transpose of a C-linear map: the rules of
add, multiply, exp, matmul, sum, fft, ... hold unchanged). Only the functions that are not
holomorphic (abs, angle, real, imag, conj) have formulas of their own, below and in
elementwise.py. A real input's adjoint is the real part of what its rule gives (the
compiler's `reverse` and the eager node take it). What the user sees follows torch's
convention, in both modes: the gradient of a real function L of a complex input z is
dL/dRe(z) + 1j * dL/dIm(z) (its conjugate, for the rules' convention, is taken once, where the
gradient leaves: `api` for the compiler, `eager.node.ComplexRuleNode` for each eager node);
docs/sharp-bits.md says why.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import errors, runtime
from ..runtime import is_complex, real_like
from .examples import arg, ex
from .registry import RULES, Spelling, alias, deflinear, defnondiff, defvjp, mark
from .registry import func as _func

defnondiff("is_complex", is_complex, Spelling("helper", "is_complex"), params=("x",))
RULES["is_complex"].type_fact = True  # decided from the stand-ins' dtypes, emits nothing
RULES["is_complex"].static_result = True

# real(z) = Re z: dL/dRe z = g, dL/dIm z = 0, so the gradient is g (in either convention).
# imag(z) = Im z: the gradient 1j * g in torch's convention, its conjugate -1j * g here; of a
# real x, imag is 0 and so is its gradient (a real zero: -1j * g would be cast to the real
# input's dtype, or fail for a float). conj's adjoint is conj(g).
# Each is a "view": of a complex array numpy returns a view of its real (imaginary) parts, of
# a real array np.real returns the array itself, so `r = np.real(z); r *= 2` changes z (the
# in-place check refuses reading z afterwards, as for any view).
for _name, _spelling, _vjp in (
    ("np_real", _func("real"), lambda g, ans, val: g),
    ("np_imag", _func("imag"), lambda g, ans, val: -1j * g if is_complex(val) else 0.0 * g),
):
    defvjp(_name, getattr(np, _name[3:]), _spelling, _vjp, props={"complex", "view"})
    deflinear("joint", _name)
defvjp(
    "real_attr",
    operator.attrgetter("real"),
    Spelling("attr", "real"),
    lambda g, ans, x: g,
    register_fn=False,
    family="np_real",
    props={"complex", "view"},
)
defvjp(
    "imag_attr",
    operator.attrgetter("imag"),
    Spelling("attr", "imag"),
    lambda g, ans, x: -1j * g if is_complex(x) else 0.0 * g,
    register_fn=False,
    family="np_imag",
    props={"complex", "view"},
)
deflinear("joint", "real_attr", "imag_attr")
defvjp(
    "np_conjugate",
    np.conjugate,
    _func("conj"),
    lambda g, ans, x: np.conj(g),
    props={"complex", "view"},  # (x.conj() of a real x is x itself)
    methods=("conj", "conjugate"),
)
deflinear("joint", "np_conjugate")


def view_as_real(z):
    """torch.view_as_real's values: z's real and imaginary parts as a last axis of 2."""
    return np.stack([np.real(z), np.imag(z)], axis=-1)


def view_as_complex(x):
    """torch.view_as_complex's values: pairs along x's last axis (of 2) as complex numbers."""
    return x[..., 0] + 1j * x[..., 1]


# Both are R-linear. view_as_real: torch's gradient g[..., 0] + 1j * g[..., 1] (np_real's
# and np_imag's together), its conjugate in the rules' convention. view_as_complex of a real
# x: the pairs (Re G, Im G) of torch's gradient G = conj(g).
defvjp(
    "view_as_real",
    view_as_real,
    Spelling("module", "sourcegrad.ops.complex_values.view_as_real"),
    lambda g, ans, z: g[..., 0] - 1j * g[..., 1] if is_complex(z) else g[..., 0],
    props={"complex", "view"},
)
defvjp(
    "view_as_complex",
    view_as_complex,
    Spelling("module", "sourcegrad.ops.complex_values.view_as_complex"),
    lambda g, ans, x: np.stack([np.real(g), -np.imag(g)], axis=-1),
    props={"complex", "view"},
)
deflinear("joint", "view_as_real", "view_as_complex")

# angle(z) = atan2(Im z, Re z): the gradient g * 1j * z / |z|^2 = g * 1j / conj(z) in torch's
# convention, -1j * g / z here (JVP: Im(t / z)). Of a real x it is piecewise constant: 0.
defvjp(
    "np_angle",
    np.angle,
    _func("angle"),
    lambda g, ans, z, deg=False: (
        (-1j * g / z * (57.29577951308232 if deg else 1.0)) if is_complex(z) else np.zeros_like(z)
    ),
    jvps=(
        lambda t, ans, z, deg=False: (
            np.imag(t / z) * (57.29577951308232 if deg else 1.0)
            if is_complex(z)
            else np.zeros_like(ans)
        ),
    ),
    props={"complex"},
)


def real_if_close(a, tol=100):
    """np.real_if_close(a, tol) as generated code runs it: its result's type depends on a's
    values, and the compiled gradient was made for the type the compiler found (real, from
    its stand-ins, whose imaginary parts are 0). A result numpy would leave complex is
    refused here rather than differentiated as a real one."""
    out = np.real_if_close(a, tol)
    if runtime.is_complex(out):
        raise errors.ComplexValueError(
            "np.real_if_close kept a complex result (an imaginary part is not negligible), but "
            "the compiled gradient was made for a real one: take np.real(...) if the imaginary "
            "part is to be dropped"
        )
    return out


# The gradient of its (real) result is that of np.real.
defvjp(
    "np_real_if_close",
    np.real_if_close,
    Spelling("module", "sourcegrad.ops.complex_values.real_if_close"),
    lambda g, ans, a, tol=100: g,
    jvps=(lambda t, ans, a, tol=100: np.real(t),),
    props={"complex", "view"},
)
# (generated code calls the checking function: differentiating that code finds this entry)
alias(
    "real_if_close_checked",
    real_if_close,
    Spelling("module", "sourcegrad.ops.complex_values.real_if_close"),
    like="np_real_if_close",
    props={"complex"},
)
# The real part of an adjoint when its value is real, decided when the backward runs (the
# compiler's `reverse` uses it where it cannot tell the value's type): linear in g.
defvjp(
    "real_like",
    runtime.real_like,
    Spelling("helper", "real_like"),
    lambda g, ans, h, x: real_like(g, x),
    None,
    linear=(0,),
    props={"complex"},
)
mark("complex", "is_complex")

# The ops whose rules hold for complex values as they are (holomorphic functions, C-linear
# maps and the reshaping, indexing and summing that carries values unchanged) and the helpers
# generated backward code calls say so where they are defined (`complex=True`: the property
# "complex"). Entries whose rules have a complex formula of their own say so beside them
# (np.max/min and var/std in reductions.py, np.linalg.norm, svd, eig and eigvals in
# numpy_linalg.py, scipy.special.erf and erfc). Not marked, so refused: comparisons and
# rounding, np.maximum and np.minimum, np.vdot (which conjugates its first argument), the rest
# of the linear algebra (a Hermitian transpose would be needed in places), everything else.


# Example inputs for the registry's test grid (ops/examples.py): real inputs (the grid's
# inputs are real; complex intermediates are tested in tests/compiler/ops/test_fft_complex.py).
EXAMPLES = {
    **{
        _name: [ex(arg(3, 4)), ex(arg())]
        for _name in ("np_real", "np_imag", "np_conjugate", "real_attr", "imag_attr")
    },
    "np_angle": [ex(arg(3, 4, domain="away_from_zero")), ex(arg(4, domain="away_from_zero"), True)],
    "np_real_if_close": [ex(arg(3, 4))],
    "view_as_real": [ex(arg(3, 4)), ex(arg())],
    "view_as_complex": [ex(arg(3, 2)), ex(arg(2))],
}
