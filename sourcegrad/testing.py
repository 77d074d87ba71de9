"""`sourcegrad.testing`: torch.testing's `assert_close` and `make_tensor` for the eager Tensor.

`assert_close(actual, expected)` compares tensors, Python numbers and (nested) sequences and
mappings of them as torch does: the same default tolerances per dtype (float32: rtol 1.3e-6,
atol 1e-5; float64: 1e-7 and 1e-7; integers and bool exactly), the same attribute checks
(shape, then dtype and device unless `check_dtype`/`check_device` are False) and
AssertionErrors worded as torch's ("Tensor-likes are not close!", the count of mismatched
elements, the greatest absolute and relative difference with their index), so a test
written against torch reads the same failure here. The comparison itself runs in numpy on the
tensors' values: `|actual - expected| <= atol + rtol * |expected|`, NaNs equal only with
`equal_nan`.

`make_tensor(*shape, dtype, device)` draws uniform values in torch's default ranges
([-9, 9] for floating and signed integer dtypes, [0, 9] for unsigned ones, False/True for
bool). The values are random, as torch's, but not torch's draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from . import eager as _eager

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# torch.testing's default (rtol, atol) per dtype name; other dtypes compare exactly
_DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    if rtol is not None:
        return rtol, atol
    return _DEFAULT_TOLERANCES.get(_dtype_name(dtype), (0.0, 0.0))


def _fail(default_message: str, msg, path):
    if callable(msg):
        message = msg(default_message)
    elif msg is not None:
        message = msg
    else:
        message = default_message
        if path:
            message += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    raise AssertionError(message)


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.ndarray)


def _compare_scalars(actual, expected, rtol, atol, equal_nan, check_dtype, msg, path):
    if check_dtype and type(actual) is not type(expected):
        _fail(
            f"The values for attribute 'type' do not match: {type(actual)} != {type(expected)}.",
            msg,
            path,
        )
    # Python floats compare with float64's tolerances, ints and bools exactly
    exact = isinstance(expected, (bool, int)) and isinstance(actual, (bool, int))
    rtol, atol = _tolerances("float64" if not exact else "int64", rtol, atol)
    both_nan = isinstance(actual, (float, complex)) and isinstance(expected, (float, complex))
    both_nan = both_nan and math.isnan(abs(actual)) and math.isnan(abs(expected))
    if actual == expected or (equal_nan and both_nan):
        return
    abs_diff = abs(actual - expected)
    if abs_diff <= atol + rtol * abs(expected):
        return
    rel_diff = abs_diff / abs(expected) if expected != 0 else math.inf
    verb = "equal" if exact else "close"
    lines = [f"Scalars are not {verb}!", "", f"Expected {expected} but got {actual}."]
    if exact:
        lines += [f"Absolute difference: {abs_diff}", f"Relative difference: {rel_diff}"]
    else:
        lines += [
            f"Absolute difference: {abs_diff} (up to {atol} allowed)",
            f"Relative difference: {rel_diff} (up to {rtol} allowed)",
        ]
    _fail("\n".join(lines), msg, path)


def _mismatch_message(actual, expected, matches, rtol, atol, exact):
    """torch's "Tensor-likes are not close!" report: the count of mismatches and the greatest
    absolute and relative difference (computed in the compared dtype, as torch's)."""
    total = matches.size
    mismatched = int(total - matches.sum())
    if not np.issubdtype(actual.dtype, np.inexact):
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    abs_diff = np.abs(actual - expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_diff = abs_diff / np.abs(expected)
    abs_diff = np.where(matches, 0, abs_diff)
    rel_diff = np.where(matches, 0, rel_diff)
    lines = [
        f"Tensor-likes are not {'equal' if exact else 'close'}!",
        "",
        f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})",
    ]
    for what, diff, allowed in [("absolute", abs_diff, atol), ("relative", rel_diff, rtol)]:
        flat = int(np.argmax(diff.reshape(-1))) if diff.size else 0
        index = tuple(int(i) for i in np.unravel_index(flat, diff.shape)) if diff.ndim else ()
        value = diff.reshape(-1)[flat].item() if diff.size else 0
        line = f"Greatest {what} difference: {value} at index {index}"
        lines.append(line if exact else f"{line} (up to {allowed} allowed)")
    return "\n".join(lines)


def _compare_tensors(actual, expected, opts, path):
    rtol, atol, equal_nan, check_device, check_dtype, msg = opts
    if not (_eager.is_tensor(actual) and _eager.is_tensor(expected)):
        raise TypeError(
            "No comparison pair was able to handle inputs of type "
            f"{type(actual)} and {type(expected)}."
        )
    for attribute, check in [("shape", True), ("device", check_device), ("dtype", check_dtype)]:
        a, e = getattr(actual, attribute), getattr(expected, attribute)
        if check and a != e:
            _fail(f"The values for attribute '{attribute}' do not match: {a} != {e}.", msg, path)
    rtol, atol = _tolerances(expected.dtype if check_dtype else actual.dtype, rtol, atol)
    a = actual.detach().cpu().numpy()
    e = expected.detach().cpu().numpy()
    if not check_dtype and a.dtype != e.dtype:
        # torch compares in the promoted dtype
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    exact = rtol == 0 and atol == 0 and not np.issubdtype(a.dtype, np.inexact)
    if a.dtype == np.bool_:
        matches = a == e
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not matches.all():
        _fail(_mismatch_message(a, e, np.asarray(matches), rtol, atol, exact), msg, path)


def _compare(actual, expected, opts, path):  # walks torch's pytrees of the two inputs
    if _eager.is_tensor(actual) or _eager.is_tensor(expected):
        _compare_tensors(actual, expected, opts, path)
    elif _is_scalar(actual) and _is_scalar(expected):
        rtol, atol, equal_nan, _, check_dtype, msg = opts
        _compare_scalars(actual, expected, rtol, atol, equal_nan, check_dtype, msg, path)
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(
                f"The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(set(expected) - set(actual))}\n"
                f"Extra keys in the actual mapping: {sorted(set(actual) - set(expected))}"
            )
        for key in expected:
            _compare(actual[key], expected[key], opts, (*path, key))
    elif (
        isinstance(actual, Sequence)
        and isinstance(expected, Sequence)
        and not isinstance(actual, str)
        and not isinstance(expected, str)
    ):
        if len(actual) != len(expected):
            raise AssertionError(
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, opts, (*path, i))
    else:
        raise TypeError(
            "No comparison pair was able to handle inputs of type "
            f"{type(actual)} and {type(expected)}."
        )


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses=True,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    msg=None,
):
    """Raise AssertionError unless `actual` and `expected` are close (see the module doc)."""
    _tolerances(None, rtol, atol)  # both or neither, before anything is compared
    _compare(actual, expected, (rtol, atol, equal_nan, check_device, check_dtype, msg), ())


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing's deprecated form: `expected` may be array-like, dtypes may differ."""
    if not _eager.is_tensor(actual):
        actual = _eager.tensor(actual)
    if not _eager.is_tensor(expected):
        expected = _eager.tensor(expected, dtype=actual.dtype)
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=True,
        check_dtype=False,
        msg=msg or None,
    )


def make_tensor(
    *shape,
    dtype,
    device=None,
    low=None,
    high=None,
    requires_grad=False,
    noncontiguous=False,
    exclude_zero=False,
    memory_format=None,
):
    """A tensor of `shape` with uniform values in [low, high) (torch's defaults by dtype)."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    name = _dtype_name(dtype)
    rng = np.random.default_rng(int(_eager.randint(0, 2**31 - 1, ()).item()))
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    if name == "bool":
        values = rng.integers(0, 2, size=shape).astype(bool)
    elif name.startswith(("int", "uint")):
        lowest = 0 if name.startswith("uint") else -9
        lo = lowest if low is None else math.ceil(low)
        hi = 10 if high is None else math.floor(high)  # torch's high is exclusive for ints
        values = rng.integers(lo, max(hi, lo + 1), size=shape)
        if exclude_zero:
            values[values == 0] = 1
    else:
        lo = -9.0 if low is None else low
        hi = 9.0 if high is None else high
        values = rng.uniform(lo, hi, size=shape)
        if name.startswith("complex"):
            values = values + 1j * rng.uniform(lo, hi, size=shape)
        if exclude_zero:
            values[values == 0] = np.finfo(np.float32).tiny
    if requires_grad and not (name.startswith(("float", "complex", "bfloat"))):
        raise ValueError(
            f"make_tensor: requires_grad=True is not supported for {dtype}: "
            "only floating point and complex dtypes can require gradients"
        )
    out = _eager.tensor(values, dtype=dtype, device=device)
    return out.requires_grad_(requires_grad) if requires_grad else out
