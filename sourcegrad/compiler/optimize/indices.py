"""Facts about indices the in-place passes share: which elements two indices of one array
name in common. `int_items` reads a constant basic index, `comparison_masks` finds the boolean
masks made by one comparison of operands assigned once, `disjoint` says whether two indices
name no element in common. Takes IR atoms and statement lists; imports `ir` and the registry (`has`).
"""

from __future__ import annotations

import numpy as np

from ...ops import has
from ..ir import Assign, Call, Const, Var


def int_items(index):
    """A constant basic index as a tuple (ints, slices), or None for any other index."""
    if not isinstance(index, Const):
        return None
    items = index.value if isinstance(index.value, tuple) else (index.value,)
    if not all(
        isinstance(i, slice) or isinstance(i, (int, np.integer)) and not isinstance(i, bool)
        for i in items
    ):
        return None
    return items


_COMPARE = {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq"}
_COMPARE.update(less="lt", less_equal="le", greater="gt", greater_equal="ge", equal="eq")
# comparisons of the same operands that are never both true (NaN makes both false)
_EXCLUSIVE = {
    frozenset(p) for p in (("lt", "ge"), ("lt", "gt"), ("le", "gt"), ("lt", "eq"), ("gt", "eq"))
}


def disjoint(a, b, masks=None) -> bool:
    """Two indices of one array that name no element in common: constant basic indices
    where at some axis both take one position, and not the same one (`[:, 2, :]` and
    `[:, 3, :]`); boolean masks that are exclusive comparisons of the same operands
    (`x >= 0` and `x < 0`: `masks` maps a mask's name to its comparison), or a comparison's
    mask and its complement (`pos` and `~pos`)."""
    if masks and isinstance(a, Var) and isinstance(b, Var):
        ca, cb = masks.get(a.name), masks.get(b.name)
        if ca == ("not", (b,)) or cb == ("not", (a,)):  # a mask and its complement
            return True
        return (
            ca is not None
            and cb is not None
            and ca[1] == cb[1]
            and frozenset((ca[0], cb[0])) in _EXCLUSIVE
        )
    a, b = int_items(a), int_items(b)
    if a is None or b is None:
        return False
    return any(
        not isinstance(i, slice)
        and not isinstance(j, slice)
        and int(i) != int(j)
        and (int(i) >= 0) == (int(j) >= 0)
        for i, j in zip(a, b)
    )


def comparison_masks(body, counts) -> dict:
    """{mask name: (its comparison, its operands)} for each boolean mask `body` assigns once
    by a comparison of constants and names assigned at most once (`counts`: name ->
    assignments), and ("not", (mask,)) for the complement of such a mask."""
    masks = {}
    for stmt in body:
        if (
            type(stmt) is Assign
            and type(stmt.value) is Call
            and _COMPARE.get(stmt.value.op)
            and not stmt.value.kwargs
            and counts.get(stmt.target) == 1
            and all(
                isinstance(a, Const) or isinstance(a, Var) and counts.get(a.name, 0) <= 1
                for a in stmt.value.args
            )
        ):
            masks[stmt.target] = (_COMPARE[stmt.value.op], tuple(stmt.value.args))
        elif (
            type(stmt) is Assign
            and type(stmt.value) is Call
            and has(stmt.value.op, "complement")
            and not stmt.value.kwargs
            and counts.get(stmt.target) == 1
            and len(stmt.value.args) == 1
            and isinstance(stmt.value.args[0], Var)
            and stmt.value.args[0].name in masks  # (a comparison's: boolean, so ~ is `not`)
        ):
            masks[stmt.target] = ("not", tuple(stmt.value.args))
    return masks
