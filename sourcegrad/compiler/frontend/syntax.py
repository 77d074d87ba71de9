"""Questions about the user's syntax tree asked before or while lowering it: which names a
statement assigns, whether a block exits, how to describe a construct in an error; the
constructs refused, and small tree helpers.
"""

from __future__ import annotations

import copy

import gast

from ... import errors

UNSUPPORTED_STATEMENTS = {
    gast.Try: "a try statement",
    gast.With: "a with statement",
    gast.Raise: "a raise statement",
    gast.Delete: "a del statement",
    gast.Global: "a global declaration",
    gast.Nonlocal: "a nonlocal declaration",
    gast.ClassDef: "a class definition",
    gast.AsyncFunctionDef: "an async function definition",
    gast.AsyncFor: "an async for loop",
    gast.AsyncWith: "an async with statement",
    gast.Import: "an import statement",
    gast.ImportFrom: "an import statement",
    gast.AnnAssign: "an annotated assignment",
}


UNSUPPORTED_EXPRESSIONS = {
    gast.Lambda: "a lambda (other than one assigned to a name)",
    gast.ListComp: "a list comprehension",
    gast.SetComp: "a set comprehension",
    gast.DictComp: "a dict comprehension",
    gast.GeneratorExp: "a generator expression",
    gast.Await: "await",
    gast.Yield: "yield (a generator)",
    gast.YieldFrom: "yield from",
    gast.Set: "a set display",
    gast.JoinedStr: "an f-string",
    gast.NamedExpr: "an assignment expression (:=)",
    gast.Starred: "a starred expression",
}

# what to write instead, said after the refusal of that construct
UNSUPPORTED_HINTS = {
    gast.JoinedStr: 'to print a value give print its parts, print("x =", x) (a print runs in '
    "the forward pass); format text outside the differentiated function",
}


def refusal(node, what) -> str:
    """The message refusing `node` (described as `what`), with its hint if it has one."""
    hint = UNSUPPORTED_HINTS.get(type(node))
    return f"{what} is not supported in differentiated code" + (f": {hint}" if hint else "")


def exits(stmts, kinds, in_loop=True):
    """Which of break/continue/return occur in `stmts` (break/continue only of this loop;
    never those inside a nested function definition)."""
    found = set()
    for stmt in stmts:
        if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef) + _SIMPLE_STATEMENTS):
            continue  # (an expression holds no statement: nothing to walk)
        for node in walk_no_defs(stmt, in_loop):
            if isinstance(node, gast.Return) and "return" in kinds:
                found.add("return")
            elif isinstance(node, gast.Break) and "break" in kinds:
                found.add("break")
            elif isinstance(node, gast.Continue) and "continue" in kinds:
                found.add("continue")
    return found


# statements made of expressions only (no break, continue or return can be inside them)
_SIMPLE_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Pass)


def scan_statement(stmt):
    """One walk of a statement for what `Lowerer.prepare` asks: (the names it binds, as
    `assigned_names`; the names each of its assignments binds, for `assignment_counts`; its
    first `yield`, or None)."""
    nodes = list(walk_no_defs(stmt, False))
    counted = [name for node in nodes for name in _assigned_names_of_node(node)]
    yielded = next((n for n in nodes if isinstance(n, (gast.Yield, gast.YieldFrom))), None)
    return assigned_names(stmt, nodes), counted, yielded


def assigned_names(stmt, nodes=None) -> set:
    """Names a statement binds, counting `a[i] = v`, `a[i] += v`, `a.append(v)`,
    `np.f(..., out=a)` and `np.add.at(a, i, v)` as binding `a` (`nodes`: the statement's
    walk, when made already)."""
    names = set()
    nodes = list(walk_no_defs(stmt, False)) if nodes is None else nodes
    # a comprehension's own names are scoped to it (lowered under names of their own)
    scoped = {
        id(t)
        for node in nodes
        if isinstance(node, gast.comprehension)
        for t in gast.walk(node.target)
    }
    for node in nodes:
        if (
            isinstance(node, gast.Name)
            and isinstance(node.ctx, gast.Store)
            and id(node) not in scoped
        ):
            names.add(node.id)
        elif (
            isinstance(node, gast.Subscript)
            and isinstance(node.ctx, gast.Store)
            and isinstance(node.value, gast.Name)
        ):
            names.add(node.value.id)
        elif (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Attribute)
            and node.func.attr in ("append", "pop")
            and isinstance(node.func.value, gast.Name)
        ):
            names.add(node.func.value.id)
        elif (  # `np.add.at(a, ...)`: any `<ufunc>.at` changes its first argument
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Attribute)
            and node.func.attr == "at"
            and node.args
            and isinstance(node.args[0], gast.Name)
        ):
            names.add(node.args[0].id)
        if isinstance(node, gast.Call):  # `np.exp(a, out=u)` and `out=rows[t]` write u, rows
            for k in node.keywords:
                buffer = k.value.value if isinstance(k.value, gast.Subscript) else k.value
                if k.arg == "out" and isinstance(buffer, gast.Name):
                    names.add(buffer.id)
    return names


def changed_in_place_only(tree, ident):
    """The first node of the function `tree` that changes the value named `ident` in place
    (`ident.append(v)`, `ident[i] = v`, `out=ident`, `np.add.at(ident, ...)`: what
    `assigned_names` counts as binding it) when nothing binds the name itself (no
    assignment, no parameter, no loop target): Python then changes the global or closure
    value. None otherwise."""
    nodes = list(walk_no_defs(tree, False))
    if any(
        isinstance(n, gast.Name) and n.id == ident and isinstance(n.ctx, (gast.Store, gast.Param))
        for n in nodes
    ):
        return None
    changes = [n for n in nodes if hasattr(n, "lineno") and ident in assigned_names(n, [n])]
    return min(changes, key=lambda n: (n.lineno, n.col_offset), default=None)


def assignment_counts(body) -> dict:
    """How many places assign each name (`a[i] = v` and `a.append(v)` assign a too)."""
    counts: dict = {}
    for stmt in body:
        for node in walk_no_defs(stmt, False):
            for name in _assigned_names_of_node(node):
                counts[name] = counts.get(name, 0) + 1
    return counts


def _assigned_names_of_node(node):
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
        return (node.id,)
    if (
        isinstance(node, gast.Subscript)
        and isinstance(node.ctx, gast.Store)
        and isinstance(node.value, gast.Name)
    ):
        return (node.value.id,)
    if (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and node.func.attr in ("append", "pop")
        and isinstance(node.func.value, gast.Name)
    ):
        return (node.func.value.id,)
    return ()


def walk_no_defs(node, stop_at_loops):
    """Walk a statement, not entering nested functions, nor nested loops for break/continue."""
    stack = [(node, False)]
    while stack:
        current, nested_loop = stack.pop()
        if isinstance(current, (gast.FunctionDef, gast.Lambda)) and current is not node:
            continue
        if nested_loop and isinstance(current, (gast.Break, gast.Continue)):
            continue
        yield current
        # a break or continue inside a loop belongs to that loop, the walked statement too
        inner_loop = nested_loop or isinstance(current, (gast.For, gast.While))
        for child in gast.iter_child_nodes(current):
            stack.append((child, inner_loop))


class RenameNames(gast.NodeTransformer):
    """Rename the given names everywhere in a (copied) tree."""

    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            node.id = self.names[node.id]
        return node


def copy_tree(node):
    return copy.deepcopy(node)


class AtomNode(gast.Name):
    """An already-lowered atom standing in an expression tree (for chained comparisons)."""

    def __init__(self, atom):
        super().__init__(id="<atom>", ctx=gast.Load(), annotation=None, type_comment=None)
        self.atom = atom


def loop_call(node, env):
    """ "range", "enumerate", "zip" or "reversed" for a loop over such a call of the builtin
    (as `Lowerer.iteration` reads it), else None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id not in env:
        if node.func.id in ("range", "enumerate", "zip"):
            return node.func.id
        if (
            node.func.id == "reversed"
            and len(node.args) == 1
            and isinstance(node.args[0], gast.Call)
            and isinstance(node.args[0].func, gast.Name)
            and node.args[0].func.id == "range"
        ):
            return "reversed"
    return None


def as_load(target):
    if isinstance(target, gast.Name):
        return gast.copy_location(
            gast.Name(id=target.id, ctx=gast.Load(), annotation=None, type_comment=None), target
        )
    if isinstance(target, gast.Subscript):
        return gast.copy_location(
            gast.Subscript(value=as_load(target.value), slice=target.slice, ctx=gast.Load()), target
        )
    raise errors.UnsupportedSyntaxError(unsupported_target(target, "augmented assignment"))


def unsupported_target(target, what="assignment") -> str:
    """Why an assignment to `target` (not a name, nor an item of one) is refused; for an
    attribute, what to write instead."""
    message = f"{what} to {describe(target)} is not supported"
    if isinstance(target, gast.Attribute):
        message += (
            ": differentiated code does not change an object's attributes (it reads them "
            "when compiling); keep the value in a local variable, or change the attribute "
            "outside the differentiated function"
        )
    return message


def callee_name(func):
    if isinstance(func, gast.Name):
        return func.id
    if isinstance(func, gast.Attribute):
        return func.attr
    return "callee"


def describe(node) -> str:
    try:
        import astor

        return astor.to_source(gast.gast_to_ast(node)).strip()
    except Exception:  # pragma: no cover - description is best effort
        return type(node).__name__
