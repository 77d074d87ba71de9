"""The fast path of a compiled gradient's call: one guard for the signature called last.

`fast_entry(args, fn, finish, converters, still_valid, with_value, single, fallback)` takes
the arguments of a call that was just compiled (or found in the cache), the generated
function for their signature, the function giving its results their inputs' types
(None when the generated code already returns them; or, per gradient, the conversion
it needs) and, when the generated code was built from global or closure values, a
function telling whether those are still bound; it
returns a function `entry(*args, **kwargs)` that computes the gradient when `args`
have the same signature (`analysis.signature_key` would give the same key) and hands
any other call to `fallback` (returns `MISS` without one). It returns None for
signatures a few type checks cannot confirm (lists, dicts, unusual objects): those
calls always take the general path.

Why generate it: building the signature key (a tuple of tuples, with each dtype's
name) and looking it up costs about as much as a small gradient itself (0.5-1.5 µs
on 0-d or 64-element inputs). The entry checks exactly what the key holds, written
out as straight-line comparisons against the constants of this signature:

    def entry(a0=MISS, a1=MISS, /, *extra, **keywords):
        if not extra and not keywords and type(a0) is ndarray and a0.shape == shape_0 \\
                and a0.dtype is dtype_0 and type(a1) is float:
            return gradient(a0, a1)
        return fallback(*given(a0, a1), *extra, **keywords)

A dtype equal to the signature's but a different object (a byte-swapped spelling)
fails `is` and takes the general path, which is slower, never wrong.
"""
from __future__ import annotations

import numpy as np

MISS = object()  # what an entry returns for arguments of another signature


def fast_entry(args, fn, finish=None, converters=None, still_valid=None, with_value=False,
               single=True, fallback=None):
    """A function computing `fn` for arguments of `args`' signature, `fallback(*args,
    **kwargs)` (or MISS) for others.

    `converters` (one per gradient: None or a function of it), where given, are written
    into the entry in place of calling `finish`."""
    names = [f"a{i}" for i in range(len(args))]
    constants = {"MISS": MISS, "gradient": fn, "finish": finish, "still_valid": still_valid,
                 "fallback": fallback, "given": _given}
    checks = ["not extra", "not keywords"]
    for i, (name, value) in enumerate(zip(names, args)):
        check = _check(name, value, i, constants)
        if check is None:
            return None
        checks.append(check)
    if still_valid is not None:
        checks.append("still_valid()")
    call = f"gradient({', '.join(names)})"
    arguments = f"({', '.join(names)},)"
    if finish is None:
        lines = [f"return {call}"]
    elif converters is not None:
        grads = [f"g{k}" for k in range(len(converters))]
        converted = []
        for k, (g, convert) in enumerate(zip(grads, converters)):
            if convert is not None:
                constants[f"convert_{k}"] = convert
            converted.append(g if convert is None else f"convert_{k}({g})")
        unpacked = grads[0] if single else f"({', '.join(grads)},)"
        out = converted[0] if single else f"({', '.join(converted)},)"
        lines = [f"value, {unpacked} = {call}" if with_value else f"{unpacked} = {call}",
                 f"return value, {out}" if with_value else f"return {out}"]
    elif with_value:
        lines = [f"value, grads = {call}", f"return value, finish(grads, {arguments})"]
    else:
        lines = [f"return finish({call}, {arguments})"]
    # positional-only: a keyword argument, even one named a0, is the general path's to bind
    params = "".join(f"{n}=MISS, " for n in names) + ("/, " if names else "")
    body = "".join(f"        {line}\n" for line in lines)
    miss = "MISS" if fallback is None else \
        f"fallback(*given({''.join(n + ', ' for n in names)}), *extra, **keywords)"
    source = (f"def entry({params}*extra, **keywords):\n    if {' and '.join(checks)}:\n"
              f"{body}    return {miss}\n")
    exec(compile(source, "<sourcegrad dispatch>", "exec"), constants)
    return constants["entry"]


def _check(name, value, i, constants):
    """The test that `name` has `value`'s part of the signature key, or None if none is cheap."""
    t = type(value)
    if t is float:
        return f"type({name}) is float"
    constants[f"type_{i}"] = t
    if t is np.ndarray or hasattr(value, "__cuda_array_interface__"):
        constants[f"shape_{i}"] = value.shape
        constants[f"dtype_{i}"] = value.dtype
        return (f"type({name}) is type_{i} and {name}.shape == shape_{i} and "
                f"{name}.dtype is dtype_{i}")
    if isinstance(value, np.generic):
        return f"type({name}) is type_{i}"
    if t in (bool, type(None)):
        constants[f"value_{i}"] = value
        return f"{name} is value_{i}"
    if t in (int, str, tuple) and _hashable(value):
        constants[f"value_{i}"] = value
        return f"type({name}) is type_{i} and {name} == value_{i}"
    return None


def _given(*values):
    """The arguments a call gave (the entry's parameters default to MISS)."""
    return [v for v in values if v is not MISS]


def _hashable(value) -> bool:
    """Static values are compared with ==: only for the ones the key can hold (hashable)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


__all__ = ["fast_entry", "MISS"]
