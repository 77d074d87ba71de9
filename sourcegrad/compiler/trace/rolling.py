"""A Python loop the trace ran, rolled back into a loop of the IR.

Tracing runs the user's loops: `for x, y in zip(xs, ys)` over a batch of 64 records the
body 64 times, and every later stage (the reverse sweep, the optimizer, codegen) would work
through 64 copies, to make code that repeats itself 64 times. Where the iterations recorded
the same statements, this pass writes them once, in a `for` loop of the IR that runs them
as many times, as the source front end writes the loops it reads.

`roll(body, loops, namer, shapes) -> body`: `body` is the recorder's statements
(assignments and effect calls, in the order they ran); `loops` (`Loop`), per run of a `for`
loop of the user's functions (`frames.loop_headers` says which may be rolled), the
positions in `body` at which its header ran: where each iteration began, and last where
the iterator was found exhausted; `shapes`, the shape of each statement's value in the
trace. A loop is rolled only when every iteration recorded the first iteration's statements
(same operation, same line, same keywords, values of the same shapes), operand for operand,
up to

- values made earlier in the same iteration (by the same statement of the first one),
- values made by the previous iteration (carried, `cost = cost + ...`: in the first
  iteration, a value made before the loop or a constant, its initial value), read only up
  to the statement making the next one (a carried value is kept in one variable: the
  initial value's own where nothing else reads that, so that `h[:, t] = ...` stays an
  update of `h`; an update in place of a copy is not rolled),
- integer constants counting with the iteration (`xs[k]`, `x[:, k, :]`: the loop's index),

and when after the loop no value of an iteration but the last is read, but by a sequence
operation given every iteration's value of one statement in order (`np.stack(hs)` after
`hs.append(h)`): the loop then appends them to a list that operation takes (`stack_list`),
as the source front end writes the same code. The rolled loop then runs
exactly the statements the trace recorded, in the same order, on the same constants: the
marks only say where to look, the comparison decides. Shapes must agree because unrolled
code is specialised to each value's shape: a loop whose shapes change stays unrolled, as
fast as before. One difference is taken as none: the length of a selection by a boolean
mask (`x[m]`, `masks` names the trace's boolean arrays), and of what the iteration computes
from it (`np.exp(-x[m])`), as the stable sigmoid of an LSTM's step selects a different
count each step (`_counted`). Stage 3 gives such a selection no length (it depends on the
data, in the unrolled code as in the rolled), so the code the later stages write for it
holds for any count, and a compiled gradient is called on data whose masks select other
counts than the trace's anyway; the count itself read as a number (`len(x[m])`) is a
constant of the trace, which must agree as any other. The rank must agree, and such a
value is neither carried into the next iteration nor gathered in a list after the loop
(whose shapes the later stages would have to follow through the loop). Anything
else (a constant that changes otherwise, an older iteration's value read, fewer than
`MIN_ITERATIONS` iterations) leaves the iterations as they were recorded. A loop run inside
another loop's iterations is rolled in each of them, the outer one left unrolled.

Takes and gives plain lists of `ir` statements; imports `ir`, `names` and the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...ops import RULES, reads_operand_named
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Slc,
    Tup,
    Var,
    While,
    atom_vars,
    child_blocks,
    reads_of,
    substitute_atom,
    substitute_value,
    walk,
    with_child_blocks,
)
from ..names import Namer, name_for_call

# fewer iterations stay unrolled: their code reads as the user's lines, once each, and the
# later stages have little to repeat
MIN_ITERATIONS = 8


@dataclass
class Loop:
    """A `for` loop of the traced function's own frame: its header's location, and the
    positions in the recorded statements at which the header ran."""

    loc: object
    starts: list = field(default_factory=list)


def roll(body, loops, namer: Namer, shapes: dict, named: dict, masks=frozenset()):
    """`body` with each loop of `loops` whose iterations agree written as one `For` (see the
    module docstring); `namer` names the loops' index variables; `shapes` gives the shape of
    the value each statement made while tracing; `named`, the user's names of values (a
    list the loop appends to is named after its items'); `masks`, the statements' values that
    were boolean arrays (their selections' lengths depend on the data: `_counted`)."""
    out = list(body)
    # (the last loop first: rolling one moves the statements after it)
    for loop in sorted(loops, key=lambda lp: lp.starts[0], reverse=True):
        rolled = _rolled(out, loop, namer, shapes, named, masks)
        if rolled is not None:
            out = rolled
    return out


# what an operand of the first iteration is, found by comparing the second with it and
# required of every later one: ("same",) the same atom every time; ("local", j) the value
# statement j of the same iteration made; ("carried", j) statement j's value of the previous
# iteration; ("index",) an integer counting with the iteration
_SAME = ("same",)
_INDEX = ("index",)


def _rolled(body, loop, namer, shapes, named, masks):
    n = len(loop.starts) - 1
    if n < MIN_ITERATIONS:
        return None
    # the header's first run evaluates the iterable too (`np.split(xs, 64)`): the first
    # iteration is the statements just before the second began, as long as the others
    length = loop.starts[2] - loop.starts[1]
    starts = [loop.starts[1] - length, *loop.starts[1:]]
    if length == 0 or starts[0] < loop.starts[0]:
        return None
    if any(b - a != length for a, b in zip(starts, starts[1:-1])):
        return None
    first, end = starts[0], starts[-1]
    if not all(_rollable(s) for s in body[first:end]):
        return None
    made = {}  # target -> (iteration, position in it), for the loop's statements
    for k in range(n):
        for j in range(length):
            stmt = body[starts[k] + j]
            if isinstance(stmt, Assign):
                made[stmt.target] = (k, j)
    roles: dict = {}  # (position, operand path) -> role
    counted = _counted(body[first : first + length], made, masks)
    varying = set()  # the positions of counted values whose shapes differ between iterations
    for j in range(length):
        model = body[first + j]
        for k in range(1, n):
            stmt = body[starts[k] + j]
            if not _same_statement(model, stmt, k, j, made, roles):
                return None
            if isinstance(stmt, Assign) and shapes.get(stmt.target) != shapes.get(model.target):
                # (see `roll`: shapes decided by values, known only unrolled; a selection's
                # length by a mask's count alone may differ)
                if j not in counted or not _same_ndim(shapes, stmt.target, model.target):
                    return None
                varying.add(j)
    if not _carried_reads_in_time(roles) or not _one_initial_each(body, first, roles):
        return None
    if any(role[0] == "carried" and role[1] in varying for role in roles.values()):
        return None  # (a value carried with a shape changing: not this pass's to roll)
    offsets = {
        _atom_at(body[first + j], path).value for (j, path), r in roles.items() if r == _INDEX
    }
    if len(offsets) > 1:
        return None
    gathered = _gathered(body, end, made, n)
    if gathered is None or varying & set(gathered.values()):
        return None  # (a list of selections of changing lengths: left as recorded)
    offset = offsets.pop() if offsets else 0
    return _written(body, loop.loc, first, end, length, roles, offset, namer, gathered, named)


def _counted(stmts, made, masks) -> set:
    """The positions in the first iteration (`stmts`) of the statements whose
    values' shapes may depend on how many elements a boolean mask selects: a selection by a
    mask (`x[m]`, `x[m, 0]`), and what is computed from such a value of the same iteration
    (`np.exp(-x[m])`). Their code is the same whatever the count (stage 3 gives a selection
    by a mask no length: the code is written for any), so iterations whose masks select
    different numbers of elements are the same statements (the stable sigmoid of an LSTM's
    step, `z[m] = np.exp(-x[m])`)."""
    counted = set()
    local = set()  # (0, j) of each counted position j: how `made` locates its value
    for j, stmt in enumerate(stmts):
        operands = _operands(stmt)
        atoms = [a for operand in operands for a in atoms_in(operand)]
        selects = stmt.value.op == "getitem" and any(
            isinstance(a, Var) and a.name in masks for o in operands[1:] for a in atoms_in(o)
        )
        reads = any(isinstance(a, Var) and made.get(a.name) in local for a in atoms)
        if selects or reads:
            counted.add(j)
            local.add((0, j))
    return counted


def atoms_in(atom):
    """`atom` and, where it holds atoms (`_compound`), theirs."""
    yield atom
    if _compound(atom):
        for part in _parts(atom):
            yield from atoms_in(part)


def _same_ndim(shapes, a, b) -> bool:
    s, t = shapes.get(a), shapes.get(b)
    return s is not None and t is not None and len(s) == len(t)


def _gathered(body, end, made, n):
    """After the loop, the last iteration's values alone are read, but for a sequence
    operation given every iteration's value of one statement, in order (`np.stack(hs)` of
    a list the loop appended to), which has a form taking a list (`stack_list`): {position in
    `body` of such an operation: the statement's position in an iteration}; None where an
    older iteration's value is read otherwise."""
    gathered = {}
    for at, stmt in enumerate(body[end:], end):
        older = [
            name
            for inner in walk([stmt])
            for name in reads_of(inner)
            if name in made and made[name][0] != n - 1
        ]
        if not older:
            continue
        value = getattr(stmt, "value", None)
        if not (
            isinstance(stmt, Assign)
            and type(value) is Call
            and f"{value.op}_list" in RULES
            and len(value.args) == n
            and all(isinstance(a, Var) and a.name in made for a in value.args)
        ):
            return None
        position = made[value.args[0].name][1]
        if [made[a.name] for a in value.args] != [(k, position) for k in range(n)] or any(
            name in made for _, a in value.kwargs for name in atom_vars(a)
        ):
            return None
        gathered[at] = position
    return gathered


def _rollable(stmt) -> bool:
    return type(stmt) in (Assign, ExprStmt) and type(stmt.value) is Call


def _same_statement(model, stmt, k, j, made, roles) -> bool:
    if (
        type(stmt) is not type(model)
        or stmt.value.op != model.value.op
        or len(stmt.value.args) != len(model.value.args)
        or [name for name, _ in stmt.value.kwargs] != [name for name, _ in model.value.kwargs]
        or _line(stmt) != _line(model)
    ):
        return False
    operands = zip(_operands(model), _operands(stmt))
    return all(_same_atom(a, b, k, (j, (p,)), made, roles) for p, (a, b) in enumerate(operands))


def _same_atom(model, atom, k, path, made, roles) -> bool:
    if _compound(model) or _compound(atom):
        if type(model) is not type(atom) or len(_parts(model)) != len(_parts(atom)):
            return False
        j, where = path
        parts = zip(_parts(model), _parts(atom))
        return all(
            _same_atom(a, b, k, (j, (*where, i)), made, roles) for i, (a, b) in enumerate(parts)
        )
    role = _role(model, atom, k, path[0], made)
    if role is None:
        return False
    return roles.setdefault(path, role) == role


def _compound(atom) -> bool:
    """An atom holding atoms: a tuple or slice of names, or a constant tuple (`x[:, 3, :]`,
    whose 3 may count with the iteration)."""
    return isinstance(atom, (Tup, Slc)) or isinstance(atom, Const) and type(atom.value) is tuple


def _role(model, atom, k, j, made):
    """What `atom`, read by iteration k where the first iteration read `model`, is (the
    roles above), or None where the two cannot be the same statement's operand."""
    if isinstance(atom, Var):
        where = made.get(atom.name)
        if where is None:  # made before the loop (a parameter, a free value): the same
            return _SAME if model == atom else None
        iteration, position = where
        if iteration == k and position < j:
            return (
                ("local", position)
                if made.get(getattr(model, "name", None)) == (0, position)
                else None
            )
        if iteration == k - 1 and not (isinstance(model, Var) and model.name in made):
            return ("carried", position)
        return None
    if isinstance(atom, Const) and isinstance(model, Const):
        a, b = model.value, atom.value
        if type(a) is not type(b):
            return None
        if type(a) is int and b == a + k and k:
            return _INDEX
        return _SAME if _equal(a, b) else None
    return None


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # (array constants: compared elementwise, not one bool)
        return a is b


def _carried_reads_in_time(roles) -> bool:
    """A carried value lives in the variable of the statement making the next one: it is
    read up to that statement (inclusive), never after."""
    return all(role[1] >= path[0] for path, role in roles.items() if role[0] == "carried")


def _one_initial_each(body, first, roles) -> bool:
    """Each carried value read with one initial value (the one variable's, before the loop)."""
    initial: dict = {}
    for (j, path), role in roles.items():
        if role[0] == "carried":
            atom = _atom_at(body[first + j], path)
            if initial.setdefault(role[1], atom) != atom:
                return False
    return True


def _operands(stmt):
    return [*stmt.value.args, *(a for _, a in stmt.value.kwargs)]


def _parts(atom):
    if isinstance(atom, Tup):
        return atom.items
    if isinstance(atom, Slc):
        return (atom.lower, atom.upper, atom.step)
    return tuple(Const(v) for v in atom.value)  # (a constant tuple)


def _atom_at(stmt, path):
    atom = _operands(stmt)[path[0]]
    for i in path[1:]:
        atom = _parts(atom)[i]
    return atom


def _line(stmt):
    return (stmt.loc.file, stmt.loc.line) if stmt.loc is not None else None


def _written(body, loc, first, end, length, roles, offset, namer, gathered, named):
    """The loop: each carried value's variable given its initial value, then one iteration's
    statements in a `For`, then what followed, reading the last iteration's values by the
    names the loop gives them."""
    # (long: the rolled loop written in its order (the carried values' starts, one
    # iteration's statements renamed, then what followed), each part reading the maps the
    # first builds)
    n = (end - first) // length
    model = body[first : first + length]
    index = Var(namer.fresh("i"))
    initial = {}
    for (j, path), role in roles.items():
        if role[0] == "carried":
            initial.setdefault(role[1], _atom_at(model[j], path))
    if any(not isinstance(model[p], Assign) for p in initial):
        return None
    # a carried value's variable: the initial value's own, where nothing else reads that
    # (`h = np.zeros(...)` then `h[:, t] = ...` per iteration, as the user wrote it), else the
    # first iteration's, given the initial value before the loop
    renamed = {}
    prologue = []
    for p, atom in sorted(initial.items()):
        if _only_carried(atom, p, body, first, length, roles):
            renamed[model[p].target] = atom
        elif model[p].in_place:
            return None  # (updated in place, a copy's variable would change the original)
        else:
            prologue.append(Assign(model[p].target, atom, loc))

    def operand(atom, j, path):
        role = roles.get((j, path))
        if role == _INDEX:
            return index
        if role is not None and role[0] == "carried":
            return renamed.get(model[role[1]].target, Var(model[role[1]].target))
        if _compound(atom):
            items = [operand(a, j, (*path, i)) for i, a in enumerate(_parts(atom))]
            if isinstance(atom, Slc):
                return Slc(*items)
            if isinstance(atom, Const) and all(isinstance(a, Const) for a in items):
                return atom  # (a constant tuple no part of which counts)
            return Tup(tuple(items))
        return substitute_atom(atom, renamed)

    # the lists of one statement's values the loop appends to (`_gathered`), named after it
    lists = {
        q: namer.fresh(named.get(model[q].target, model[q].target) + "s")
        for q in sorted(set(gathered.values()))
    }
    prologue += [Assign(name, Const([]), loc) for name in lists.values()]
    loop_body = []
    for j, stmt in enumerate(model):
        value = stmt.value
        count = len(value.args)
        call = Call(
            value.op,
            tuple(operand(a, j, (p,)) for p, a in enumerate(value.args)),
            tuple((name, operand(a, j, (count + p,))) for p, (name, a) in enumerate(value.kwargs)),
        )
        if isinstance(stmt, Assign):
            target = renamed.get(stmt.target, Var(stmt.target)).name
            if reads_operand_named(RULES[call.op], call.args, call.kwargs, target):
                # `c = c * y` of a carried c: computed into a temporary first, so that the
                # backward reads the old c (restored) and the new one, as the source front
                # end writes it
                temp = namer.fresh(name_for_call(call.op, RULES[call.op].spelling, call.args))
                loop_body.append(Assign(temp, call, stmt.loc))
                call = Var(temp)
            new = Assign(target, call, stmt.loc)
            new.in_place = stmt.in_place
        else:
            new = ExprStmt(call, stmt.loc)
        loop_body.append(new)
        if j in lists:
            item = renamed.get(new.target, Var(new.target))
            appended = Call("list_append", (Var(lists[j]), item))
            loop_body.append(Assign(lists[j], appended, stmt.loc))
    last = {
        old.target: renamed.get(new.target, Var(new.target))
        for old, new in zip(body[end - length : end], model)
        if isinstance(old, Assign)
    }
    after = []
    for at, stmt in enumerate(body[end:], end):
        if at in gathered:  # the operation's form taking the list the loop appended to
            value = stmt.value
            on_list = Call(f"{value.op}_list", (Var(lists[gathered[at]]),), value.kwargs)
            stmt = Assign(stmt.target, on_list, stmt.loc)
        after.append(_renamed(stmt, last))
    rolled = For(index.name, Const(offset), Const(offset + n), Const(1), loop_body, loc)
    return body[:first] + prologue + [rolled] + after


def _only_carried(atom, position, body, first, length, roles) -> bool:
    """Is `atom` a variable made before the loop that, from the loop on, only the first
    iteration reads, and only as the value carried into `position`?"""
    if not isinstance(atom, Var):
        return False
    if not any(isinstance(s, Assign) and s.target == atom.name for s in body[:first]):
        return False  # (a parameter or a free value: the caller's, not the loop's to change)
    for j, stmt in enumerate(body[first:]):
        for inner in walk([stmt]):
            if atom.name not in reads_of(inner):
                continue
            if inner is not stmt or j >= length or type(stmt) not in (Assign, ExprStmt):
                return False  # (read after the first iteration, or not as an operand)
            paths = [path for path in _paths(stmt) if _atom_at(stmt, path) == atom]
            if any(roles.get((j, path)) != ("carried", position) for path in paths):
                return False
    return True


def _paths(stmt):
    """The operand paths of a statement's call: (i,) per operand, deeper into tuples and
    slices."""

    def inside(atom, path):
        yield path
        if _compound(atom):
            for i, part in enumerate(_parts(atom)):
                yield from inside(part, (*path, i))

    for i, atom in enumerate(_operands(stmt)):
        yield from inside(atom, (i,))


def _renamed(stmt, mapping):
    """`stmt` reading the atoms `mapping` gives for names (nested blocks included)."""
    if type(stmt) in (If, For, While):
        return with_child_blocks(
            replace(
                stmt,
                **{
                    k: substitute_atom(getattr(stmt, k), mapping)
                    for k in ("test", "start", "stop", "step")
                    if hasattr(stmt, k)
                },
            ),
            [[_renamed(s, mapping) for s in block] for block in child_blocks(stmt)],
        )
    value = substitute_value(stmt.value, mapping)
    if isinstance(stmt, Assign):
        new = Assign(stmt.target, value, stmt.loc)
        new.in_place = stmt.in_place
        return new
    return type(stmt)(value, stmt.loc)
