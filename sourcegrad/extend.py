"""HIPS autograd's `autograd.extend` spellings: a function of the user's with its own derivative.

`primitive(fun)` takes a Python function and returns a `Primitive`: called, it runs `fun` as
Python (neither front end reads or traces inside it: in-place writes, loops, calls into other
libraries are all fine), and its derivative is the one given with

* `defvjp(prim, vjpmaker_0, vjpmaker_1, ..., argnums=None)`: for the positional argument
  `i`, `vjpmaker_i(ans, *args, **kwargs)` returns `g -> the VJP of g for args[i]` (autograd's
  signature; None: that argument gets no gradient, zeros);
* `defjvp(prim, jvpmaker_0, ...)`: `jvpmaker_i(t, ans, *args, **kwargs)` returns the output's
  tangent for the tangent `t` of args[i] (forward mode: `sourcegrad.jvp`).

Both compiler front ends differentiate a call of it: the source front end lowers it to the
registry's `primitive_call` op, the trace front end records the same op
(`ops.primitive_call`), and generated code calls the user's maker when the backward runs.
An argument with no maker given raises `NoRuleError` naming the primitive and the argument;
a VJP whose shape is not its argument's raises `ShapeError` (never a silently broadcast
gradient). Keyword arguments are passed through and never differentiated (as in autograd).
A second derivative through a primitive differentiates the user's VJP code itself, as autograd
does (`Primitive.derivative`: the maker, called as a function of `(g, ans, *args)`, is traced
where the backward is differentiated again), so a maker must be written with differentiable
numpy, as autograd asks of it.
"""

from __future__ import annotations

import functools
import linecache
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import compiler, errors
from .compiler import Traced

__all__ = ["Primitive", "defjvp", "defvjp", "primitive"]


class Primitive:
    """`primitive(fun)`: a function the compilers do not look inside, differentiated by the
    VJPs and JVPs given with `defvjp` / `defjvp` (see the module's docstring)."""

    # read by the source front end (a call of it is `ops.primitive_call`)
    _sourcegrad_primitive = True

    def __init__(self, fun: Callable) -> None:
        self.fun = fun
        self.vjpmakers: dict = {}
        self.jvpmakers: dict = {}
        self._derivatives: dict = {}
        functools.update_wrapper(self, fun)

    def __repr__(self) -> str:
        return f"<sourcegrad.extend.primitive {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # keywords are passed through, not differentiated: bound now
            return _with_keywords(self, kwargs, *args)
        if any(type(a) is Traced for a in args):  # called inside a traced function
            return compiler.active_trace().primitive_call(self, args)
        return self.fun(*args)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # `@primitive` on a method: the instance is its first argument
        return self if obj is None else functools.partial(self, obj)

    def with_keywords(self, kwargs: dict) -> "Primitive":
        """This primitive with the keywords fixed (the source front end's constant keywords)."""
        return keyword_primitive(self, kwargs)

    # -- called by generated code when the backward / forward-mode pass runs --------------------

    def vjp(self, argnum: int, g: Any, ans: Any, args: Sequence) -> Any:
        """The VJP of `g` for positional argument `argnum`, from the user's maker."""
        maker = self._maker(self.vjpmakers, argnum, "VJP", "defvjp")
        if maker is None:  # defvjp(f, None, ...): no gradient for that argument
            return np.zeros_like(args[argnum], dtype=float)
        return self._checked(maker(ans, *args)(g), args[argnum], argnum, "VJP")

    def jvp(self, argnum: int, t: Any, ans: Any, args: Sequence) -> Any:
        """The output's tangent for the tangent `t` of positional argument `argnum`."""
        maker = self._maker(self.jvpmakers, argnum, "JVP", "defjvp")
        if maker is None:
            return np.zeros_like(ans, dtype=float)
        return self._checked(maker(t, ans, *args), ans, argnum, "JVP")

    def derivative(self, kind: str, argnum: int, count: int) -> Callable:
        """The VJP (kind "vjp") or JVP of argument `argnum` as a function of `(g, ans, *args)`
        with `count` args: what a second derivative differentiates (the source front end
        calls it through a trace). One object per (kind, argnum, count): its trace is kept."""
        key = (kind, argnum, count)
        made = self._derivatives.get(key)
        if made is None:
            made = self._derivatives[key] = _derivative_function(self, kind, argnum, count)
        return made

    def _maker(self, makers: dict, argnum: int, what: str, how: str) -> Optional[Callable]:
        if argnum not in makers:
            given = ", ".join(map(str, sorted(makers))) or "none"
            raise errors.NoRuleError(
                f"primitive {self.__name__}: no {what} for its argument {argnum}, which a "
                f"derivative asked for (given: {given}); give it with "
                f"sourcegrad.extend.{how}({self.__name__}, ...)"
            )
        return makers[argnum]

    def _checked(self, value: Any, like: Any, argnum: int, what: str) -> Any:
        if np.shape(value) != np.shape(like):
            raise errors.ShapeError(
                f"primitive {self.__name__}: its {what} for argument {argnum} has shape "
                f"{np.shape(value)}, not its {'output' if what == 'JVP' else 'argument'}'s "
                f"{np.shape(like)}"
            )
        return value


def _derivative_function(prim: Primitive, kind: str, argnum: int, count: int) -> Callable:
    """`(g, ans, a0, ..., a{count-1}) -> prim's VJP (or JVP) for argument argnum`, with as many
    parameters as the call has arguments (a gradient is taken by position)."""
    makers = prim.vjpmakers if kind == "vjp" else prim.jvpmakers
    if argnum not in makers:
        prim._maker(makers, argnum, kind.upper(), "def" + kind)  # (raises, naming them)
    params = ", ".join(f"a{i}" for i in range(count))
    call = f"maker(ans, {params})(g)" if kind == "vjp" else f"maker(g, ans, {params})"
    zero = (
        "np.zeros_like(ans, dtype=float)"
        if kind == "jvp"
        else f"np.zeros_like(a{argnum}, dtype=float)"
    )
    body = zero if makers[argnum] is None else call
    scope = {"maker": makers[argnum], "np": np}
    text = f"def {kind}_of(g, ans, {params}):\n    return {body}\n"
    filename = f"<sourcegrad.extend: the {kind.upper()} of {prim.__name__}, argument {argnum}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), scope)  # noqa: S102
    made = scope[f"{kind}_of"]
    made.__name__ = f"{kind}_of_{prim.__name__}"
    return made


def _with_keywords(prim: Primitive, kwargs: dict, *args: Any) -> Any:
    """`prim(x, axis=1)`: a primitive of the positional arguments, the keywords fixed."""
    if any(type(v) is Traced for v in kwargs.values()):
        raise errors.UnsupportedSyntaxError(
            f"primitive {prim.__name__}: a keyword argument carries a gradient; keywords are "
            "not differentiated (as in autograd): pass it by position"
        )
    return keyword_primitive(prim, kwargs)(*args)


_KEYWORD_PRIMITIVES: dict = {}  # (primitive, keywords) -> its primitive of positional arguments


def keyword_primitive(prim: Primitive, kwargs: dict) -> Primitive:
    """`prim` with the keywords `kwargs` fixed: a primitive of its positional arguments, the
    same keywords passed to each maker (as autograd passes them). The same object for the
    same keywords (a compiled call binds it), where they are hashable."""
    try:
        key: Any = (prim, tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:  # (an array as a keyword: made anew)
        key = None
    made = _KEYWORD_PRIMITIVES.get(key) if key is not None else None
    if made is None:
        made = Primitive(functools.partial(prim.fun, **kwargs))
        made.__name__ = prim.__name__
        made.vjpmakers = _Makers(prim.vjpmakers, kwargs)
        made.jvpmakers = _Makers(prim.jvpmakers, kwargs)
        if key is not None:
            if len(_KEYWORD_PRIMITIVES) >= 256:
                _KEYWORD_PRIMITIVES.clear()
            _KEYWORD_PRIMITIVES[key] = made
    return made


class _Makers(dict):
    """A primitive's makers as its keyword primitive sees them: read when called (a defvjp
    after the first call counts), each given the call's keywords."""

    def __init__(self, makers: dict, kwargs: dict) -> None:
        super().__init__()
        self.makers, self.kwargs = makers, kwargs

    def __contains__(self, argnum: object) -> bool:
        return argnum in self.makers

    def __getitem__(self, argnum: Any) -> Any:
        maker = self.makers[argnum]
        return None if maker is None else functools.partial(maker, **self.kwargs)

    def __iter__(self):
        return iter(self.makers)

    def __len__(self) -> int:
        return len(self.makers)


def primitive(fun: Callable) -> Primitive:
    """autograd's `@primitive`: `fun` is run as Python, differentiated by what `defvjp` and
    `defjvp` give it."""
    if isinstance(fun, Primitive):
        return fun
    return Primitive(fun)


def defvjp(fun: Primitive, *vjpmakers: Optional[Callable], argnums: Any = None) -> None:
    """autograd's `defvjp(fun, vjpmaker_0, vjpmaker_1, ...)`: `vjpmaker_i(ans, *args)`
    returns `g -> VJP for args[i]`; `argnums` names the arguments the makers are for."""
    _define(fun, vjpmakers, argnums, "vjpmakers", "defvjp")


def defjvp(fun: Primitive, *jvpmakers: Optional[Callable], argnums: Any = None) -> None:
    """autograd's `defjvp(fun, jvp_0, jvp_1, ...)`: `jvp_i(t, ans, *args)` returns the output's
    tangent for the tangent `t` of args[i]."""
    _define(fun, jvpmakers, argnums, "jvpmakers", "defjvp")


def _define(fun: Any, makers: tuple, argnums: Any, where: str, how: str) -> None:
    if not isinstance(fun, Primitive):
        raise errors.UnsupportedSyntaxError(
            f"sourcegrad.extend.{how} takes a function made with sourcegrad.extend.primitive "
            f"(@primitive), not {getattr(fun, '__name__', type(fun).__name__)}"
        )
    argnums = range(len(makers)) if argnums is None else argnums
    for argnum, maker in zip(argnums, makers):
        if maker is not None and not callable(maker):
            raise errors.UnsupportedSyntaxError(
                f"sourcegrad.extend.{how}({fun.__name__}, ...): its maker for argument "
                f"{argnum} is {maker!r}; give a function or None (autograd's 'same' and "
                "linear shortcuts are not supported)"
            )
        getattr(fun, where)[argnum] = maker
