"""Readable, unique names for the values the compiler creates.

Temporaries are named after what computes them (`exp_neg_y_X_w` for
`np.exp(neg_y_X_w)`, `X_w` for `X @ w`), adjoints after their primal (`dw` for a
parameter, `d_X_w` for an intermediate). Names are handed out in program order,
so the same function always gets the same names.
"""

from __future__ import annotations

import builtins
import keyword
import re

from .ir import Const, Var

_OP_WORDS = {"+": "plus", "-": "minus", "/": "over", "**": "pow", "%": "mod", "//": "floordiv"}
_CONST_WORDS = {0: "zero", 1: "one", 2: "two", 3: "three", 0.5: "half", 10: "ten"}
MAX_LEN = 20
_BUILTIN_NAMES = {n for n in dir(builtins) if not n.startswith("_")}


def atom_word(atom) -> str:
    """A short word for an operand: its name, or a word for a constant."""
    if isinstance(atom, Var):
        return atom.name
    if isinstance(atom, Const):
        value = atom.value
        if isinstance(value, bool) or value is None:
            return str(value).lower()
        if isinstance(value, (int, float)) and value in _CONST_WORDS:
            return _CONST_WORDS[value]
        if isinstance(value, int) and value >= 0:
            return str(value)
        return "c"
    return "part"


def _short(word: str) -> str:
    """The first component of a compound name (`exp_neg_y` -> `exp`)."""
    head = word.split("_")[0]
    return head or word


def join(*words: str) -> str:
    name = "_".join(w for w in words if w)
    if len(name) <= MAX_LEN:
        return name
    return "_".join(_short(w) for w in words if w)


def name_for_call(op: str, spelling, args) -> str:
    """A name describing the result of `op(*args)`."""
    words = [atom_word(a) for a in args]
    kind = spelling.kind
    if kind == "binop" and len(words) == 2:
        if spelling.text in ("*", "@"):
            return join(words[0], words[1])
        return join(words[0], _OP_WORDS.get(spelling.text, "op"), words[1])
    if kind == "unaryop" and words:
        return join(
            {"-": "neg", "+": "pos", "not": "not", "~": "not"}.get(spelling.text, "op"), words[0]
        )
    if kind == "compare":
        return join(words[0], "mask") if words else "mask"
    if kind == "getitem":
        index = args[1] if len(args) > 1 else None
        if isinstance(index, Const) and isinstance(index.value, int) and index.value >= 0:
            return join(words[0], str(index.value))
        return join(words[0], "part")
    if kind == "attr":
        return join(words[0], spelling.text) if words else spelling.text
    base = spelling.text.split(".")[-1]
    base = {"absolute": "abs", "concatenate": "concat", "reciprocal": "recip"}.get(base, base)
    first = next((w for w, a in zip(words, args) if isinstance(a, Var)), "")
    return join(base, first)


def sanitize(name: str) -> str:
    if name.isascii() and name.isidentifier() and not keyword.iskeyword(name):
        return name  # (the common case, asked per name handed out: no regex)
    name = re.sub(r"\W", "_", name)
    if not name or name[0].isdigit():
        name = "v_" + name
    if keyword.iskeyword(name):
        name += "_"
    return name


class Namer:
    """Hands out unique identifiers, never one in `reserved` nor a builtin's name (generated
    code calls range, len, min...)."""

    def __init__(self, reserved=()):
        self._taken = set(reserved) | _BUILTIN_NAMES
        # base -> the last suffix handed out for it: every smaller one is taken (while names
        # are only added), so the next search starts after it, not at 1 again (a base asked
        # for n times cost n probes a name: quadratic)
        self.suffix: dict = {}

    @property
    def taken(self) -> set:
        return self._taken

    @taken.setter
    def taken(self, names: set) -> None:
        # names given back (an attempt undone): smaller suffixes may be free again
        self._taken = names
        self.suffix = {}

    def reserve(self, name: str) -> None:
        self.taken.add(name)

    def fresh(self, base: str) -> str:
        base = sanitize(base)
        if base not in self._taken:
            self._taken.add(base)
            return base
        i = self.suffix.get(base, 0) + 1
        while f"{base}_{i}" in self._taken:
            i += 1
        name = f"{base}_{i}"
        self._taken.add(name)
        self.suffix[base] = i
        return name


def adjoint_name(primal: str, is_param: bool) -> str:
    """`dw` for a parameter `w`, `d_X_w` for an intermediate `X_w`."""
    return f"d{primal}" if is_param else f"d_{primal}"
