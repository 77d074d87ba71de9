"""Row blocks: a batch's gradient computed a block of rows at a time, under `memory=B`.

`in_row_blocks(plan, fn, forward, backward, namer, env, ret, wrt)` takes the two sweeps
`reverse.reverse` made of straight-line code (top-level assignments, made once) and the
gradient's return, and gives `(forward, backward)` where the rows of the batch go through
the forward and the backward one block at a time, or None where that does not apply:

    <what reads no row: weights' transposes, constants>      (the forward, before the loop)
    dW1 = np.zeros(...)                                      (one per sum over the rows)
    for row in range(0, N, rows):
        X_rows = X[row:row + rows]                           (each input row-indexed)
        h = np.tanh(X_rows @ W1 + b1)                        (the forward of the block)
        ...
        dW1 += X_rows.T @ d_h                                (the backward of the block)
    <what reads the sums over the rows: the loss's value, a mean's division>

Each value then holds one block of rows; the backward keeps, per block, what it reads of
that block's forward, and nothing runs twice: the time is the unplanned gradient's (a
matrix product over a block of rows costs its share of the whole one).

When it applies: a leading axis of length N that some inputs (not differentiated) have is a
batch axis along which the program is row-wise: every value is either made without those
inputs (a weight, a constant: read whole), or row i of it is made from row i of what it
reads (elementwise operations with the weights broadcast along the rows, `rows @ W`,
reductions along the other axes, transposes, which make the axis a column axis), or it
sums over the rows (`x.sum(axis=0)`, `np.mean(x)`, `cols @ rows`: accumulated block by block);
and nothing made from a sum over the rows is read by a row-wise value (a batch norm's mean
would need every block first), nor returned row-wise. Any other operation on a row value,
an update in place, a draw, a loop or a branch: None (the caller recomputes values instead,
`checkpointing.recompute_under_budget`).

The block: the most rows (a divisor of N, so that every block has one shape, the one the
generated code is specialised to) whose saved values, those the block's backward reads of
its forward, fit in B beside the values made once and the sums over the rows (held through
the loop: dW1 is as large as W1); None when all the rows fit already or
fewer than `MIN_ROWS` would. The loop's comment names the rows and the budget, each
forward statement the block keeps says so (`SAVED_PER_BLOCK`: the manifest's "saved per
row block" entries, `checkpointing.manifest`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import SourceLocation
from ...ops import RULES
from ..analysis import AVal, stand_in
from ..ir import (
    Assign,
    Call,
    Const,
    For,
    Marker,
    Slc,
    Tup,
    Var,
    atom_vars,
    reads_of,
    substitute_value,
)
from ..optimize.cleanup import (
    eliminate_dead_code,
    inline_shape_only_values,
    propagate_copies_and_cse,
)

__all__ = ["in_row_blocks", "MIN_ROWS", "SAVED_PER_BLOCK", "IN_ROW_BLOCKS"]

# fewer rows a block than this: a loop of many small products costs more than recomputing
MIN_ROWS = 8
# what the comments of the code this module writes say (the manifest reads SAVED_PER_BLOCK)
IN_ROW_BLOCKS = "the batch in blocks of"
SAVED_PER_BLOCK = "kept for its block's backward"

# the kinds of value: made without the rows (read whole), row i from row i (axis 0), the
# same transposed (axis 1), a sum over the rows, made from such a sum (after the loop)
WHOLE, ROW, COL, SUM, TAIL = "whole", "row", "col", "sum", "tail"
# a row value's shape, size or length: the whole batch's, known when compiling
STATIC = "static"
_SUMS = ("sum", "mean")  # reductions over the rows that blocks add up
_TRANSPOSES = ("T", "transpose")


def in_row_blocks(plan, fn, forward, backward, namer, env, ret, wrt=()):
    """See the module docstring. `ret`: the gradient's `Return`; `wrt`: the differentiated
    inputs (weights, read whole, whatever their length). `env` gets the block values'
    abstract values (a block's shape)."""
    if not isinstance(plan.memory, int) or isinstance(plan.memory, bool):
        return None
    stmts = forward + backward
    if not all(_plain(s) for s in stmts):
        return None
    targets = [s.target for s in stmts]
    if len(set(targets)) != len(targets) or set(targets) & set(fn.params):
        return None
    forward, backward, ret = _simplified(fn, forward, backward, ret, env)
    for n in _candidates(fn, env, wrt):
        plan_made = _classify(n, fn, forward, backward, ret, env, wrt)
        if plan_made is None:
            continue
        rows = _block_rows(plan, n, forward, backward, plan_made, env)
        if rows is None:
            continue
        return _blocked(plan, fn, n, rows, forward, backward, ret, plan_made, namer, env)
    return None


def _plain(s) -> bool:
    """A top-level assignment of a pure operation, not in place (every kind this module
    moves into a loop without changing what it computes)."""
    if type(s) is not Assign or s.in_place:
        return False
    return not isinstance(s.value, Call) or RULES[s.value.op].pure


def _simplified(fn, forward, backward, ret, env):
    """The sweeps as the optimizer's first passes leave them: a value read for its shape only
    replaced by that shape (the whole batch's: read after the loop, it must not become a
    block's), copies propagated, common values merged, dead ones dropped."""
    shapes = {
        n: a.shape
        for n, a in env.items()
        if a is not None and not a.is_python_scalar and hasattr(a.stand_in, "shape")
    }
    body = inline_shape_only_values(
        forward + [Marker()] + backward + [ret], set(fn.params), shapes, fn.user_names
    )
    body = eliminate_dead_code(propagate_copies_and_cse(body, fn.params))
    cut = next(i for i, s in enumerate(body) if isinstance(s, Marker))
    backward, now = body[cut + 1 : -1], body[-1]
    # (the caller returns its own names: those the simplification renamed are copied back)
    was = ret.value.items if isinstance(ret.value, Tup) else (ret.value,)
    got = now.value.items if isinstance(now.value, Tup) else (now.value,)
    for old, new in zip(was, got):
        if isinstance(old, Var) and old != new and old.name not in fn.params:
            backward.append(Assign(old.name, new, ret.loc))
    return body[:cut], backward, ret


def _aval(env, name):
    """The abstract value of an array (None for a number, a list, an unknown)."""
    aval = env.get(name)
    return (
        aval
        if aval is not None and isinstance(getattr(aval, "stand_in", None), np.ndarray)
        else None
    )


def _bytes(env, name) -> int:
    """What a value holds, for the signature compiled (8 for a number)."""
    aval = _aval(env, name)
    return int(aval.stand_in.nbytes) if aval is not None else 8


def _candidates(fn, env, wrt):
    """Lengths of a leading axis of inputs not differentiated, the most bytes first."""
    by_length: dict = {}
    for p in (p for p in fn.params if p not in wrt):
        aval = _aval(env, p)
        if aval is not None and aval.ndim >= 1 and aval.shape[0] > 1:
            by_length[aval.shape[0]] = by_length.get(aval.shape[0], 0) + aval.stand_in.nbytes
    return sorted(by_length, key=lambda n: (-by_length[n], n))


@dataclasses.dataclass
class _Kinds:
    kind: dict  # name -> WHOLE, ROW, COL, SUM or TAIL (WHOLE when absent)
    sliced: list  # values read whole, sliced in the loop (inputs with the rows)
    sums: dict  # name of a sum over the rows -> its reduction ("sum", "mean", "product")
    static: dict  # name of a shape-only read of a row value -> its constant


def _classify(n, fn, forward, backward, ret, env, wrt):
    """The kind of each value for a batch axis of length n, or None where the program is not
    row-wise along it (see the module docstring)."""
    kind, sliced, sums, static = {}, [], {}, {}

    def of(atom):
        if isinstance(atom, Var):
            made = kind.get(atom.name, WHOLE)
            return WHOLE if made == STATIC else made
        if isinstance(atom, (Tup, Slc)) and any(
            kind.get(v, WHOLE) not in (WHOLE, STATIC) for v in atom_vars(atom)
        ):
            return None  # (an index made from the rows)
        return WHOLE

    for name in fn.params:
        aval = _aval(env, name)
        # (a differentiated input of n rows, the batch itself, is read whole: its gradient
        # is then a row value, returned, which is refused below)
        if aval is not None and aval.ndim and aval.shape[0] == n and name not in wrt:
            kind[name] = ROW
    for s in forward + backward:
        value = s.value
        atoms = value.atoms() if isinstance(value, Call) else [value]
        kinds = [of(a) for a in atoms]
        if None in kinds:
            return None
        if all(k == WHOLE for k in kinds):
            continue
        if _static(value, env) is not None:
            kind[s.target] = STATIC
            static[s.target] = _static(value, env)
            continue
        if SUM in kinds or TAIL in kinds:
            if ROW in kinds or COL in kinds:
                return None  # a row value made from a sum over the rows: two passes
            kind[s.target] = TAIL
            continue
        if not isinstance(value, Call):
            kind[s.target] = kinds[0]
            continue
        made = _row_kind(value, kinds, env, n, s.target, sliced)
        if made is None:
            return None
        if made == SUM:
            sums[s.target] = value.op if value.op in _SUMS else "product"
        kind[s.target] = made
    out = ret.value.items if isinstance(ret.value, Tup) else (ret.value,)
    if any(kind.get(v, WHOLE) in (ROW, COL) for a in out for v in atom_vars(a)):
        return None
    if not any(k == ROW for k in kind.values()):
        return None
    return _Kinds(kind, sliced, sums, static)


def _static(value, env):
    """The constant a shape-only read of a value (`x.shape`, `x.size`, `len(x)`) gives for
    the whole batch, or None."""
    if not (isinstance(value, Call) and RULES[value.op].static_result):
        return None
    if len(value.args) != 1 or value.kwargs or not isinstance(value.args[0], Var):
        return None
    aval = _aval(env, value.args[0].name)
    if aval is None:
        return None
    family = RULES[value.op].family
    shape = tuple(aval.shape)
    known = {
        "shape": shape,
        "size": int(np.prod(shape, dtype=np.int64)),
        "ndim": len(shape),
        "len": shape[0] if shape else None,
    }.get(family)
    return None if known is None else Const(known)


def _row_kind(value, kinds, env, n, target, sliced):
    """The kind of `target = value` made from at least one row value, or None."""
    op, rule = value.op, RULES[value.op]
    out = _aval(env, target)
    atoms = value.atoms()
    if rule.kind == "elementwise":
        if out is None or out.ndim == 0 or out.shape[0] != n or COL in kinds:
            return None
        for atom, k in zip(atoms, kinds):
            aval = _aval(env, atom.name) if isinstance(atom, Var) else None
            if k == ROW:
                if aval is None or aval.ndim != out.ndim:
                    return None  # (the rows along another axis of the result)
            elif aval is not None and aval.ndim == out.ndim and aval.shape[0] != 1:
                if aval.shape[0] != n:
                    return None
                if atom.name not in sliced:
                    sliced.append(atom.name)  # read row by row: sliced as the rows are
        return ROW
    if rule.kind == "reduction":
        if kinds[0] != ROW or any(k != WHOLE for k in kinds[1:]):
            return None
        bound = dict(zip(rule.params, value.args)) | dict(value.kwargs)
        axis = bound.get("axis", Const(None))
        if not isinstance(axis, Const):
            return None
        ndim = _aval(env, atoms[0].name).ndim
        axes = (
            set(range(ndim))
            if axis.value is None
            else {
                a % ndim for a in (axis.value if isinstance(axis.value, tuple) else (axis.value,))
            }
        )
        if 0 not in axes:
            return ROW
        return SUM if op in _SUMS and (op == "sum" or axes == set(range(ndim))) else None
    if rule.product and len(atoms) == 2 and not value.kwargs:
        (a, b), (ka, kb) = atoms, kinds
        da, db = (_aval(env, x.name).ndim if _aval(env, x.name) else 0 for x in (a, b))
        if (ka, kb) == (ROW, WHOLE) and da == 2 and db in (1, 2):
            return ROW
        if (ka, kb) == (WHOLE, COL) and da == 2 and db == 2:
            return COL
        if ((ka, kb) == (COL, ROW) and da == 2) or ((ka, kb) == (ROW, ROW) and da == 1):
            return SUM if db in (1, 2) else None
        return None
    if op in _TRANSPOSES and len(atoms) == 1 and not value.kwargs and kinds[0] in (ROW, COL):
        ndim = _aval(env, atoms[0].name).ndim if _aval(env, atoms[0].name) else 0
        if ndim == 2:
            return COL if kinds[0] == ROW else ROW
        return None
    return None


def _block_rows(plan, n, forward, backward, kinds, env):
    """The rows of a block (see the module docstring), or None."""
    made = {s.target for s in forward}
    saved = [v for v in made if v in _read_back(backward, kinds)]
    per_rows = sum(_bytes(env, v) for v in saved if kinds.kind.get(v) in (ROW, COL))
    once = sum(_bytes(env, v) for v in saved if kinds.kind.get(v) not in (ROW, COL))
    # (the sums over the rows are held through the loop, beside a block's saved values)
    once += sum(_bytes(env, v) for v in kinds.sums)
    if per_rows == 0 or plan.memory <= once:
        return None
    fit = (plan.memory - once) * n // per_rows
    if fit >= n:
        return None
    rows = max((d for d in range(MIN_ROWS, fit + 1) if n % d == 0), default=None)
    return rows


def _read_back(backward, kinds) -> set:
    """What the backward reads, less what it reads for its shape only (a constant then)."""
    return {v for s in backward if s.target not in kinds.static for v in reads_of(s)}


def _blocked(plan, fn, n, rows, forward, backward, ret, kinds, namer, env):
    """(forward, backward, ret): what reads no row before the loop (the forward's in the
    forward), each sum over the rows started at zero, the loop over the blocks (the inputs'
    rows sliced, the row values' statements in order, each sum's part added), then what
    reads the sums (a mean's division first)."""
    # (long: the blocked program built in its order (before the loop, the loop over blocks,
    # after it) by one loop over the statements, each statement's kind deciding where it
    # goes)
    kind = kinds.kind
    made = {s.target for s in forward}
    read_back = _read_back(backward, kinds)
    inputs = [p for p in fn.params if kind.get(p) == ROW] + kinds.sliced
    row, end = namer.fresh("row"), namer.fresh("row_end")
    env[row] = env[end] = AVal(0)
    what = ", ".join(inputs)
    why = f"{IN_ROW_BLOCKS} {rows} of its {n} rows ({what}), {plan.describe()}"

    def noted(s, note):
        if s.loc is None:
            return s
        text = f"{s.loc.text.strip()}  ({note})"
        return dataclasses.replace(s, loc=SourceLocation(s.loc.file, s.loc.line, s.loc.col, text))

    def block_aval(name, axis):
        aval = _aval(env, name)
        shape = list(aval.shape)
        shape[axis] = rows
        return AVal(stand_in(tuple(shape), aval.dtype))

    loc = (
        fn.loc
        if fn.loc is None
        else SourceLocation(fn.loc.file, fn.loc.line, fn.loc.col, f"{fn.loc.text.strip()}  ({why})")
    )
    # the batch's length as the code reads it (`len(X)`), where an input carries the rows
    length = Const(n)
    sizes = []
    if inputs and inputs[0] in fn.params:
        length = Var(namer.fresh(f"len_{inputs[0]}"))
        env[length.name] = AVal(n)
        sizes.append(Assign(length.name, Call("len", (Var(inputs[0]),)), loc, "row block"))
    mapping, loop = {}, [Assign(end, Call("add_op", (Var(row), Const(rows))), loc, "row block")]
    for name in inputs:
        mapping[name] = Var(namer.fresh(f"{name}_rows"))
        env[mapping[name].name] = block_aval(name, 0)
        loop.append(
            Assign(
                mapping[name].name,
                Call("getitem", (Var(name), Slc(Var(row), Var(end), Const(None)))),
                loc,
                "row block",
            )
        )
    before, starts, after, means = [], [], [], []
    for s in forward + backward:
        k = kind.get(s.target, WHOLE)
        forward_side = s.target in made
        if k == STATIC:  # (read before the loop changes the values' shapes to a block's)
            k, s = WHOLE, dataclasses.replace(s, value=kinds.static[s.target])
        if k == WHOLE:
            before.append(s) if forward_side else starts.append(s)
            continue
        if k == TAIL:
            after.append(s)
            continue
        s = _substituted(s, mapping)
        if k in (ROW, COL):
            env[s.target] = block_aval(s.target, 0 if k == ROW else 1)
            if forward_side:
                note = f"forward of a block of {rows} rows"
                if s.target in read_back:
                    note += f", {SAVED_PER_BLOCK}"
                s = noted(s, note)
            loop.append(s)
            continue
        # a sum over the rows: each block's part added to it
        total = s.target if kinds.sums[s.target] != "mean" else namer.fresh(f"{s.target}_sum")
        part = namer.fresh(f"{s.target}_rows")
        aval = env.get(s.target)
        env[part] = env[total] = aval
        value = s.value
        shape = getattr(aval.stand_in, "shape", ())
        if kinds.sums[s.target] == "mean":
            value = Call("sum", value.args, value.kwargs)
            summed = int(np.prod(_aval(env, value.args[0].name).shape)) * n // rows
            count = summed // max(int(np.prod(shape)), 1)
            divisor = length if count == n else Const(count)
            means.append(Assign(s.target, Call("div_op", (Var(total), divisor)), s.loc, s.note))
        if shape == ():  # (a number: a 0-d array would be returned as one)
            zeros = Const(0.0)
        else:
            dtype = () if aval.dtype == np.float64 else (("dtype", Const(str(aval.dtype))),)
            zeros = Call("np_zeros", (Const(shape),), dtype)
        starts.append(Assign(total, zeros, s.loc, "row block"))
        loop.append(dataclasses.replace(s, target=part, value=value))
        loop.append(Assign(total, Call("iadd_op", (Var(total), Var(part))), s.loc, "accumulate"))
    block = For(row, Const(0), length, Const(rows), loop, loc)
    return before, sizes + starts + [block] + means + after, ret


def _substituted(s, mapping):
    return dataclasses.replace(s, value=substitute_value(s.value, mapping))
