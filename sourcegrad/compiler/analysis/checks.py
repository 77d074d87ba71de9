"""Checks that refuse, located, what would give a wrong gradient.

`check_in_place_updates(fn, ...)` refuses an in-place update of a value the backward still
reads (or of a view of one: `is_view`); `check_real_values(fn, env, wrt)` refuses complex
intermediates where the rules are written for real values (`ops.complex_values` says where
complex values are supported); `check_dropped_inputs(fn, env, wrt)` refuses a real number
carrying a gradient into an argument its op's rule gives none (`np.nan_to_num`'s nan). Each raises a `SourcegradError` naming the file, line and
the line's text, or returns None.

Why one module: it holds stage 6, the located refusals made before differentiating, in one
place; the in-place checks share one model of which arrays share memory (`memory_sources`,
`is_view`).
"""

from __future__ import annotations

import numpy as np

from ... import errors, ops
from ...ops import RULES, has
from ...ops.numpy_functions import WRITING_CALLS
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Return,
    Tup,
    Var,
    While,
    assignment_counts,
    atom_vars,
    reads_of,
    walk,
)
from .activity import active_values, useful_values, varied_values
from .values import UNKNOWN, ListOf


def is_view(op) -> bool:
    """May op's result share memory with an argument (numpy views; getitem of a list or
    tuple gives the item itself), so changing one in place changes what the other reads?
    (The registry's "view".)"""
    return ops.has(op, "view")


# ops whose result is the argument itself when their `copy` keyword says not to copy
_COPY_KEYWORD = frozenset({"astype", "np_array"})


def memory_sources(call) -> list:
    """The variables among `call`'s operands whose memory its result may share: for a view
    (the registry's "view": `x.T`, `np.atleast_1d(x)`, `np.real(x)`, `np.einsum("ij->ji",
    x)`) every array operand, since which one is the op's business (an index is never
    one: `x[i]` is a view of x); for `x.astype(t, copy=False)` and `np.array(x,
    copy=False)`, x; else none (a new array)."""
    if not isinstance(call, Call) or not call.args:
        return []
    if is_view(call.op):
        operands = call.args[:1] if call.op.startswith("getitem") else call.args
    elif call.op in _COPY_KEYWORD and any(
        k == "copy" and isinstance(v, Const) and not v.value for k, v in call.kwargs
    ):
        operands = call.args[:1]
    else:
        return []
    return [a for a in operands if isinstance(a, Var)]


def check_in_place_updates(fn, env) -> None:
    """Reject an array updated in place (`x *= 2`, `x[i] = v`) while another name that shares
    its memory (a view such as `x[:2]` or `x.T`, a second name for it, a list holding it, the
    sequence a loop iterates) is read afterwards: numpy would change that one too, and the
    compiler, which treats the update as a new value, would silently compute something else.

    An abstract interpretation in program order: each name points to the arrays it may share
    memory with (an array is the statement or parameter that made it); an update in place
    marks every other name pointing to that array stale, and reading a stale name is the
    hazard. Branches and loop trips join the states.
    """
    _InPlaceChecker(fn, env).run()


class _InPlaceChecker:
    """See check_in_place_updates. State: name -> {(array, None | stale update)}, and
    container name -> the same pairs for what it holds."""

    def __init__(self, fn, env):
        self.fn, self.env = fn, env
        self.defs = {s.target: s for s in walk(fn.body) if isinstance(s, Assign)}
        self.updates = {id(s): s for s in walk(fn.body) if isinstance(s, Assign) and s.in_place}
        self.readonly: set = set()  # names of read-only views (np.diagonal, broadcast_to)
        self.counts = assignment_counts(fn.body, fn.params)

    def run(self):
        self.block(self.fn.body, [({p: {(p, None)} for p in self.fn.params}, {})])

    def is_number(self, name):
        aval = self.env.get(name)
        return aval not in (None, UNKNOWN) and not isinstance(
            aval.stand_in, (np.ndarray, list, tuple, ListOf)
        )

    def pts(self, atom, points):
        if not isinstance(atom, Var) or self.is_number(atom.name):
            return set()
        return points.get(atom.name, {(atom.name, None)})  # a free value: its own array

    def block(self, stmts, states):
        """Run `stmts` from each of `states` (one per path, up to _PATHS of them, so that a
        swap in one branch does not look like two names sharing an array after it)."""
        for stmt in stmts:
            for points, contents in states:
                self.check_reads(stmt, points, contents)
            if isinstance(stmt, If):
                states = _distinct(
                    [
                        out
                        for points, contents in states
                        for branch in (stmt.body, stmt.orelse)
                        for out in self.block(branch, [(dict(points), dict(contents))])
                    ]
                )
            elif isinstance(stmt, (For, While)):
                inner = stmt.body if isinstance(stmt, For) else stmt.test_body + stmt.body
                # zero trips, one, two...: run the body on the states not seen yet, until
                # no new one appears (or, past _PATHS, on their join until it is stable)
                reached, frontier = states, states
                for _ in range(8):
                    after = self.block(inner, [(dict(p), dict(c)) for p, c in frontier])
                    merged = _distinct(reached + after)
                    known = {_key(r) for r in reached}
                    frontier = [m for m in merged if _key(m) not in known]
                    reached = merged
                    if not frontier:
                        break
                states = reached
            elif isinstance(stmt, Assign):
                for points, contents in states:
                    self.assign(stmt, points, contents)
        return states

    def check_reads(self, stmt, points, contents):
        for name in reads_of(stmt):
            for _, mark in points.get(name, set()) | _flat(contents.get(name)):
                if mark is not None:
                    self.reject(stmt, name, self.updates[mark])

    def assign(self, stmt, points, contents):
        value, target = stmt.value, stmt.target
        if _reorders_in_place(value) and not self.is_list(value.args[0].name):
            # np.median(x, overwrite_input=True) partly sorts x in place: every name holding
            # x's memory, x's own included, holds data the compiler does not model
            self.updates[id(stmt)] = stmt
            changed = {a for a, _ in self.pts(value.args[0], points)}
            for name, pairs in points.items():
                points[name] = {(a, id(stmt) if a in changed else m) for a, m in pairs}
            points.setdefault(value.args[0].name, {(value.args[0].name, id(stmt))})
        if self.is_number(target):
            points[target] = set()
            return
        contents.pop(target, None)
        if isinstance(value, Var):
            shared = set(self.pts(value, points))
            if value.name in contents:  # the same list or tuple
                contents[target] = contents[value.name]
        elif isinstance(value, Call) and value.op in ("make_list", "make_tuple", "list_append"):
            items = [
                self.pts(a, points) | _flat(contents.get(a.name)) if isinstance(a, Var) else set()
                for a in value.args
            ]
            if value.op == "list_append":  # the list's items, then the new one
                held = contents.get(value.args[0].name) if isinstance(value.args[0], Var) else None
                items = list(held) + items[1:] if held is not None else [_flat(items)]
            contents[target] = tuple(frozenset(i) for i in items)
            shared = set()
        elif (
            isinstance(value, Call)
            and value.op == "setitem"
            and isinstance(value.args[0], Var)
            and value.args[0].name in contents
        ):  # `lst[i] = v` of a list whose items are known: the same list, item i now v
            held = list(contents[value.args[0].name])
            index, stored = value.args[1], value.args[2]
            item = self.pts(stored, points) if isinstance(stored, Var) else set()
            if (
                isinstance(index, Const)
                and type(index.value) is int
                and -len(held) <= index.value < len(held)
            ):
                held[index.value] = frozenset(item)
            else:  # (an unknown index: any item may now be v)
                held = [frozenset(h | item) for h in held]
            contents[target] = tuple(held)
            shared = set(self.pts(value.args[0], points))
        elif memory_sources(value) and not _copying_index(value, self.env):
            source = value.args[0]
            held = contents.get(source.name) if isinstance(source, Var) else None
            if held is None:
                shared = set().union(*(self.pts(a, points) for a in memory_sources(value)))
            else:  # an item of a list or tuple: that item when the index is known
                index = value.args[1] if len(value.args) > 1 else None
                known = (
                    isinstance(index, Const)
                    and type(index.value) is int
                    and -len(held) <= index.value < len(held)
                )
                shared = set(held[index.value]) if known else _flat(held)
        else:
            shared = set()
        # (only a name assigned once is surely the read-only view: a variable may hold a
        # writable array on another path, and numpy's own error is raised where it runs)
        if self.makes_readonly(value) and self.counts.get(target) == 1:
            self.readonly.add(target)
        if stmt.in_place:
            self.refuse_readonly(stmt)
            changed = {a for a, _ in self.changed_arrays(stmt, points)}

            def stale(pairs):
                return {(a, id(stmt) if a in changed else m) for a, m in pairs}

            for name, pairs in points.items():  # everyone else holding them now holds stale data
                if name != target and any(a in changed for a, _ in pairs):
                    points[name] = stale(pairs)
            for name, held in contents.items():
                contents[name] = tuple(frozenset(stale(item)) for item in held)
            shared = {(a, None) for a in changed} or shared
        points[target] = shared or {(id(stmt), None)}  # a new array, made by this statement

    def is_list(self, name):
        aval = self.env.get(name)
        return aval not in (None, UNKNOWN) and isinstance(aval.stand_in, (list, tuple, ListOf))

    def makes_readonly(self, value) -> bool:
        """Is `value` a read-only view (or a view of one, or another name for one)?"""
        if isinstance(value, Var):
            return value.name in self.readonly
        return isinstance(value, Call) and (
            ops.has(value.op, "readonly")
            or any(a.name in self.readonly for a in memory_sources(value))
        )

    def refuse_readonly(self, stmt):
        """numpy refuses to write into a read-only view: `d = np.diagonal(m); d -= 1`."""
        value = stmt.value
        if isinstance(value, Var) and value.name in self.defs:
            value = self.defs[value.name].value
        written = value.args[0] if isinstance(value, Call) and value.args else None
        if isinstance(written, Var) and written.name in self.readonly:
            raise errors.NumpyValueError(
                f"output array is read-only (numpy's error: {_named(written.name, self.fn)} is a "
                "read-only view, as np.diagonal and np.broadcast_to make; copy it first)",
                stmt.loc,
            )

    def changed_arrays(self, stmt, points):
        value = stmt.value
        if isinstance(value, Var) and value.name in self.defs:  # computed into a temporary
            value = self.defs[value.name].value
        if isinstance(value, Call) and value.args and isinstance(value.args[0], Var):
            return self.pts(value.args[0], points)
        return set()

    def reject(self, read, name, update):
        if _reorders_in_place(update.value):
            at = f"line {read.loc.line}" if read.loc is not None else "later"
            family = RULES[update.value.op].family.removeprefix("np_")
            raise errors.NoRuleError(
                f"np.{family}(..., overwrite_input=True) partly sorts its array in place, and "
                f"{_named(name, self.fn)} holds that array's memory and is read afterwards "
                f"({at}): numpy would read the reordered values there, which the gradient does "
                f"not model. Pass a copy (np.{family}(x.copy(), overwrite_input=True)) or drop "
                "overwrite_input",
                update.loc,
            )
        made = self.defs.get(name)
        what = (
            f"{name!r} (made at line {made.loc.line}: {made.loc.text.strip()})"
            if made is not None and made.loc is not None
            else repr(name)
        )
        at = f"line {read.loc.line}" if read.loc is not None else "later"
        raise errors.UnsupportedSyntaxError(
            f"an array is changed in place here, but {what} shares its memory and is read "
            f"afterwards ({at}): numpy would read the changed values there. Write the update "
            "as a new value (x = x * 2 instead of x *= 2), or copy first (np.copy)",
            update.loc,
        )


# calls whose overwrite_input=True lets numpy partly sort their array argument in place
_REORDERING = frozenset(
    {"np_median", "np_quantile", "np_percentile", "np_nanmedian", "np_nanquantile"}
    | {"np_nanpercentile"}
)


def _reorders_in_place(value) -> bool:
    """Is `value` np.median(x, overwrite_input=...) (or quantile's, percentile's, their nan
    forms') of a named x, with overwrite_input not the constant False?"""
    if not (isinstance(value, Call) and value.op in _REORDERING and value.args):
        return False
    flag = dict(value.kwargs).get("overwrite_input")
    if flag is None or (isinstance(flag, Const) and not flag.value):
        return False
    return isinstance(value.args[0], Var)


def check_keywords(fn, wrt: list) -> None:
    """Refuse, located (`NoRuleError`), a call on the gradient's path whose arguments its rule
    does not take: numpy's `np.sum(x, where=m)` or `x.reshape(n, m, order="F")` where the
    rule's VJPs know no `where` or `order`. Differentiated as if the keyword were not there,
    the gradient would be of another function; the reverse pass could not even bind it. A
    call off the path (constants, shapes) runs in the forward pass as written, but for one
    writing into an array (`out=`, which the front ends make an update of that array: one
    left as a keyword is a write nothing models)."""
    unbound = []
    for stmt in walk(fn.body):
        call = getattr(stmt, "value", None)
        if type(call) is not Call or not isinstance(stmt, (Assign, ExprStmt)):
            continue
        rule = RULES.get(call.op)
        if rule is None or not (rule.vjps or rule.jvps):
            continue
        try:
            rule.bind(call.args, dict(call.kwargs))
        except TypeError as exc:
            unbound.append((stmt, rule, exc))
    if not unbound:
        return
    active = active_values(fn, wrt)
    for stmt, rule, exc in unbound:
        writes = any(k == "out" for k, _ in stmt.value.kwargs)  # (into an array: an effect)
        if isinstance(stmt, Assign) and stmt.target not in active and not writes:
            continue
        takes = ", ".join([*rule.params, *(n for n in rule.defaults if n not in rule.params)])
        raise errors.NoRuleError(
            f"this call's arguments do not fit the derivative rule of {rule.name} ({exc}; the "
            f"rule takes {takes}): its gradient would be that of another call. Write the call "
            "without them, or compute the same with other numpy calls",
            stmt.loc,
        )


def check_dropped_inputs(fn, env, wrt: list) -> None:
    """Refuse, located (`NoRuleError`), a real number that carries a gradient passed where
    the op's rule gives its argument none, though the result's values depend on it:
    `np.nan_to_num(y, nan=w)`, `np.trapezoid(y, dx=h)`,
    `np.interp(x, xp, fp, left=w)`, `np.full_like(v, w)`, `np.arange(w, 3.0)`. The result was
    taken for a constant of w: a silently zero gradient. Integer and boolean arguments (axes,
    counts, indices, masks) carry none; the helpers of generated code are not checked (such
    arguments of theirs are read for shapes and dtypes), nor a result nothing returned reads."""
    varied = varied_values(fn, wrt)
    useful = None
    for stmt in walk(fn.body):
        call = getattr(stmt, "value", None)
        if not isinstance(stmt, Assign) or type(call) is not Call:
            continue
        rule = RULES.get(call.op)
        if rule is None or _helper_of_generated_code(rule):
            continue
        if rule.differentiable and rule.vjps:
            dropped = [p for p, _ in _positions(rule, call) if rule.vjp_for(p) is None]
        else:
            dropped = list(rule.values_from)
        carrying = [
            (p, name)
            for p, atom in _positions(rule, call)
            if p in dropped
            for name in atom_vars(atom)
            if name in varied and _holds_reals(env.get(name))
        ]
        if not carrying:
            continue
        useful = useful_values(fn) if useful is None else useful
        if stmt.target not in useful:
            continue
        position, name = carrying[0]
        parameter = (
            f"its argument {rule.params[position]!r}"
            if position < len(rule.params)
            else f"its argument {position + 1}"
        )
        raise errors.NoRuleError(
            f"{rule.family or rule.name} has no derivative rule for {parameter}, and "
            f"{_value_named(name, fn)} carries a gradient into it: its result's values depend "
            "on it, "
            "and the gradient would miss that dependence. Compute that part with operations "
            "that have rules ("
            "np.full_like(v, w) as w * np.ones_like(v), np.arange(n) * step + start)",
            stmt.loc,
        )


def _helper_of_generated_code(rule) -> bool:
    """A rule generated code calls (`unbroadcast`, `sum_leading`): sourcegrad's own."""
    return rule.spelling.kind == "helper" or rule.spelling.text.startswith("sourcegrad.")


def _value_named(name, fn) -> str:
    """'x' for a value the user named, "a value" for one the front end made (`x[0] ** 2`)."""
    base = name.rstrip("0123456789").rstrip("_") or name
    return repr(base) if base in fn.user_names else "a value"


def _positions(rule, call):
    """(position, atom) of each argument of `call`, keywords at their parameter's position."""
    positions = list(enumerate(call.args))
    positions += [(rule.params.index(k), a) for k, a in call.kwargs if k in rule.params]
    return positions


def _holds_reals(aval) -> bool:
    """Does the value hold real (or complex) numbers: not integers, booleans or unknown?"""
    if aval in (None, UNKNOWN):
        return False
    value = aval.stand_in
    if isinstance(value, (float, complex)):
        return True
    return getattr(getattr(value, "dtype", None), "kind", "") in ("f", "c")


def check_unmodelled_calls(fn, wrt: list) -> None:
    """The fence (DESIGN.md): refuse, located (`NoRuleError`), a call with no rule made for
    its effect (`np.copyto(a, x)`, `np.random.shuffle(a)`, `np.fill_diagonal(a, 0)`) when a
    differentiated value is among its arguments: it may write into that array, or read it
    into one, and the compiler, which cannot see it, would return a gradient without it.
    Where no argument carries a gradient the call is run in the forward pass as written (an
    index permutation shuffled, a buffer of data filled). The calls known to only read
    (`print`, logging: `ops.runs_forward_only`) may see differentiated values."""
    calls = [
        s
        for s in walk(fn.body)
        if isinstance(s, (ExprStmt, Assign))
        and isinstance(s.value, Call)
        and (
            s.value.op == "pycall"
            and isinstance(s, ExprStmt)
            or s.value.op.startswith(("random.", "random_method."))
        )
    ]
    if not calls:
        return
    varied = varied_values(fn, wrt)
    for stmt in calls:
        call = stmt.value
        if call.op.startswith("random"):
            _refuse_drawing_from(call, stmt, varied, fn)
            continue
        callee, *args = call.args
        called = fn.free.get(callee.name) if isinstance(callee, Var) else None
        if ops.runs_forward_only(called):
            continue
        touched = [a.name for a in args + [v for _, v in call.kwargs] if isinstance(a, Var)]
        carrying = [name for name in touched if name in varied]
        if carrying:
            label = getattr(called, "__qualname__", None) or type(called).__name__
            module = getattr(called, "__module__", None)
            label = f"{module}.{label}" if module and module != "builtins" else label
            writes = any(called is call for call in WRITING_CALLS)
            refusal = errors.WritingCallError if writes else errors.NoRuleError
            raise refusal(
                f"{label} has no derivative rule, and {_named(carrying[0], fn)} carries a "
                "gradient into it: the call may write into that array or read it into another, "
                "which the gradient cannot follow. Write it with operations that have rules "
                "(np.copyto(a, x) as a = x.copy(), a[mask] = v as np.where(mask, v, a), a "
                "shuffle as a = a[rng.permutation(len(a))]) or register a rule",
                stmt.loc,
            )


def _refuse_drawing_from(call, stmt, varied, fn) -> None:
    """A random draw is a constant of the gradient (`random_draws`): right for a sample drawn
    from fixed parameters, silently wrong for one whose parameters or population carry a
    gradient (`rng.normal(mu, 1.0)`, `rng.permutation(x)`, `rng.shuffle(x)` of a
    differentiated x), whose derivative the draw's rule does not know."""
    operands = call.args[1:] if call.op.startswith("random_method.") else call.args
    touched = [a.name for a in list(operands) + [v for _, v in call.kwargs] if isinstance(a, Var)]
    carrying = [name for name in touched if name in varied]
    if carrying:
        method = call.op.split(".", 1)[1]
        raise errors.NoRuleError(
            f"the random draw {method}() takes {_named(carrying[0], fn)}, which carries a "
            "gradient, and a draw is a constant of the gradient (no rule says how a sample "
            "moves with its parameters). Draw from fixed parameters and transform the sample: "
            "mu + sigma * rng.standard_normal(shape) for a normal (the reparameterisation), "
            "x[rng.permutation(len(x))] for a permutation or shuffle, x[rng.integers(0, "
            "len(x), n)] for a choice",
            stmt.loc,
        )


def _named(name, fn) -> str:
    """A value's name as the user wrote it (IR names are the user's, renamed per assignment)."""
    base = name.rstrip("0123456789").rstrip("_") or name
    return repr(base if base in fn.user_names else name)


def updated_parameters(fn) -> dict:
    """{parameter: the update's location} for the parameters whose memory `fn` may change
    in place (`a *= 2`, `a[i] = v`, an update of a view of a), before specialisation (every
    value counted as an array: a number's update is no change in place, but its type is
    not known here). The compiler takes each parameter for an array of its own; the call
    must not pass one of these sharing memory with another argument (`f(W, W)`: Python
    would change both)."""
    finder = _UpdateFinder(fn, {})
    finder.run()
    return finder.updated


class _UpdateFinder(_InPlaceChecker):
    """The in-place checker's walk, recording the parameters an update changes and refusing
    nothing (the check proper runs on the specialised IR)."""

    def __init__(self, fn, env):
        super().__init__(fn, env)
        self.updated: dict = {}

    def changed_arrays(self, stmt, points):
        changed = super().changed_arrays(stmt, points)
        for array, _ in changed:
            if array in self.fn.params:
                self.updated.setdefault(array, stmt.loc)
        return changed

    def reject(self, read, name, update):
        pass

    def refuse_readonly(self, stmt):
        pass


def _copying_index(call, env=None) -> bool:
    """`x[[0, 2]]` or `x[mask]`: indexing with a list or an array copies (no view). The
    index is a constant (the source front end's), or a tuple of atoms (the trace's
    `x[np.arange(n), y]`), where an array among them is a variable whose stand-in says so."""
    if call.op != "getitem" or len(call.args) < 2:
        return False
    index = call.args[1]
    if isinstance(index, Const):
        items = index.value if isinstance(index.value, tuple) else (index.value,)
        return any(isinstance(i, (list, np.ndarray)) for i in items)
    atoms = index.items if isinstance(index, Tup) else (index,)
    for atom in atoms:
        if isinstance(atom, Const) and isinstance(atom.value, (list, np.ndarray)):
            return True
        aval = env.get(atom.name) if env is not None and isinstance(atom, Var) else None
        if aval not in (None, UNKNOWN) and isinstance(aval.stand_in, np.ndarray):
            if aval.stand_in.ndim and aval.stand_in.dtype.kind in "biu":
                return True  # (an integer or boolean array: advanced indexing copies)
    return False


_PATHS = 12  # states kept apart; more are joined into one (conservative)


def _distinct(states):
    """The states without repeats; joined into one when there are more than _PATHS."""
    seen, out = set(), []
    for points, contents in states:
        key = _key((points, contents))
        if key not in seen:
            seen.add(key)
            out.append((points, contents))
    if len(out) > _PATHS:
        points, contents = {}, {}
        for p, c in out:
            points, contents = _union_maps(points, p), _union_contents(contents, c)
        out = [(points, contents)]
    return out


def _key(state):
    points, contents = state
    return (frozenset((k, frozenset(v)) for k, v in points.items()), frozenset(contents.items()))


def _flat(held):
    """Every (array, mark) a container holds (None: not a container)."""
    return set().union(*held) if held else set()


def _union_contents(a, b):
    """Join two container -> items maps: item by item when the lengths agree."""
    out = {}
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if x is None or y is None or len(x) != len(y):
            out[k] = (frozenset(_flat(x) | _flat(y)),)
        else:
            out[k] = tuple(i | j for i, j in zip(x, y))
    return out


def _union_maps(*maps):
    out = {}
    for m in maps:
        for k, v in m.items():
            out[k] = out.get(k, set()) | v
    return out


def check_real_values(fn, env, wrt: list) -> None:
    """Refuse, located (`ComplexValueError`), a complex value on the path from the inputs
    `wrt` to the result made by an op whose rules are written for real numbers only (those
    without the "complex" property, ops/complex_values.py): its gradient would be wrong. The
    result must be real, as for JAX's grad: the gradient of a complex function is not one
    array. Complex values the gradient does not flow through are fine. Where complex values
    are on the path, a value whose type is not known while compiling (one that becomes complex
    in a loop) counts as complex: it cannot be shown real."""
    if not any(_holds_complex(aval) for aval in env.values()):
        return  # (a real program: no pass over it)
    active = active_values(fn, wrt)
    varied = varied_values(fn, wrt)
    # (a call whose result is not varied may still read varied values: np.sign(s))
    calls = [s for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    complex_path = any(
        s.target in varied
        and (
            _holds_complex(env.get(s.target))
            or any(isinstance(a, Const) and isinstance(a.value, complex) for a in s.value.args)
        )
        for s in calls
    )
    if not complex_path:
        return

    def maybe_complex(name):
        aval = env.get(name)
        return aval is None or aval is UNKNOWN or _holds_complex(aval)

    for stmt in calls:
        op = stmt.value.op
        args = [a.name for a in stmt.value.args if isinstance(a, Var) and a.name in varied]
        if op in ("sign", "torch_sign") and any(maybe_complex(a) for a in args):
            # (sign is piecewise constant, so it has no rule; of a complex z it is z / |z|)
            raise errors.ComplexValueError(
                "this line takes np.sign of a complex value (or of one whose type is not known "
                "while compiling) on the gradient's path, which is differentiable there "
                "(z / |z|) but has no rule: write x / np.abs(x)",
                stmt.loc,
            )
        if (
            stmt.target in active
            and RULES[op].differentiable
            and not has(op, "complex")
            and (maybe_complex(stmt.target) or any(maybe_complex(a) for a in args if a in active))
        ):
            raise errors.ComplexValueError(
                f"this line takes {RULES[op].family} of a complex value (or of one whose type "
                "is not known while compiling) on the gradient's path, and its rule is written "
                "for real numbers (the gradient would be wrong); complex values are "
                "differentiated through arithmetic, exp/log and the trigonometric functions, "
                "sums and products, reshaping and indexing, abs, angle, real, imag, conj and "
                "np.fft",
                stmt.loc,
            )
    ret = fn.body[-1] if fn.body else None
    out = ret.value if isinstance(ret, Return) else None
    if isinstance(out, Tup) and out.items:  # (output, aux)
        out = out.items[0]
    if isinstance(out, Var) and out.name in active and maybe_complex(out.name):
        raise errors.ComplexValueError(
            "the differentiated function returns a complex value (or one whose type is not "
            "known while compiling); a gradient needs a real output (as in JAX): return its "
            "np.real, np.imag or np.abs",
            ret.loc,
        )


def _holds_complex(aval) -> bool:
    return aval is not None and aval is not UNKNOWN and _is_complex(aval.stand_in)


def _is_complex(value) -> bool:
    if isinstance(value, ListOf):
        return _is_complex(value.item)
    if isinstance(value, (list, tuple)):
        return any(_is_complex(v) for v in value)
    dtype = getattr(value, "dtype", None)
    return isinstance(value, complex) or (isinstance(dtype, np.dtype) and dtype.kind == "c")
