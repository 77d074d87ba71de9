"""A family's rule written once and written out per member: `expand(template, params, ...)`.

Rules of a family often share one formula: the location-scale distributions of scipy.stats
differ only in their density's score. The family writes the rule once, as a template lambda
whose extra parameters stand for the member's parts, and each member's rule is that template
with expressions put in for them:

    x_rule = lambda g, ans, x, loc, scale, z, score: unbroadcast(g * score / scale, x)
    expand(x_rule, "g, ans, x, df, loc=0.0, scale=1.0",
           z="(x - loc) / scale", score=lambda z, df: -(df + 1.0) * z / (df + z * z))

is the rule of scipy.stats.t.logpdf in x, as if written by hand:

    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(g * (-(df + 1.0) * ((x - loc) /
    scale) / (df + (x - loc) / scale * ((x - loc) / scale))) / scale, x)

A member's rule is an ordinary rule: a lambda with source, compiled in the template's module
(so it reads that module's globals), which the eager engine calls and the compiler reads as it
reads any (`registry.vjp_template`); the code generated from it is the code of the same rule
written by hand. Its source is the template's syntax tree with the expressions put in, printed
(`ast.unparse`, one rule a line, a comment naming it) and kept as the file "<the template's
file> (written out)" (`registry.add_source`), which tracebacks and `inspect.getsource` show.

Bindings: source text, a lambda (its body; its parameters name what the expansion gives them:
other bindings or the rule's parameters) or a constant. A binding that reads another binding
(`score` reads `z`) gets that binding's expression in turn. Expressions are put in by name, as
a macro does (z read three times is `(x - loc) / scale` written three times, as a hand-written
rule spells it; the compiler shares the repeats). 1 bound to a factor of a product drops out
of it, as one would write it: `g * w * score` with w = 1 is `g * score`, and `-w * s` is `-s`
(one template serves a logpdf, w = 1, and its pdf, w = ans).

Why a module of its own: one small macro expander, used by the families at import; the
registry only keeps the source it writes.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect

import gast

from .registry import add_source, lambda_node


def expand(template, params: str, label: str = "", /, **bindings):
    """`template` (a lambda) with `bindings` put in for its parameters of those names, taking
    `params` (a parameter list, as source) instead: a rule, its source written out."""
    lam = _lambda(template)
    own = {a.arg for a in lam.args.args + lam.args.kwonlyargs}
    signature = _parse(f"lambda {params}: None").args
    taken = {a.arg for a in signature.args + signature.kwonlyargs}
    if signature.vararg is not None:
        taken.add(signature.vararg.arg)
    unbound = own - taken - set(bindings)
    if unbound:
        raise TypeError(f"expand: no binding for the template's {sorted(unbound)}")
    exprs = {name: _expression(value) for name, value in bindings.items()}
    body = _drop_ones(_put_in(lam.body, exprs, own & set(exprs)))
    if any(node is _ONE_FACTOR for node in ast.walk(body)):
        raise ValueError("expand: 1 was bound to a name that is not a factor of a product")
    text = ast.unparse(ast.Lambda(args=signature, body=body))
    reads = {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and n.id not in taken}
    missing = {n for n in reads if n not in template.__globals__ and not hasattr(builtins, n)}
    if missing:  # (a binding read where the expansion does not give it)
        raise NameError(f"expand: the written-out rule reads unknown names {sorted(missing)}")
    file = f"{template.__code__.co_filename} (written out)"
    placed = add_source(file, f"{text}  # {label}\n" if label else f"{text}\n", reads)
    return eval(compile(placed, file, "eval"), template.__globals__)


@functools.lru_cache(maxsize=None)
def _lambda(fn) -> ast.Lambda:
    """The syntax tree (ast's) of the lambda `fn` (kept: templates and bindings live as long as
    their module)."""
    return gast.gast_to_ast(lambda_node(fn))


@functools.lru_cache(maxsize=None)
def _parse(source) -> ast.expr:
    return ast.parse(source.strip(), mode="eval").body


def _expression(value):
    """The syntax tree a binding stands for."""
    if isinstance(value, str):
        return _parse(value)
    if inspect.isfunction(value) and value.__name__ == "<lambda>":
        return _lambda(value).body
    if type(value) is int and value == 1:
        return _ONE_FACTOR
    return ast.Constant(value)


_ONE_FACTOR = ast.Constant(1)  # (1 bound to a name: dropped from its product by _drop_ones)


def _put_in(node, exprs, names, outer=()):
    """`node` with the bound expressions put in for the names `names` (and, inside an
    expression put in, for the other bindings it reads). A new tree where a name was replaced,
    sharing the parts that are the same (the trees are only printed)."""
    if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
        if node.id in outer:
            raise ValueError(f"expand: the binding {node.id!r} reads itself")
        return _put_in(exprs[node.id], exprs, set(exprs), outer + (node.id,))
    if isinstance(node, ast.Lambda):
        raise ValueError("expand: a template holds no lambda of its own")
    return _rebuilt(node, lambda child: _put_in(child, exprs, names, outer))


def _drop_ones(node):
    """`node` without the factors 1 bindings put in: `a * 1` and `1 * a` are `a`, `-1 * a` is
    `-a`."""
    node = _rebuilt(node, _drop_ones)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = node.left, node.right
        if right is _ONE_FACTOR:
            return left
        if left is _ONE_FACTOR:
            return right
        if isinstance(left, ast.UnaryOp) and isinstance(left.op, ast.USub):
            if left.operand is _ONE_FACTOR:
                return ast.UnaryOp(ast.USub(), right)
    return node


def _rebuilt(node, change):
    """`node` with `change` applied to its children: the node itself if none changed."""
    if node is _ONE_FACTOR:
        return node
    fields, changed = {}, False
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            new = change(value)
        elif isinstance(value, list):
            new = [change(v) if isinstance(v, ast.AST) else v for v in value]
            new = value if all(a is b for a, b in zip(new, value)) else new
        else:
            new = value
        changed = changed or new is not value
        fields[name] = new
    return type(node)(**fields) if changed else node
