"""The `Lowerer`: one function (the differentiated one, or one being inlined) lowered into a
shared `Context`; its methods come from one mixin per kind of construct.
"""

from __future__ import annotations

from ..ir import Function
from .assignments import AssignmentsMixin
from .calls import CallsMixin
from .containers import ContainersMixin
from .expressions import ExpressionsMixin
from .names import NamesMixin
from .source import ParsedFunction, parse
from .statements import StatementsMixin
from .values import Context, closure_values


class Lowerer(
    StatementsMixin, AssignmentsMixin, ExpressionsMixin, NamesMixin, CallsMixin, ContainersMixin
):
    """Lowers one function (the differentiated one, or one being inlined) into the context."""

    def __init__(
        self, parsed: ParsedFunction, ctx: Context | None = None, prefix: str = "", enclosing=None
    ):
        self.parsed = parsed
        self.ctx = ctx or Context()
        self.prefix = prefix
        self.enclosing = enclosing  # the scope a nested def or lambda closes over
        fn = parsed.fn
        self.globals = fn.__globals__ if fn is not None else enclosing.globals
        self.closure = closure_values(fn) if fn is not None else {}
        self.env: dict = {}
        self.local_functions: dict = {}
        self.loops: list = []
        self.loc = parsed.loc(parsed.tree)
        self.result = None  # name receiving the return value, when returns are not tail
        self.returned = None  # flag set by a non-tail return
        self.mutable: set = set()
        self.assigned: set = set()
        self.assignments: dict = {}  # name -> how many statements assign it (syntactically)
        self.compound_counts: dict = {}
        self.early_return = False
        self.yielded = None  # the body's first `yield` (prepare finds it; a generator is refused)
        self.unrolled: set = set()  # targets of the loops being unrolled (unrolled_loop)

    def error(self, cls, message, node=None):
        raise cls(message, self.parsed.loc(node) if node is not None else self.loc)

    @property
    def out(self):
        return self.ctx.out

    def local(self, name):
        return f"{self.prefix}{name}"


def lower(parsed: ParsedFunction, static=None, structure=None) -> Function:
    """Lower a parsed function to IR; `static` maps argument names to values the IR is
    specialised on (ints that decide a recursion's depth), `structure` argument names to
    the `trees.TreeDef` of arguments passed as their leaves."""
    return Lowerer(parsed).lower(static, structure)


def function_to_ir(fn, static=None, structure=None) -> Function:
    return lower(parse(fn), static, structure)
