"""scipy.signal: convolve and correlate (modes 'full', 'same', 'valid'; any rank; real arrays).

Imported by the registry once the program has imported scipy.signal (`registry._OPTIONAL`).
Both are bilinear (forward mode: each input replaced by its tangent in turn). With G the
output's adjoint put back in the full convolution's frame (zeros where the mode cropped it:
`np.pad` by `full_frame`), the adjoints are correlations and convolutions in 'valid' mode:
for y = convolve(a, v): abar = correlate(G, v, 'valid'), vbar = correlate(G, a, 'valid');
for z = correlate(a, v) = convolve(a, flip(v)): abar = convolve(G, v, 'valid'),
vbar = flip(correlate(G, a, 'valid')).
"""

from __future__ import annotations

import numpy as np
import scipy.signal as scipy_signal

from . import scipy_special
from .examples import arg, ex
from .registry import Spelling, defnondiff, defvjp

no_scipy_rule = scipy_special.no_scipy_rule


def full_frame(shape1, shape2, mode):
    """np.pad widths that put a `mode` convolution of arrays of these shapes back in the frame
    of the full one (scipy crops the full result centred: `_centered`)."""
    widths = []
    for n1, n2 in zip(shape1, shape2):
        full = n1 + n2 - 1
        out = {"full": full, "same": n1, "valid": abs(n1 - n2) + 1}[mode]
        start = (full - out) // 2
        widths.append((start, full - out - start))
    return tuple(widths)


def _spelled(name):
    return Spelling("module", f"scipy.signal.{name}")


defnondiff("full_frame", full_frame, Spelling("module", "sourcegrad.ops.scipy_signal.full_frame"))

defvjp(
    "scipy_convolve",
    scipy_signal.convolve,
    _spelled("convolve"),
    lambda g, ans, in1, in2, mode="full", method="auto": scipy_signal.correlate(
        np.pad(g, full_frame(np.shape(in1), np.shape(in2), mode)), in2, "valid"
    ),
    lambda g, ans, in1, in2, mode="full", method="auto": scipy_signal.correlate(
        np.pad(g, full_frame(np.shape(in1), np.shape(in2), mode)), in1, "valid"
    ),
    linear="multi",
)
defvjp(
    "scipy_correlate",
    scipy_signal.correlate,
    _spelled("correlate"),
    lambda g, ans, in1, in2, mode="full", method="auto": scipy_signal.convolve(
        np.pad(g, full_frame(np.shape(in1), np.shape(in2), mode)), in2, "valid"
    ),
    lambda g, ans, in1, in2, mode="full", method="auto": np.flip(
        scipy_signal.correlate(
            np.pad(g, full_frame(np.shape(in1), np.shape(in2), mode)), in1, "valid"
        )
    ),
    linear="multi",
)


# Example inputs for the registry's test grid (ops/examples.py): every mode, 1-D and 2-D.
EXAMPLES = {
    _name: [
        ex(arg(6), arg(3)),
        ex(arg(6), arg(3), "same"),
        ex(arg(6), arg(3), "valid"),
        ex(arg(4, 5), arg(2, 3), "full"),
        ex(arg(5), arg(3), method="fft"),
    ]
    for _name in ("scipy_convolve", "scipy_correlate")
}
