"""Long lines of generated code broken as black breaks them.

`split(text, depth)` takes one logical line of Python as codegen prints it (a statement,
a compound statement's header, an import, a `def` line; no comment, no newline) and the
indentation level it is printed at, and returns the physical lines black (line length
`MAX_LINE`, target Python 3.10+) would print for it, indented: the line itself when it
fits; else the statement split at its last bracket pair (`x = f(` / the arguments / `)`),
the arguments one per line with a trailing comma where they still do not fit, an
expression wrapped in parentheses and split before its operators where no bracket
helps, imports one name a line, a `def` split at its parameters. Spacing is the printer's
(astor's); only where lines break is decided here.

Why a port of black's algorithm (its right-hand split, optional parentheses, delimiter
priorities and trailing-comma rules, on tokens instead of black's syntax tree): generated
code is read next to code people format with black, and black is not a dependency. The
names of the functions below are black's (linegen.py, lines.py, brackets.py), so that a
difference can be traced to the rule it comes from. tests/compiler/emit/test_line_breaks.py
checks the result against black itself where black is installed.

Why one module: a port of black's line-splitting rules (its function names kept, so a
difference can be traced to black's own), which call one another recursively.
"""

from __future__ import annotations

import keyword
import re

MAX_LINE = 88

COMPREHENSION_PRIORITY = 20
COMMA_PRIORITY = 18
TERNARY_PRIORITY = 16
LOGIC_PRIORITY = 14
STRING_PRIORITY = 12
COMPARATOR_PRIORITY = 10
MATH_PRIORITIES = {
    "|": 9,
    "^": 8,
    "&": 7,
    "<<": 6,
    ">>": 6,
    "+": 5,
    "-": 5,
    "*": 4,
    "/": 4,
    "//": 4,
    "%": 4,
    "@": 4,
    "~": 3,
    "**": 2,
}
DOT_PRIORITY = 1
_COMPARATORS = {"<", ">", "==", "!=", "<=", ">="}
_OPENING = {"(": ")", "[": "]", "{": "}"}
_CLOSING = {")", "]", "}"}
_AUGMENTED = {"+=", "-=", "*=", "@=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "**=", "//="}
_VALUES = {"None", "True", "False"}  # keywords that are operands


class CannotSplit(Exception):
    """No split of this kind fits (black's CannotSplit / CannotTransform)."""


class _Leaf:
    """A token: `kind` is its text for operators and brackets (an optional parenthesis has
    kind "(" or ")" and value "" until it is made visible), "NAME", "NUMBER" or "STRING"
    otherwise; `role` stands for black's parent node type where a rule reads it."""

    __slots__ = ("kind", "value", "prefix", "role", "depth", "opening")

    def __init__(self, kind, value, prefix="", role=""):
        self.kind, self.value, self.prefix, self.role = kind, value, prefix, role
        self.depth = 0
        self.opening = None

    def copy(self):
        return _Leaf(self.kind, self.value, self.prefix, self.role)


class _Line:
    """black's Line with its BracketTracker: leaves, depth, delimiters at depth 0."""

    def __init__(self, depth, inside=False):
        self.depth, self.inside = depth, inside
        self.leaves: list = []
        self.delimiters: dict = {}
        self.invisible: list = []
        self.should_split_rhs = False
        self.magic_trailing_comma = None
        self._depth = 0
        self._match: dict = {}
        self._previous = None
        self._for_depths: list = []
        self._lambda_depths: list = []

    def append(self, leaf, track=True):
        if track:
            self._mark(leaf)
            if self._has_magic_trailing_comma(leaf):
                self.magic_trailing_comma = leaf
        self.leaves.append(leaf)

    def _mark(self, leaf):
        if self._depth == 0 and leaf.kind in _CLOSING and (0, leaf.kind) not in self._match:
            return
        if (
            self._for_depths
            and self._for_depths[-1] == self._depth
            and leaf.kind == "NAME"
            and leaf.value == "in"
        ):
            self._depth -= 1
            self._for_depths.pop()
        if self._lambda_depths and self._lambda_depths[-1] == self._depth and leaf.kind == ":":
            self._depth -= 1
            self._lambda_depths.pop()
        if leaf.kind in _CLOSING:
            self._depth -= 1
            opening = self._match.pop((self._depth, leaf.kind), None)
            if opening is None:  # (a bracket closing what it did not open: no split is safe)
                raise CannotSplit(f"unmatched {leaf.kind!r}")
            leaf.opening = opening
            if not leaf.value:
                self.invisible.append(leaf)
        leaf.depth = self._depth
        if self._depth == 0:
            delim = _split_before_priority(leaf, self._previous)
            if delim and self._previous is not None:
                self.delimiters[id(self._previous)] = delim
            elif leaf.kind == "," and leaf.role != "for":
                self.delimiters[id(leaf)] = COMMA_PRIORITY
        if leaf.kind in _OPENING:
            self._match[self._depth, _OPENING[leaf.kind]] = leaf
            self._depth += 1
            if not leaf.value:
                self.invisible.append(leaf)
        self._previous = leaf
        if leaf.kind == "NAME" and leaf.value == "lambda":
            self._depth += 1
            self._lambda_depths.append(self._depth)
        if leaf.kind == "NAME" and leaf.value == "for":
            self._depth += 1
            self._for_depths.append(self._depth)

    def _has_magic_trailing_comma(self, closing):
        if not (closing.kind in _CLOSING and self.leaves and self.leaves[-1].kind == ","):
            return False
        if closing.kind == "}":
            return True
        if closing.kind == "]":
            return not (
                closing.role == "trailer"
                and _one_sequence_between(closing.opening, closing, self.leaves, "[")
            )
        if self.is_import:
            return True
        return not _one_sequence_between(closing.opening, closing, self.leaves, "(")

    @property
    def is_import(self):
        return bool(self.leaves) and self.leaves[0].role == "import"

    @property
    def is_def(self):
        return bool(self.leaves) and self.leaves[0].kind == "NAME" and self.leaves[0].value == "def"

    def max_priority(self, exclude=()):
        return max(v for k, v in self.delimiters.items() if k not in exclude)

    def count_with_priority(self, priority):
        return sum(1 for p in self.delimiters.values() if p == priority)

    def lengths(self, reverse=False):
        indexed = list(enumerate(self.leaves))
        for index, leaf in reversed(indexed) if reverse else indexed:
            yield index, leaf, len(leaf.prefix) + len(leaf.value)

    def __str__(self):
        first, *rest = self.leaves
        return "    " * self.depth + first.value + "".join(x.prefix + x.value for x in rest)


def _fits(line, width=MAX_LINE):
    return len(str(line)) <= width


def _one_sequence_between(opening, closing, leaves, bracket):
    """black's is_one_sequence_between: at most one comma in the pair (a one-tuple)."""
    if opening is None or opening.kind != bracket or closing.kind != _OPENING[bracket]:
        return False
    depth = closing.depth + 1
    try:
        start = next(i for i, leaf in enumerate(leaves) if leaf is opening) + 1
    except StopIteration:
        return False
    commas = 0
    for leaf in leaves[start:]:
        if leaf is closing:
            break
        if leaf.depth == depth and leaf.kind == ",":
            commas += 1
            if leaf.role == "arglist":
                commas += 1
                break
    return commas < 2


def _split_before_priority(leaf, previous):
    """black's is_split_before_delimiter (the roles stand for its parent-node tests)."""
    kind, value = leaf.kind, leaf.value
    if leaf.role == "vararg":
        return 0
    if kind == "." and leaf.role != "import" and (previous is None or previous.kind in _CLOSING):
        return DOT_PRIORITY
    if kind in MATH_PRIORITIES and leaf.role != "unary":
        return MATH_PRIORITIES[kind]
    if kind in _COMPARATORS:
        return COMPARATOR_PRIORITY
    if kind == "STRING" and previous is not None and previous.kind == "STRING":
        return STRING_PRIORITY
    if kind != "NAME":
        return 0
    if value in ("for", "if") and leaf.role == "comprehension":
        return COMPREHENSION_PRIORITY
    if value in ("if", "else") and leaf.role == "ternary":
        return TERNARY_PRIORITY
    if value == "is":
        return COMPARATOR_PRIORITY
    if value == "in" and leaf.role == "comparison":
        return COMPARATOR_PRIORITY
    if value == "not" and leaf.role == "comparison":
        return COMPARATOR_PRIORITY
    if value in ("and", "or"):
        return LOGIC_PRIORITY
    return 0


# ---------------------------------------------------------------------------- reading


def _operand_end(leaf) -> bool:
    """Does `leaf` end an operand (so that a following `-` or `*` is binary)?"""
    if leaf is None:
        return False
    if leaf.kind in ("NUMBER", "STRING") or leaf.kind in _CLOSING:
        return True
    return leaf.kind == "NAME" and (not keyword.iskeyword(leaf.value) or leaf.value in _VALUES)


# one token of a logical line (codegen prints no comments, line breaks or f-strings in code)
_TOKEN = re.compile(
    r"""(?P<space>[ \t]*)(?:
      (?P<STRING>(?:[rRbBuU]|[rR][bB]|[bB][rR])?(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
    | (?P<NUMBER>0[xXoObB][\da-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)
    | (?P<NAME>[^\W\d]\w*)
    | (?P<OP>\*\*=|//=|>>=|<<=|\.\.\.|->|:=|[-+*/%@&|^<>!=]=|\*\*|//|<<|>>|[-+*/%@&|^~<>()\[\]{},:;.=])
    )""",
    re.VERBOSE,
)


def _leaves(text):
    """The tokens of `text` with the roles black's rules read, or None if it is not one
    line of names, numbers, plain strings and operators."""
    leaves, at, end = [], 0, len(text.rstrip())
    while at < end:
        match = _TOKEN.match(text, at)
        if match is None or match.end() == match.end("space"):
            return None
        kind = match.lastgroup
        value = match.group(kind)
        leaves.append(_Leaf(value if kind == "OP" else kind, value, match.group("space")))
        at = match.end()
    if not leaves:
        return None
    leaves[0].prefix = ""
    _set_roles(leaves)
    return leaves


def _set_roles(leaves):
    is_import = leaves[0].kind == "NAME" and leaves[0].value in ("from", "import")
    comprehension_depths = []  # bracket depths at which a comprehension's `for` was seen
    depth = 0
    stack = []
    for i, leaf in enumerate(leaves):
        previous = leaves[i - 1] if i else None
        kind, value = leaf.kind, leaf.value
        if kind in _OPENING:
            if is_import:
                leaf.role = "import_from"
            elif i >= 2 and leaves[i - 2].value == "def" and leaves[i - 2].kind == "NAME":
                leaf.role = "parameters"
            elif _operand_end(previous):
                leaf.role = "trailer"
            else:
                leaf.role = "atom"
            stack.append(leaf)
            depth += 1
        elif kind in _CLOSING:
            opening = stack.pop() if stack else None
            leaf.role = opening.role if opening is not None else ""
            depth -= 1
            while comprehension_depths and comprehension_depths[-1] > depth:
                comprehension_depths.pop()
        elif is_import and kind in ("NAME", "."):
            leaf.role = "import"
        elif kind in ("*", "**") and not _operand_end(previous):
            leaf.role = "vararg"
        elif kind in ("+", "-", "~") and not _operand_end(previous):
            leaf.role = "unary"
        elif kind == "," and stack and stack[-1].role in ("trailer", "parameters"):
            leaf.role = "arglist" if stack[-1].kind == "(" else ""
        elif kind == "NAME" and value == "for" and i > 0:
            leaf.role = "comprehension"
            comprehension_depths.append(depth)
        elif kind == "NAME" and value == "if" and i > 0:
            inside = comprehension_depths and comprehension_depths[-1] == depth
            leaf.role = "comprehension" if inside else "ternary"
        elif kind == "NAME" and value == "else" and i > 0:
            leaf.role = "ternary"
        elif kind == "NAME" and value == "in":
            after_not = previous is not None and previous.value == "not"
            leaf.role = "" if after_not or _in_of_for(leaves, i) else "comparison"
        elif kind == "NAME" and value == "not":
            following = leaves[i + 1] if i + 1 < len(leaves) else None
            after_is = previous is not None and previous.value == "is"
            if following is not None and following.value == "in" and not after_is:
                leaf.role = "comparison"
    # a for statement's target list: its commas are not delimiters
    if leaves[0].value == "for" and leaves[0].kind == "NAME":
        for leaf in leaves[1:]:
            if leaf.kind == "NAME" and leaf.value == "in":
                break
            if leaf.kind == ",":
                leaf.role = "for"


def _in_of_for(leaves, i):
    """Is the `in` at position i the one of a `for` (statement or comprehension)?"""
    depth = 0
    for leaf in reversed(leaves[:i]):
        if leaf.kind in _CLOSING:
            depth += 1
        elif leaf.kind in _OPENING:
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and leaf.kind == "NAME" and leaf.value == "for":
            return True
        elif depth == 0 and leaf.kind == "NAME" and leaf.value == "in":
            return False
    return False


def _wrap(leaves, start, stop):
    """leaves[start:stop] in optional (invisible) parentheses, as black's
    normalize_invisible_parens puts them around a statement's child; a child that is
    already one parenthesized non-tuple has its own parentheses made optional."""
    if start >= stop:
        return leaves
    child = leaves[start:stop]
    first, last = child[0], child[-1]
    if first.kind == "(" and last.kind == ")" and _matching(child) == len(child) - 1:
        inner = child[1:-1]
        depth, comma = 0, False
        for leaf in inner:
            depth += leaf.kind in _OPENING
            depth -= leaf.kind in _CLOSING
            comma |= depth == 0 and leaf.kind == ","
        if comma or not inner:
            return leaves  # a tuple keeps its parentheses (and is not wrapped again)
        first.value = last.value = ""
        first.role = last.role = "atom"
        return leaves
    opening = _Leaf("(", "", first.prefix, "atom")
    first.prefix = ""
    closing = _Leaf(")", "", "", "atom")
    return leaves[:start] + [opening] + child + [closing] + leaves[stop:]


def _matching(leaves) -> int:
    """The index of the bracket closing leaves[0]."""
    depth = 0
    for i, leaf in enumerate(leaves):
        depth += leaf.kind in _OPENING
        depth -= leaf.kind in _CLOSING
        if depth == 0:
            return i
    return -1


def _statement(leaves):
    """The statement's leaves with black's optional parentheses added."""
    first = leaves[0]
    head = first.value if first.kind == "NAME" else ""
    if head in ("from", "import"):
        at = next((i for i, x in enumerate(leaves) if x.value == "import"), None)
        if at is None or leaves[at + 1 :][:1] and leaves[at + 1].kind == "*":
            return leaves
        if leaves[at + 1].kind == "(":
            leaves[at + 1].value = leaves[-1].value = ""
            leaves[at + 1].role = leaves[-1].role = "import_from"
            return leaves
        opening = _Leaf("(", "", leaves[at + 1].prefix, "import_from")
        leaves[at + 1].prefix = ""
        return leaves[: at + 1] + [opening] + leaves[at + 1 :] + [_Leaf(")", "", "", "import_from")]
    if head in ("return", "del"):
        return _wrap(leaves, 1, len(leaves))
    if head in ("if", "elif", "while"):
        return _wrap(leaves, 1, len(leaves) - 1)
    if head == "for":
        at = next(i for i, x in enumerate(leaves) if x.kind == "NAME" and x.value == "in")
        leaves = _wrap(leaves, at + 1, len(leaves) - 1)
        return _wrap(leaves, 1, at)
    if head in ("def", "class", "else", "try", "with", "assert", "raise", "pass"):
        return leaves
    # an expression statement: every child after an assignment's `=` (or `+=`...)
    cuts, depth = [], 0
    for i, leaf in enumerate(leaves):
        depth += leaf.kind in _OPENING
        depth -= leaf.kind in _CLOSING
        if depth == 0 and (leaf.kind == "=" or leaf.kind in _AUGMENTED):
            cuts.append(i)
    for k in reversed(range(len(cuts))):
        stop = cuts[k + 1] if k + 1 < len(cuts) else len(leaves)
        leaves = _wrap(leaves, cuts[k] + 1, stop)
    if not cuts and _arith_like(leaves):  # (black's visit_simple_stmt)
        leaves = _wrap(leaves, 0, len(leaves))
    return leaves


# binary operators from the loosest binding; an expression statement whose loosest
# operator is one of the last four is "arith-like" to black
_LOOSEST = (("or",), ("and",), ("not",), ("in", "is") + tuple(_COMPARATORS), ("|",))
_ARITH_LIKE = (("^",), ("&",), ("<<", ">>"), ("+", "-"))


def _arith_like(leaves) -> bool:
    depth, seen = 0, set()
    for leaf in leaves:
        depth += leaf.kind in _OPENING
        depth -= leaf.kind in _CLOSING
        if depth == 0 and leaf.role != "unary" and leaf.kind != "STRING":
            seen.add(leaf.value)
    if any(op in seen for ops in _LOOSEST for op in ops):
        return False
    if "if" in seen or "lambda" in seen:
        return False
    return any(op in seen for ops in _ARITH_LIKE for op in ops)


# ---------------------------------------------------------------------------- splitting


def split(text: str, depth: int, width: int = MAX_LINE) -> list:
    """The physical lines (indented, no newlines) black prints for the logical line `text`
    at indentation level `depth`: [the line] when it fits or cannot be split."""
    indent = "    " * depth
    if len(indent) + len(text) <= width:
        return [indent + text]
    try:
        leaves = _leaves(text)
        if leaves is None:
            return [indent + text]
        line = _Line(depth)
        for leaf in _statement(leaves):
            line.append(leaf)
        return [str(x) for x in _transform(line, width, False)]
    except Exception:
        # Breaking lines only makes generated code easier to read: whatever goes wrong in
        # this port of black (text it does not model), the line unbroken is still the code.
        return [indent + text]


def _transform(line, width, force):
    """black's transform_line."""
    line_str = str(line)
    if not line.should_split_rhs and not line.magic_trailing_comma and _fits(line, width):
        return [line]
    if line.is_def:
        transformers = [_left_hand_split]
    elif line.inside:
        transformers = [_delimiter_split, _rhs]
    else:
        transformers = [_rhs]
    for transform in transformers:
        try:
            return _run(line, transform, width, force, line_str)
        except CannotSplit:
            continue
    return [line]


def _run(line, transform, width, force, line_str):
    """black's run_transformer, with its second opinion: optional parentheses made
    visible where omitting them left the first line too long."""
    optional = [b for b in line.invisible if b.depth == 0]
    result = []
    for piece in transform(line, width, force):
        if str(piece) == line_str:
            raise CannotSplit("unchanged")
        result.extend(_transform(piece, width, force))
    if (
        force
        or transform is not _rhs
        or not line.invisible
        or any(b.value for b in optional)
        or _fits(result[0], width)
    ):
        return result
    copy = _Line(line.depth, line.inside)
    for leaf in line.leaves:
        copy.append(leaf.copy())
    second = _run(copy, transform, width, True, line_str)
    return second if all(_fits(x, width) for x in second) else result


def _rhs(line, width, force):
    """black's right_hand_split_with_omits: the last bracket pair, or an earlier one when
    the trailers after it fit on the first line."""
    prefix_lengths, length = {}, 4 * line.depth
    for leaf in line.leaves:
        prefix_lengths[id(leaf)] = length
        length += len(leaf.prefix) + len(leaf.value)
    first_lines = None
    for omit in _trailers_to_omit(line, width):
        if omit:
            target = next(
                (
                    x.opening
                    for x in reversed(line.leaves)
                    if x.kind in _CLOSING and id(x) not in omit
                ),
                None,
            )
            if target is not None and target.value and prefix_lengths.get(id(target), 0) > width:
                continue
        lines = _right_hand_split(line, width, force, omit)
        if first_lines is None and not omit:
            first_lines = lines
        if _fits(lines[0], width):
            return lines
    if first_lines is not None:
        return first_lines
    return _right_hand_split(line, width, force, ())


def _trailers_to_omit(line, width):
    """black's generate_trailers_to_omit."""
    omit: set = set()
    if not line.magic_trailing_comma:
        yield omit
    length = 4 * line.depth
    opening = closing = None
    inner: set = set()
    for index, leaf, leaf_length in line.lengths(reverse=True):
        length += leaf_length
        if length > width:
            break
        previous = line.leaves[index - 1] if index > 0 else None
        if opening is not None:
            if leaf is opening:
                opening = None
            elif leaf.kind in _CLOSING:
                if (
                    previous is not None
                    and previous.kind == ","
                    and not _one_sequence_between(leaf.opening, leaf, line.leaves, "(")
                ):
                    break
                inner.add(id(leaf))
        elif leaf.kind in _CLOSING:
            if previous is not None and previous.kind in _OPENING:
                inner.add(id(leaf))
                continue
            if closing is not None:
                omit.add(id(closing))
                omit.update(inner)
                inner.clear()
                yield omit
            if (
                previous is not None
                and previous.kind == ","
                and not _one_sequence_between(leaf.opening, leaf, line.leaves, "(")
            ):
                break
            if leaf.value:
                opening, closing = leaf.opening, leaf


class _RHS:
    __slots__ = ("head", "body", "tail", "opening", "closing")

    def __init__(self, head, body, tail, opening, closing):
        self.head, self.body, self.tail = head, body, tail
        self.opening, self.closing = opening, closing


def _right_hand_split(line, width, force, omit):
    return _maybe_split_omitting_optional_parens(
        _first_right_hand_split(line, omit), line, width, force, omit
    )


def _first_right_hand_split(line, omit):
    tail, body, head = [], [], []
    current = tail
    opening = closing = None
    for leaf in reversed(line.leaves):
        if current is body and leaf is opening:
            current = head if body else tail
        current.append(leaf)
        if current is tail and leaf.kind in _CLOSING and id(leaf) not in omit:
            opening, closing = leaf.opening, leaf
            current = body
    if not (opening is not None and closing is not None and head):
        raise CannotSplit("no brackets")
    tail.reverse()
    body.reverse()
    head.reverse()
    head_line = _build(head, line, opening, "head")
    body_line = _build(body, line, opening, "body")
    tail_line = _build(tail, line, opening, "tail")
    _succeeded_or_raise(head_line, body_line, tail_line)
    return _RHS(head_line, body_line, tail_line, opening, closing)


def _maybe_split_omitting_optional_parens(rhs, line, width, force, omit):
    if (
        not force
        and rhs.opening.kind == "("
        and not rhs.opening.value
        and rhs.closing.kind == ")"
        and not rhs.closing.value
        and not line.is_import
        and _can_omit_invisible_parens(rhs, width)
    ):
        omit = {id(rhs.closing), *omit}
        try:
            rhs_oop = _first_right_hand_split(line, omit)
            if _prefer_split_rhs_oop_over_rhs(rhs_oop, rhs, width):
                return _maybe_split_omitting_optional_parens(rhs_oop, line, width, force, omit)
        except CannotSplit:
            chained = sum(1 for x in line.leaves if x.kind == "=") > 1
            if not chained and not _can_be_split(rhs.body) and not _fits(rhs.body, width):
                raise
    rhs.opening.value = "(" if rhs.opening.kind == "(" else rhs.opening.value
    rhs.closing.value = ")" if rhs.closing.kind == ")" else rhs.closing.value
    return [x for x in (rhs.head, rhs.body, rhs.tail) if x.leaves]


def _prefer_split_rhs_oop_over_rhs(rhs_oop, rhs, width):
    head = rhs.head.leaves
    if not (len(head) >= 2 and head[-2].kind == "="):
        return True
    if not any(x.kind in _OPENING or x.kind in _CLOSING for x in head[:-1]):
        return True
    if not _fits(rhs.head, width - 1):
        return True
    if rhs.head.magic_trailing_comma is not None:
        return True
    equals = sum(1 for x in head if x.kind == "=")
    if equals > 1 and equals > sum(1 for x in rhs_oop.head.leaves if x.kind == "="):
        return False
    closing_after_assign = False
    for leaf in reversed(rhs_oop.head.leaves):
        if leaf.kind == "=":
            break
        if leaf.kind in _CLOSING:
            closing_after_assign = True
            break
    return closing_after_assign or (
        any(x.kind == "=" for x in rhs_oop.head.leaves) and _fits(rhs_oop.head, width)
    )


def _can_omit_invisible_parens(rhs, width):
    line = rhs.body
    if not line.delimiters:
        return True
    priority = line.max_priority()
    if line.count_with_priority(priority) > 1:
        return False
    if priority == DOT_PRIORITY:
        return True
    first, second = line.leaves[0], line.leaves[1]
    if first.kind in _OPENING and second.kind not in _CLOSING:
        if _can_omit_opening_paren(line, first, width):
            return True
    penultimate, last = line.leaves[-2], line.leaves[-1]
    if last.kind in (")", "}") or (last.kind == "]" and last.role != "trailer"):
        if penultimate.kind in _OPENING:
            return False
        if _can_omit_closing_paren(line, last, width):
            return True
    return False


def _can_omit_opening_paren(line, first, width):
    remainder = False
    length = 4 * line.depth
    index = -1
    for index, leaf, leaf_length in line.lengths():  # noqa: B007 (read after the loop)
        if leaf.kind in _CLOSING and leaf.opening is first:
            remainder = True
        if remainder:
            length += leaf_length
            if length > width:
                break
            if leaf.kind in _OPENING:
                remainder = False
    else:
        if len(line.leaves) == index + 1:
            return True
    return False


def _can_omit_closing_paren(line, last, width):
    length = 4 * line.depth
    seen_other_brackets = False
    for _, leaf, leaf_length in line.lengths():
        length += leaf_length
        if leaf is last.opening:
            if seen_other_brackets or length <= width:
                return True
        elif leaf.kind in _OPENING:
            seen_other_brackets = True
    return False


def _can_be_split(line):
    return len(line.leaves) >= 2


def _succeeded_or_raise(head, body, tail):
    tail_len = len(str(tail).strip()) if tail.leaves else 0
    if not body.leaves:
        if tail_len == 0:
            raise CannotSplit("the same line")
        if tail_len < 3:
            raise CannotSplit("an empty body to save a few characters")


def _inside_matching_brackets(leaves):
    """black's get_leaves_inside_matching_brackets."""
    start = next((i for i, x in enumerate(leaves) if x.kind in _OPENING), None)
    if start is None:
        return set()
    ids: set = set()
    stack: list = []
    for leaf in leaves[start:]:
        if leaf.kind in _OPENING:
            stack.append((_OPENING[leaf.kind], [id(leaf)]))
        elif leaf.kind in _CLOSING:
            if stack and leaf.kind == stack[-1][0]:
                _, level = stack.pop()
                level.append(id(leaf))
                ids.update(level)
            else:
                break
        elif stack:
            stack[-1][1].append(id(leaf))
    return ids


def _build(leaves, original, opening, component):
    """black's bracket_split_build_line."""
    result = _Line(original.depth)
    if component == "body":
        result.inside = True
        result.depth += 1
        if _ensure_trailing_comma(leaves, original, opening):
            for i in range(len(leaves) - 1, -1, -1):
                if leaves[i].kind != ",":
                    leaves.insert(i + 1, _Leaf(",", ","))
                break
    track = _inside_matching_brackets(leaves) if component == "head" else set()
    for leaf in leaves:
        result.append(leaf, track=result.inside or id(leaf) in track)
    if component == "body" and _should_split_line(result, opening):
        result.should_split_rhs = True
    return result


def _ensure_trailing_comma(leaves, original, opening):
    if not leaves:
        return False
    if original.is_import:
        return True
    if not original.is_def or opening.value != "(":
        return False
    return not any(x.kind == "," for x in leaves)


def _should_split_line(line, opening):
    if opening.value not in "[{(":
        return False
    exclude = set()
    trailing_comma = False
    if not line.leaves:
        return False
    last = line.leaves[-1]
    if last.kind == ",":
        trailing_comma = True
        exclude.add(id(last))
    try:
        priority = line.max_priority(exclude)
    except ValueError:
        return False
    return priority == COMMA_PRIORITY and (
        trailing_comma or opening.role in ("atom", "import_from")
    )


def _left_hand_split(line, width, force):
    """black's left_hand_split (for a `def` line): at its first bracket pair."""
    head, body, tail = [], [], []
    current = head
    matching = None
    for leaf in line.leaves:
        if (
            current is body
            and leaf.kind in _CLOSING
            and leaf.opening is matching
            and matching is not None
        ):
            current = tail if body else head
        current.append(leaf)
        if current is head and leaf.kind == "(" and matching is None:
            matching = leaf
            current = body
    if matching is None or not tail:
        raise CannotSplit("no brackets")
    head_line = _build(head, line, matching, "head")
    body_line = _build(body, line, matching, "body")
    tail_line = _build(tail, line, matching, "tail")
    _succeeded_or_raise(head_line, body_line, tail_line)
    return [x for x in (head_line, body_line, tail_line) if x.leaves]


def _delimiter_split(line, width, force):
    """black's delimiter_split: one line per delimiter of the highest priority, a trailing
    comma added after the last item of a comma-separated list."""
    if not line.leaves:
        raise CannotSplit("empty")
    last = line.leaves[-1]
    try:
        priority = line.max_priority({id(last)})
    except ValueError:
        raise CannotSplit("no delimiters") from None
    if priority == DOT_PRIORITY and line.count_with_priority(priority) == 1:
        raise CannotSplit("a single attribute")
    delimiters = line.delimiters
    out = []
    current = _Line(line.depth, line.inside)
    for leaf in line.leaves:
        current.append(leaf, track=current.inside)
        if delimiters.get(id(leaf)) == priority:
            out.append(current)
            current = _Line(line.depth, line.inside)
    if current.leaves:
        if priority == COMMA_PRIORITY and current.leaves[-1].kind != ",":
            current.append(_Leaf(",", ","), track=current.inside)
        out.append(current)
    for piece in out:
        piece.leaves[0].prefix = ""
    return out


__all__ = ["MAX_LINE", "split"]
