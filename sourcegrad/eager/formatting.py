"""`repr(tensor)` exactly as torch prints it.

This follows torch's `_tensor_str.py` step by step, on the numpy array:

* one formatter per tensor decides the number style from its nonzero finite
  values: integers get a trailing `.` (`tensor([0., 1.])`), otherwise 4 decimals
  (`3.5000`), and scientific notation when the magnitudes span more than 1000x,
  exceed 1e8 or go below 1e-4 (`1.0000e-05`);
* every element is right-aligned to the widest one;
* lines wrap at 80 columns, continuation lines align under the first element,
  and rows of a matrix are indented under the opening bracket;
* more than 1000 elements are summarised with `...` and 3 items at each edge;
* suffixes follow: `device='cuda:0'` for a GPU tensor, `dtype=` when it is not the
  default, then `grad_fn=<...>` for non-leaves or `requires_grad=True` for leaves
  that require grad.

Imports: `devices` and `dtypes` only.
"""

from __future__ import annotations

import math

import numpy as np

from . import devices, dtypes


class PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


OPTS = PrintOptions()


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
):
    """torch.set_printoptions."""
    if profile == "default":
        OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 4, math.inf, 3, 80
    if precision is not None:
        OPTS.precision = precision
    if threshold is not None:
        OPTS.threshold = threshold
    if edgeitems is not None:
        OPTS.edgeitems = edgeitems
    if linewidth is not None:
        OPTS.linewidth = linewidth
    OPTS.sci_mode = sci_mode


class _Formatter:
    """Chooses one number style and width for all the elements of one tensor."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite).astype(np.float64)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        items = finite.tolist()
        self.int_mode = all(v == math.ceil(v) for v in items)
        if OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = OPTS.sci_mode
        p = OPTS.precision
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in items)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in items)
        else:
            widths = (len(f"{v:.{p}f}") for v in items)
        self.max_width = max(self.max_width, max(widths))

    def format(self, value) -> str:
        if self.floating:
            p = OPTS.precision
            if self.sci_mode:
                text = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{p}f}"
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (edges of each dimension), for the formatter."""
    e = OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return a.reshape((0,) * a.ndim)
    rows = (
        list(range(e)) + list(range(a.shape[0] - e, a.shape[0]))
        if a.shape[0] > 2 * e
        else range(a.shape[0])
    )
    return np.stack([_summarized(a[i]) for i in rows])


def _vector(a, indent, summarize, fmt, fmt_imag):
    element_length = fmt.max_width + 2
    if fmt_imag is not None:
        element_length += fmt_imag.max_width + 1
    per_line = max(1, math.floor((OPTS.linewidth - indent) / element_length))

    def one(v):
        if fmt_imag is None:
            return fmt.format(v)
        real = fmt.format(v.real)
        imag = (fmt_imag.format(v.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag

    e = OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [one(v) for v in a[:e].tolist()] + [" ..."] + [one(v) for v in a[-e:].tolist()]
    else:
        data = [one(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _body(a, indent, summarize, fmt, fmt_imag):
    if a.ndim == 0:
        v = a.item()
        if fmt_imag is None:
            return fmt.format(v)
        real = fmt.format(v.real)
        imag = (fmt_imag.format(v.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt, fmt_imag)
    e = OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = (
            [_body(a[i], indent + 1, summarize, fmt, fmt_imag) for i in range(e)]
            + ["..."]
            + [_body(a[i], indent + 1, summarize, fmt, fmt_imag) for i in range(n - e, n)]
        )
    else:
        slices = [_body(a[i], indent + 1, summarize, fmt, fmt_imag) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def array_str(a: np.ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr, `indent` columns in."""
    if a.size == 0:
        return "[]"
    summarize = a.size > OPTS.threshold
    if a.dtype.kind == "c":
        real = _Formatter(_summarized(a.real) if summarize else a.real)
        imag = _Formatter(_summarized(a.imag) if summarize else a.imag)
        return _body(a, indent, summarize, real, imag)
    if a.dtype == np.float16:
        a = a.astype(np.float32)  # formats the same values; float16 .tolist() is slow
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _body(a, indent, summarize, fmt, None)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor(") -> str:
    """repr(t) in torch's words: `tensor([1., 2.], dtype=torch.float64, grad_fn=<MulBackward0>)`."""
    data = t._data
    d = t.dtype
    indent = len(prefix)
    suffixes = []
    if type(data) in devices.DEVICE_TYPES:
        # a CUDA tensor: printed from a host copy, its device first among the suffixes
        suffixes.append(f"device='{t.device}'")
        data = devices.host(data)
    default = d in (
        dtypes.get_default_dtype(),
        dtypes.default_complex_dtype(),
        dtypes.int64,
        dtypes.bool,
    )
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append("size=" + str(tuple(data.shape)))
        if d is not dtypes.get_default_dtype():
            suffixes.append("dtype=" + str(d))
        body = "[]"
    else:
        if not default:
            suffixes.append("dtype=" + str(d))
        body = array_str(data, indent)
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    extra = t._extra
    if extra is not None and extra.fw_grad is not None:  # a dual tensor (forward_ad)
        # torch formats it with f"{tangent}": a 0-d tangent prints as its Python number
        suffixes.append(f"tangent={extra.fw_grad}")
    return _add_suffixes(prefix + body, suffixes, indent)
