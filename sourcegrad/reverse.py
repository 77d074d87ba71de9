"""Reverse mode: a primal `ir.Function` -> its gradient `ir.Function`.

`reverse(fn, wrt, avals, namer, with_value)` takes the lowered function, the
positions of the parameters to differentiate, the abstract values of every
primal value (`analysis.infer_shapes`) and returns a new function with the same
parameters whose body is the forward sweep (the primal statements, unchanged)
followed by the adjoint sweep: the primal statements in reverse order, each
replaced by the instantiated VJP templates of its rule for its active inputs.

Only active values (`analysis.active_values`) get adjoints. An adjoint with a
single contribution is named `d_<value>` directly; one with several is their
sum, formed when the sweep reaches the value's definition. A parameter that
does not reach the output gets `zeros_like`. The forward sweep keeps every
primal statement; `optimize` removes the ones the backward does not read.
"""
from __future__ import annotations

from collections import defaultdict

from . import errors
from .analysis import UNKNOWN, AVal, active_values
from .ir import Assign, Call, Const, Function, Return, Tup, Var
from .names import adjoint_name
from .rules import RULES
from .templates import Instantiator


def _input_positions(rule, call):
    """(position, atom) for every input of `call`, keyword inputs at their parameter's position."""
    names = list(rule.signature().parameters)
    positions = list(enumerate(call.args))
    for k, atom in call.kwargs:
        if k in names:
            positions.append((names.index(k), atom))
    return positions


def _uses(fn, active):
    """How many adjoint contributions each active value will receive."""
    counts = defaultdict(int)
    for stmt in fn.body:
        if not (isinstance(stmt, Assign) and stmt.target in active):
            continue
        value = stmt.value
        if isinstance(value, Var):
            counts[value.name] += 1
            continue
        rule = RULES[value.op]
        for pos, atom in _input_positions(rule, value):
            if isinstance(atom, Var) and atom.name in active and rule.vjp_for(pos) is not None:
                counts[atom.name] += 1
    return counts


def _shape_sources(fn, env):
    """For each value, a value of the same shape for templates to read `.shape` from.

    An elementwise result has the shape of its same-shaped operand, so `exp(z).shape`
    can be read as `z.shape`. The nearest value that has a user's name (or is a
    parameter) is preferred, since it reads best and is usually kept anyway.
    """
    source = {p: p for p in fn.params}
    for stmt in fn.body:
        if not isinstance(stmt, Assign):
            continue
        source[stmt.target] = stmt.target
        if stmt.target in fn.user_names:
            continue
        value, aval = stmt.value, env.get(stmt.target)
        if not isinstance(value, Call) or aval is UNKNOWN or aval is None:
            continue
        if RULES[value.op].kind != "elementwise":
            continue
        for atom in value.args:
            other = env.get(atom.name) if isinstance(atom, Var) else None
            if other is not UNKNOWN and other is not None and other.shape == aval.shape \
                    and not other.is_python_scalar:
                source[stmt.target] = source.get(atom.name, atom.name)
                break
    return source


def reverse(fn: Function, wrt: list, env: dict, namer, with_value: bool = False,
            as_tuple: bool = False) -> Function:
    wrt_names = [fn.params[i] for i in wrt]
    ret = fn.body[-1]
    assert isinstance(ret, Return)
    out_aval = env.get(ret.value.name) if isinstance(ret.value, Var) else AVal(ret.value.value)
    if out_aval is not UNKNOWN and out_aval.shape != ():
        raise errors.NonScalarOutputError(
            f"grad needs a function with a scalar output, but {fn.name} returns an array of "
            f"shape {out_aval.shape}; differentiate a scalar (such as its sum) or use vjp",
            ret.loc)
    active = active_values(fn, wrt_names)
    counts = _uses(fn, active)
    backward: list = []
    inst = Instantiator(env, namer, backward, _shape_sources(fn, env))
    contributions: dict[str, list] = defaultdict(list)
    given = defaultdict(int)

    def target_name(primal):
        """Name for the next contribution to `primal`'s adjoint."""
        if counts[primal] <= 1:
            return adjoint_name(primal, primal in fn.params)
        given[primal] += 1
        return f"{adjoint_name(primal, primal in fn.params)}_{given[primal]}"

    def adjoint_of(primal, loc):
        """The adjoint of `primal`, summing its contributions (in the order they came)."""
        parts = contributions.pop(primal, [])
        if not parts:
            return None
        total = parts[0]
        name = adjoint_name(primal, primal in fn.params)
        for i, part in enumerate(parts[1:]):
            inst.loc, inst.note = loc, "accumulate"
            final = i == len(parts) - 2
            total = inst.emit("add_op", [total, part], name=name if final else None).atom
        return total

    if isinstance(ret.value, Var) and ret.value.name in active:
        contributions[ret.value.name].append(Const(1.0))

    for stmt in reversed(fn.body[:-1]):
        if not isinstance(stmt, Assign) or stmt.target not in active:
            continue
        g = adjoint_of(stmt.target, stmt.loc)
        if g is None:
            continue
        inst.loc = stmt.loc
        value = stmt.value
        if isinstance(value, Var):
            if value.name in active:
                contributions[value.name].append(g)
            continue
        rule = RULES[value.op]
        for pos, atom in _input_positions(rule, value):
            if not (isinstance(atom, Var) and atom.name in active):
                continue
            if not rule.vjps:
                raise errors.NoRuleError(f"{rule.name} has no derivative rule yet (it is used "
                                         "only by generated code; higher-order derivatives "
                                         "through it are not supported)", stmt.loc)
            if rule.vjp_for(pos) is None:
                continue
            part = inst.vjp(rule, pos, value, g, Var(stmt.target), target_name(atom.name))
            contributions[atom.name].append(part)

    grads = []
    for name in wrt_names:
        inst.loc = fn.loc
        g = adjoint_of(name, fn.loc)
        if g is None:
            inst.note = "does not reach the output"
            g = inst.emit("np_zeros_like", [Var(name)], name=adjoint_name(name, True)).atom
        grads.append(g)
    result = grads[0] if len(grads) == 1 and not as_tuple else Tup(tuple(grads))
    if with_value:
        result = Tup((ret.value, result))
    body = list(fn.body[:-1]) + backward + [Return(result, ret.loc)]
    suffix = "_".join(f"d{n}" for n in wrt_names)
    name = f"d{fn.name}_{suffix}" if not with_value else f"value_and_d{fn.name}_{suffix}"
    return Function(name, list(fn.params), body, fn.source_file, fn.loc, dict(fn.free),
                    set(fn.user_names))

