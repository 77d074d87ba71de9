"""The intermediate representation: A-normal form with structured control flow.

Every intermediate value has a name; every operation is a `Call` of a primitive
from the rule table whose arguments are atoms (names and constants), so each
statement is one step a derivative rule can see. Control flow stays structured
(`If`, `For`, `While`, `Break`, `Continue`, `Return`) instead of being lowered to
jumps: the reverse pass mirrors it, and generated code keeps the user's shape.

Every statement carries the `SourceLocation` of the user line it came from;
generated code uses it for its comments and errors use it for their messages.

The IR is plain data (frozen dataclasses for atoms, dataclasses for statements).
Passes build new lists instead of mutating shared ones.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Sequence, Union

from ..errors import SourceLocation

# --- atoms: the only things an operation may take as arguments ---------------------------------


@dataclass(frozen=True)
class Var:
    """A named value: a parameter, a user variable (one name per assignment) or a temporary."""

    name: str


@dataclass(frozen=True)
class Const:
    """A literal: number, bool, None, str, Ellipsis, or a slice/tuple made of those."""

    value: object


@dataclass(frozen=True)
class Tup:
    """A tuple whose items are atoms, at least one of them a `Var` (`(n, -1)`, `x[i, :]`)."""

    items: tuple[Any, ...]


@dataclass(frozen=True)
class Slc:
    """A slice with at least one `Var` bound (`x[i:i + 2]`)."""

    lower: object
    upper: object
    step: object


Atom = Union[Var, Const, Tup, Slc]


def atom_vars(atom: object) -> list[str]:
    """Names an atom reads."""
    if isinstance(atom, Var):
        return [atom.name]
    if isinstance(atom, Tup):
        return [n for item in atom.items for n in atom_vars(item)]
    if isinstance(atom, Slc):
        return [n for part in (atom.lower, atom.upper, atom.step) for n in atom_vars(part)]
    return []


def substitute_atom(atom: Any, mapping: dict[str, Any]) -> Any:
    """Replace `Var`s by the atoms `mapping` gives for their names."""
    if isinstance(atom, Var):
        return mapping.get(atom.name, atom)
    if isinstance(atom, Tup):
        return Tup(tuple(substitute_atom(a, mapping) for a in atom.items))
    if isinstance(atom, Slc):
        return Slc(*(substitute_atom(a, mapping) for a in (atom.lower, atom.upper, atom.step)))
    return atom


# --- expressions and statements -------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A primitive applied to atoms; `op` is a key of `rules.RULES`."""

    op: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()  # ((name, atom), ...) in the order the user wrote them

    def atoms(self) -> list[Any]:
        return list(self.args) + [a for _, a in self.kwargs]

    def reads(self) -> list[str]:
        # asked for many times a compile (every pass reads every statement's operands):
        # computed once, the call being immutable; a new list each time for the caller
        try:
            return list(self.__dict__["_reads"])
        except KeyError:
            names = tuple(n for a in self.atoms() for n in atom_vars(a))
            object.__setattr__(self, "_reads", names)
            return list(names)


def substitute_value(value: Any, mapping: dict[str, Any]) -> Any:
    """An assignment's value (a `Call` or an atom) with its `Var`s replaced by the atoms
    `mapping` gives for their names."""
    if isinstance(value, Call):
        return Call(
            value.op,
            tuple(substitute_atom(a, mapping) for a in value.args),
            tuple((k, substitute_atom(a, mapping)) for k, a in value.kwargs),
        )
    return substitute_atom(value, mapping)


@dataclass
class Assign:
    """`target = value`, where value is a `Call` or an atom (a copy)."""

    target: str
    value: object
    loc: SourceLocation | None = None
    # for backward statements: the rules whose VJPs produced this value (for the comment)
    note: str = ""
    # the user wrote it as an update in place (`x *= 2`, `x[i] = v`): for an array, numpy
    # changes every view of it too, which analysis.check_in_place_updates looks for
    in_place: bool = False


@dataclass
class Return:
    value: object
    loc: SourceLocation | None = None


@dataclass
class If:
    test: object
    body: list[Any]
    orelse: list[Any]
    loc: SourceLocation | None = None


@dataclass
class For:
    """`for target in range(start, stop, step)`; the front end turns every loop over an array,
    list, enumerate or zip into this form. `stop_flag` names a bool that, once true at the end
    of an iteration, ends the loop (how `break` is lowered)."""

    target: str
    start: object
    stop: object
    step: object
    body: list[Any]
    loc: SourceLocation | None = None
    stop_flag: str | None = None
    # a loop of the backward sweep that runs the range backwards (`reversed(range(...))`)
    reverse: bool = False


@dataclass
class While:
    test_body: list[Any]  # statements computing `test`, re-run before every iteration
    test: object
    body: list[Any]
    loc: SourceLocation | None = None


@dataclass
class ExprStmt:
    """A call made for its side effect (`print(x)`): runs in the forward pass only."""

    value: object
    loc: SourceLocation | None = None


@dataclass
class Push:
    """Save `value` on the function's stack (forward pass of a loop or branch)."""

    value: object
    loc: SourceLocation | None = None


@dataclass
class Pop:
    """`target = stack.pop()` (backward pass), restoring what a matching Push saved."""

    target: str
    loc: SourceLocation | None = None


@dataclass
class Marker:
    """A no-op that marks where the backward sweep begins (for comments in generated code)."""

    label: str = "backward"


def child_blocks(stmt: object) -> list[list[Any]]:
    """The statement lists nested in a compound statement."""
    if isinstance(stmt, If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, For):
        return [stmt.body]
    if isinstance(stmt, While):
        return [stmt.test_body, stmt.body]
    return []


def with_child_blocks(stmt: Any, blocks: Sequence[list[Any]]) -> Any:
    """`stmt` with its nested statement lists replaced by `blocks` (as `child_blocks` lists
    them)."""
    if isinstance(stmt, If):
        return replace(stmt, body=blocks[0], orelse=blocks[1])
    if isinstance(stmt, While):
        return replace(stmt, test_body=blocks[0], body=blocks[1])
    return replace(stmt, body=blocks[0])


def walk(stmts: Iterable[Any]) -> Iterator[Any]:
    """Every statement in `stmts`, nested ones included, in program order."""
    for stmt in stmts:
        yield stmt
        if type(stmt) in _COMPOUND:  # (the rest hold no blocks; no statement is subclassed)
            for block in child_blocks(stmt):
                yield from walk(block)


def reads_of(stmt: Any) -> Sequence[str]:
    """Names a statement reads itself (not counting its nested blocks), to be read, not
    changed: for an operation, the tuple its `Call` keeps (no copy)."""
    kind = type(stmt)
    if kind is Assign or kind is ExprStmt:
        # (the common case first: every pass asks, per statement, ~30 times a compile)
        value = stmt.value
        if type(value) is Call:
            known: tuple[str, ...] | None = value.__dict__.get("_reads")
            if known is None:
                value.reads()
                known = value.__dict__["_reads"]
            return known
    if isinstance(stmt, (Assign, ExprStmt)):
        v = stmt.value
        return v.reads() if isinstance(v, Call) else atom_vars(v)
    if isinstance(stmt, (Return, Push)):
        return atom_vars(stmt.value)
    if isinstance(stmt, If):
        return atom_vars(stmt.test)
    if isinstance(stmt, For):
        return [n for a in (stmt.start, stmt.stop, stmt.step) for n in atom_vars(a)] + (
            [stmt.stop_flag] if stmt.stop_flag else []
        )
    if isinstance(stmt, While):
        return atom_vars(stmt.test)
    return []


_COMPOUND = frozenset((If, For, While))


def writes_of(stmt: object) -> list[str]:
    """Names a statement assigns itself (not counting its nested blocks)."""
    if isinstance(stmt, (Assign, Pop)):
        return [stmt.target]
    if isinstance(stmt, For):
        return [stmt.target]
    return []


@dataclass
class Function:
    """A function in IR form.

    `free` maps names the body reads but does not define (user globals, closure
    values, runtime helpers) to the objects they stand for; the generated module
    binds them. `source_file` and `name` say where the function came from.
    """

    name: str
    params: list[str]
    body: list[Any]
    source_file: str = "<unknown>"
    loc: SourceLocation | None = None
    free: dict[str, Any] = field(default_factory=dict)
    # names that came from the user's source (kept verbatim; temporaries are renamed freely)
    user_names: set[str] = field(default_factory=set)
    # globals and closure values the code was built from: (kind, dict or cell, name, value)
    dependencies: list[Any] = field(default_factory=list)
    # the name of the list that Push and Pop use (chosen not to clash with the user's names)
    stack: str = "saved"


def assignment_counts(stmts: Iterable[Any], params: Iterable[str] = ()) -> dict[str, int]:
    """How many times each name is assigned (a parameter counts once, a loop target twice):
    a name assigned once holds one value everywhere, so it may be propagated or folded."""
    counts = {p: 1 for p in params}
    for stmt in walk(stmts):
        if type(stmt) is Assign:  # (the common case first: asked a dozen times a compile)
            counts[stmt.target] = counts.get(stmt.target, 0) + 1
            continue
        for n in writes_of(stmt):
            counts[n] = counts.get(n, 0) + (2 if isinstance(stmt, For) else 1)
    return counts


def read_counts(stmts: Iterable[Any]) -> dict[str, int]:
    """How many statements (nested ones included) read each name; 0 for a name never read."""
    counts: dict[str, int] = defaultdict(int)
    for stmt in walk(stmts):
        for n in reads_of(stmt):
            counts[n] += 1
    return counts


def merge_notes(*notes: str) -> str:
    """Statement notes joined (`"exp, multiply"`), each rule named once."""
    known = _MERGED.get(notes)  # (a few hundred combinations, asked per printed statement)
    if known is not None:
        return known
    parts: list[str] = []
    for note in notes:
        parts += [p for p in note.split(", ") if p and p not in parts]
    if len(_MERGED) >= 1 << 14:  # (bounded: notes name the rules of user programs)
        _MERGED.clear()
    merged = _MERGED[notes] = ", ".join(parts)
    return merged


_MERGED: dict[tuple[str, ...], str] = {}
