"""Which inputs a rule reads, and how: the one analysis both modes use.

Takes a VJP (or JVP) lambda, reads its template (`registry.vjp_template`) and returns, for
each name its body reads, the least it needs of it (NONE < SHAPE < META < VALUE). The
compiler keeps by name what is read at META or more (`reads_value_of`); the eager engine
keeps a Meta of what is read at SHAPE or META and the value of what is read at VALUE
(`sourcegrad.eager.spec`).

Imports: gast and `registry` only.
"""

from __future__ import annotations

import gast

from .registry import vjp_template

# How a VJP body reads a name, from least to most:
#   NONE;
#   SHAPE: its shape only, where the compiler folds it once shapes are known (`x.shape`,
#          `x.ndim`, `x.size`, `unbroadcast(g, x)`);
#   META: its shape or dtype only, through a call that takes the array itself
#         (`unindex(g, x, i)`, `np.zeros_like(x)`, `x.dtype`): the eager engine keeps a
#         Meta of it, the compiler keeps the value (the call reads it by name);
#   VALUE: its values.
NONE, SHAPE, META, VALUE = 0, 1, 2, 3

_FOLDED_ATTRS = {"shape", "ndim", "size"}
_META_ATTRS = {"dtype"}
# Calls whose argument at the given position is read only for its shape (or dtype).
_FOLDED_ARGS = {"unbroadcast": 1}
_META_ARGS = {
    "unindex": 1,
    "expand_reduced": 1,
    "reduced_count": 0,
    "take_part": 1,
    "shape": 0,
    "ndim": 0,
    "size": 0,
    "zeros_like": 0,
    "is_complex": 0,
}
_READS: dict = {}


def reads(vjp) -> dict:
    """{parameter name: SHAPE, META or VALUE} for the names a VJP (or JVP) body reads."""
    key = id(vjp.__code__)
    found = _READS.get(key)
    if found is None:
        found = _READS[key] = _analyse(vjp_template(vjp))
    return found


def _analyse(lam) -> dict:
    uses: dict = {}

    def visit(node, level=VALUE):
        if isinstance(node, gast.Name):
            if isinstance(node.ctx, gast.Load):
                uses[node.id] = max(uses.get(node.id, NONE), level)
            return
        if isinstance(node, gast.Attribute):
            visit(
                node.value,
                SHAPE
                if node.attr in _FOLDED_ATTRS
                else META
                if node.attr in _META_ATTRS
                else VALUE,
            )
            return
        if isinstance(node, gast.Call):
            callee = node.func
            name = (
                callee.id
                if isinstance(callee, gast.Name)
                else (callee.attr if isinstance(callee, gast.Attribute) else None)
            )
            folded, meta = _FOLDED_ARGS.get(name), _META_ARGS.get(name)
            if isinstance(callee, gast.Attribute) and not (
                isinstance(callee.value, gast.Name) and callee.value.id == "np"
            ):
                visit(callee)  # a method call: the object is read for its value
            for i, arg in enumerate(node.args):
                visit(
                    arg,
                    SHAPE
                    if i == folded and len(node.args) == 2
                    else META
                    if i == meta or i == folded
                    else VALUE,
                )
            for kw in node.keywords:
                visit(kw.value)
            return
        for child in gast.iter_child_nodes(node):
            visit(child)

    visit(lam.body)
    return uses


def read_level(rule, param) -> int:
    """The most any VJP of `rule` reads its input `param` (NONE, SHAPE, META or VALUE)."""
    return max((reads(v).get(param, NONE) for v in rule.vjps if v is not None), default=NONE)


def reads_value_of(rule, param) -> bool:
    """Does the compiled backward of `rule` read its input `param` by name (not only a shape
    it folds: `unbroadcast(g, x)`, `x.shape`, `x.ndim`, `x.size`)?"""
    return read_level(rule, param) >= META


def reads_operand_named(rule, args, kwargs, name) -> bool:
    """Would the compiled backward of `rule`, called on `args` and `kwargs` (atoms; keyword
    pairs), read the value of an operand that is the variable `name`? (A statement that
    assigns `name` from such a call overwrites what its own backward reads: the front ends
    compute it into a temporary first.)"""
    if not rule.vjps:
        return False
    params = list(rule.params)
    for i, atom in enumerate(args):
        if getattr(atom, "name", None) == name:
            if i >= len(params) or reads_value_of(rule, params[i]):
                return True
    return any(
        getattr(atom, "name", None) == name and (k not in params or reads_value_of(rule, k))
        for k, atom in kwargs
    )


def reads_shape_of(rule, param) -> bool:
    """Does any VJP of `rule` read its input `param` at all (its shape, at least)?"""
    return read_level(rule, param) >= SHAPE
