"""Python source of the small gast trees codegen builds, byte for byte what astor prints.

`to_source(node)` takes a gast expression (bare, or wrapped in `gast.Expr`), an
assignment, an augmented assignment or a `return` (what `codegen.Printer` makes: names, attributes,
calls, operators, comparisons, constants, tuples, lists, subscripts, slices) and returns
its text without a trailing newline, parenthesized exactly as astor 0.8 does (astor's
precedence table, read from `astor.op_util`). A tree holding anything else (a string
constant: astor chooses its quotes by context) raises `Unprintable`, and the caller prints
it with astor.

Why: astor walks a tree through a generic visitor and needs the `ast` twin of each gast
node built first; at thousands of statements that was most of the cost of code generation
(about a third of a compile). Printing directly is several times faster.
"""

from __future__ import annotations

import math

import gast
from astor.op_util import Precedence as _P


class Unprintable(Exception):
    """A node this printer does not write (the caller falls back to astor)."""


_HIGHEST = _P.highest  # where astor sets no precedence (a call's function, an attribute's value)

_BINOPS = {
    gast.Add: ("+", _P.Add),
    gast.Sub: ("-", _P.Sub),
    gast.Mult: ("*", _P.Mult),
    gast.Div: ("/", _P.Div),
    gast.Mod: ("%", _P.Mod),
    gast.FloorDiv: ("//", _P.FloorDiv),
    gast.MatMult: ("@", _P.MatMult),
    gast.Pow: ("**", _P.Pow),
    gast.BitOr: ("|", _P.BitOr),
    gast.BitXor: ("^", _P.BitXor),
    gast.BitAnd: ("&", _P.BitAnd),
    gast.LShift: ("<<", _P.LShift),
    gast.RShift: (">>", _P.RShift),
}
_UNARY = {
    gast.USub: ("-", _P.USub),
    gast.UAdd: ("+", _P.UAdd),
    gast.Not: ("not ", _P.Not),
    gast.Invert: ("~", _P.Invert),
}
_COMPARE = {
    gast.Eq: ("==", _P.Eq),
    gast.NotEq: ("!=", _P.NotEq),
    gast.Lt: ("<", _P.Lt),
    gast.LtE: ("<=", _P.LtE),
    gast.Gt: (">", _P.Gt),
    gast.GtE: (">=", _P.GtE),
}


def to_source(node) -> str:
    """The statement's text (see the module docstring); `Unprintable` if not written here."""
    kind = type(node)
    if kind is gast.Expr:
        return _expr(node.value, _P.Expr)
    if kind is gast.Assign:
        return "".join(_expr(t, _P.Assign) + " = " for t in node.targets) + _expr(
            node.value, _P.Assign
        )
    if kind is gast.AugAssign:
        symbol = _BINOPS[type(node.op)][0]
        return f"{_expr(node.target, _P.AugAssign)} {symbol}= {_expr(node.value, _P.AugAssign)}"
    if kind is gast.Return:
        return "return" if node.value is None else "return " + _expr(node.value, _P.Return)
    # a bare expression: astor gives it no precedence, so an operation is parenthesized
    return _expr(node, _HIGHEST)


def _expr(node, pp) -> str:
    """`node`'s text where its parent gives it precedence `pp` (parenthesized when its own
    precedence is lower, as astor's `Delimit` does)."""
    kind = type(node)
    if kind is gast.Name:
        return node.id
    if kind is gast.BinOp:
        symbol, p = _BINOPS[type(node.op)]
        if symbol == "**":
            text = f"{_expr(node.left, _P.Pow + 1)} ** {_expr(node.right, _P.PowRHS)}"
        else:
            text = f"{_expr(node.left, p)} {symbol} {_expr(node.right, p + 1)}"
        return text if p >= pp else f"({text})"
    if kind is gast.Call:
        args, keywords = node.args, node.keywords
        p = _P.Comma if len(args) + len(keywords) > 1 else _P.call_one_arg
        parts = [_expr(a, p) for a in args]
        for k in keywords:
            parts.append((f"{k.arg}=" if k.arg else "**") + _expr(k.value, _P.Comma))
        return f"{_expr(node.func, _HIGHEST)}({', '.join(parts)})"
    if kind is gast.Attribute:
        return f"{_expr(node.value, _HIGHEST)}.{node.attr}"
    if kind is gast.Constant:
        return _constant(node.value, pp)
    if kind is gast.UnaryOp:
        symbol, p = _UNARY[type(node.op)]
        text = symbol + _expr(node.operand, p)
        return text if p >= pp else f"({text})"
    if kind is gast.Subscript:
        return f"{_expr(node.value, _HIGHEST)}[{_expr(node.slice, _P.Subscript)}]"
    if kind is gast.Tuple:
        elts = node.elts
        text = ", ".join(_expr(e, _P.Comma) for e in elts) + ("," if len(elts) == 1 else "")
        return text if _P.Tuple >= pp and elts else f"({text})"
    if kind is gast.List:
        return "[" + ", ".join(_expr(e, _P.Comma) for e in node.elts) + "]"
    if kind is gast.Slice:
        text = (
            ("" if node.lower is None else _expr(node.lower, _P.Slice))
            + ":"
            + ("" if node.upper is None else _expr(node.upper, _P.Slice))
        )
        step = node.step
        if step is not None:
            text += ":"
            if not (type(step) is gast.Name and step.id == "None"):
                text += _expr(step, _P.Slice)
        return text
    if kind is gast.Compare:
        symbol, p = _COMPARE.get(type(node.ops[0]), (None, None))
        if symbol is None:
            raise Unprintable(type(node.ops[0]).__name__)
        text = _expr(node.left, p + 1) + "".join(
            f" {_COMPARE[type(op)][0]} {_expr(right, p + 1)}"
            for op, right in zip(node.ops, node.comparators)
        )
        return text if p >= pp else f"({text})"
    raise Unprintable(kind.__name__)


def _constant(value, pp) -> str:
    if isinstance(value, (int, float, complex)):  # (bools too, as astor writes them)
        text = _number(value)
        return text if _P.Constant >= pp else f"({text})"
    if value is Ellipsis:
        return "..."
    if isinstance(value, (str, bytes)):
        raise Unprintable("string constant")  # astor picks quotes by context
    return repr(value)


def _number(x) -> str:
    """astor's spelling of a number: infinity as 1e1000, NaN as (1e1000-1e1000)."""
    if isinstance(x, complex):
        raise Unprintable("complex constant")
    try:
        if math.isinf(x):
            return "-1e1000" if x < 0 else "1e1000"
        if math.isnan(x):
            return "(1e1000-1e1000)"
    except OverflowError:  # an int too large for a float
        pass
    return repr(x)


__all__ = ["to_source", "Unprintable"]
