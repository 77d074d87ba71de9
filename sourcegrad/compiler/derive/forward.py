"""Forward mode: a primal `ir.Function` -> its JVP `ir.Function`.

`forward_mode(fn, wrt, env, namer)` takes the lowered function, the positions of the
parameters that carry tangents and the abstract values (`analysis.infer_shapes`), and
returns a function of the primal parameters followed by one tangent parameter per
`wrt` position (`x_dot`), returning `(value, value_dot)`. No tape: every primal
statement is followed by the statement computing its tangent, and control flow stays
where it is (an `if` computes the tangents of its branch, a loop those of each
iteration), so nothing has to be saved.

Tangent rules come from the rule table:

* an elementwise primitive's JVP is its VJP with `g` set to the input's tangent
  (its Jacobian is diagonal up to broadcasting, so `unbroadcast` becomes the identity);
* a linear primitive (`sum`, `reshape`, `x[i]`, `concatenate`, ...) is applied to the
  tangents; a multilinear one (`@`, `dot`) is summed over its inputs, each replaced in turn;
* the rest (`max`, `prod`, `var`, `std`) have explicit `defjvp` lambdas.
"""

from __future__ import annotations

from ... import errors
from ...ops import RULES, has
from ..analysis import UNKNOWN, AVal, holds_complex, varied_values
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    Function,
    If,
    Return,
    Tup,
    Var,
    While,
    assignment_counts,
    atom_vars,
)
from .reverse import holds_integers, input_positions, shape_sources, zeros_op
from .templates import Instantiator


class ForwardMode:
    def __init__(self, fn, wrt_names, env, namer, seeds=None):
        self.fn = fn
        self.env = env
        self.namer = namer
        self.varied = varied_values(fn, wrt_names)
        self.tangents: dict = {}
        # parameters whose tangent is a known constant (never reassigned): read it directly
        self.seeds = dict(seeds or {})
        self.inst = Instantiator(
            env, namer, [], shape_sources(fn.body, env, fn.user_names, fn.params)
        )
        self.inst.jvp_mode = True

    def tangent(self, name):
        if name not in self.tangents:
            self.tangents[name] = self.namer.fresh(f"{name}_dot")
            aval = self.env.get(name)
            self.env[self.tangents[name]] = (
                AVal(aval.stand_in, known=False) if aval not in (None, UNKNOWN) else UNKNOWN
            )
        return self.tangents[name]

    def tangent_atom(self, atom):
        """The tangent of an atom, or None when it carries none."""
        if isinstance(atom, Var) and atom.name in self.seeds:
            return self.seeds[atom.name]
        if isinstance(atom, Var) and atom.name in self.varied:
            return Var(self.tangent(atom.name))
        return None

    def zero_like(self, atom):
        if isinstance(atom, Const):
            return self.zero_of(atom) or Const(0.0)
        aval = self.env.get(atom.name) if isinstance(atom, Var) else None
        if aval not in (None, UNKNOWN) and aval.is_python_scalar:
            return Const(0.0)
        return self.inst.emit(zeros_op(aval), [atom]).atom

    def zero_of(self, value):
        """The zero tangent of a value whose form shows it (None or a number: 0.0; an empty
        list: an empty list), or None. A variable that starts as a placeholder (a saved-value
        slot, an accumulator) gets a literal zero instead of a helper reading its value."""
        if isinstance(value, Const) and (value.value is None or type(value.value) in (int, float)):
            return Const(0.0)
        if isinstance(value, Const) and isinstance(value.value, list) and not value.value:
            return Const([])
        if (
            isinstance(value, Call)
            and RULES[value.op].kind == "elementwise"
            and all(self.is_number(a) for a in value.args)
        ):
            return Const(0.0)  # arithmetic on Python numbers (a loop index) is a number
        return None

    def is_number(self, atom):
        if isinstance(atom, Const):
            return type(atom.value) in (int, float)
        aval = self.env.get(atom.name) if isinstance(atom, Var) else None
        return aval not in (None, UNKNOWN) and aval.is_python_scalar

    # -- the sweep ----------------------------------------------------------------------------

    def block(self, stmts):
        saved = self.inst.out
        self.inst.out = []
        try:
            for stmt in stmts:
                self.statement(stmt)
            return self.inst.out
        finally:
            self.inst.out = saved

    def statement(self, stmt):
        out = self.inst.out
        if isinstance(stmt, Assign):
            out.append(stmt)
            if stmt.target in self.varied:
                self.inst.loc, self.inst.note = stmt.loc, ""
                self.assign_tangent(stmt)
        elif isinstance(stmt, If):
            out.append(If(stmt.test, self.block(stmt.body), self.block(stmt.orelse), stmt.loc))
        elif isinstance(stmt, For):
            out.append(
                For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    self.block(stmt.body),
                    stmt.loc,
                    stmt.stop_flag,
                )
            )
        elif isinstance(stmt, While):
            out.append(
                While(self.block(stmt.test_body), stmt.test, self.block(stmt.body), stmt.loc)
            )
        elif isinstance(stmt, ExprStmt):
            out.append(stmt)
        else:
            raise AssertionError(stmt)

    def assign_tangent(self, stmt):
        target = self.tangent(stmt.target)
        try:
            parts = self.parts(stmt)
        except errors.SourcegradError as e:
            raise errors.locate(e, stmt.loc) from e
        if not parts:
            value = self.zero_of(stmt.value) or self.zero_like(Var(stmt.target))
        else:
            value = parts[0]
            for part in parts[1:]:
                negated = self.inst.made_by(part) if isinstance(part, Var) else None
                if negated is not None and negated.op == "neg_op":  # a + -(b) -> a - b
                    value = self.inst.emit("sub_op", [value, negated.args[0]]).atom
                else:
                    value = self.inst.emit("add_op", [value, part]).atom
            value = self.broadcast(value, stmt.target)
            if holds_complex(self.inst.aval(value)) and not holds_complex(
                self.env.get(stmt.target)
            ):
                # a real value's tangent from a rule of complex values: its real part
                value = self.inst.emit("np_real", [value]).atom
        out = self.inst.out
        last = out[-1] if out else None
        if (
            isinstance(value, Var)
            and isinstance(last, Assign)
            and last.target == value.name
            and value.name not in self.tangents.values()
            and value.name not in self.varied
        ):
            # the tangent's last step computes it: give that statement the tangent's name
            self.env[target] = self.env.get(last.target)
            last.target = target
            return
        out.append(Assign(target, value, stmt.loc, self.inst.note or "tangent"))

    def broadcast(self, value, target):
        """The tangent at the result's shape: `x_dot` is the tangent of `x + c` only after
        broadcasting (a row's tangent added to a matrix is the tangent of every row)."""
        mine, theirs = self.env.get(target), self.inst.aval(value)
        if (
            mine in (None, UNKNOWN)
            or theirs in (None, UNKNOWN)
            or not hasattr(mine.stand_in, "shape")
            or mine.shape == theirs.shape
        ):
            return value
        return self.inst.emit("broadcast_to", [value, Const(tuple(mine.shape))]).atom

    def parts(self, stmt):
        """The tangent contributions of each input of the statement's value."""
        value = stmt.value
        if not isinstance(value, Call):
            t = self.tangent_atom(value)
            return [t] if t is not None else []
        rule = RULES[value.op]
        if not rule.differentiable or holds_integers(self.env.get(stmt.target)):
            return []  # (an integer or boolean result, `x.astype(int)`: piecewise constant)
        positions = input_positions(rule, value)
        active = [(pos, atom) for pos, atom in positions if self.tangent_atom(atom) is not None]
        if not active:
            return []
        if not has(value.op, "complex") and (
            holds_complex(self.env.get(stmt.target))
            or any(isinstance(a, Var) and holds_complex(self.env.get(a.name)) for _, a in active)
        ):
            raise errors.ComplexValueError(
                f"{rule.family} of complex values is not differentiated (its rule is written "
                "for real numbers)",
                stmt.loc,
            )
        self.inst.note = rule.family
        if rule.jvps and rule.run_time_vjp:
            return self.run_time_jvps(rule, stmt, active)
        if rule.jvps:
            return [
                self.inst.template(
                    rule.jvp_for(pos),
                    rule,
                    value,
                    self.tangent_atom(atom),
                    Var(stmt.target),
                    None,
                    pos,
                )
                for pos, atom in active
                if rule.jvp_for(pos) is not None
            ]
        if rule.kind == "elementwise" and rule.vjps:
            return [
                self.inst.template(
                    rule.vjp_for(pos),
                    rule,
                    value,
                    self.tangent_atom(atom),
                    Var(stmt.target),
                    None,
                    pos,
                )
                for pos, atom in active
                if rule.vjp_for(pos) is not None
            ]
        if rule.linear == "multi":
            return [self.substituted(value, {pos: self.tangent_atom(atom)}) for pos, atom in active]
        if rule.linear == "joint" or isinstance(rule.linear, tuple):
            linear = None if rule.linear == "joint" else set(rule.linear)
            replace = {}
            for pos, atom in positions:
                if linear is not None and pos not in linear:
                    continue
                if linear is None and rule.vjps and rule.vjp_for(pos) is None:
                    continue  # an index, a static argument
                if not atom_vars(atom) and not isinstance(atom, Const):
                    continue
                t = self.tangent_atom(atom)
                replace[pos] = t if t is not None else self.zero_like(atom)
            return [self.substituted(value, replace)]
        raise errors.NoRuleError(
            f"{rule.name} has no forward-mode rule: give it one with "
            "sourcegrad.ops.defjvp or mark it linear",
            stmt.loc,
        )

    def run_time_jvps(self, rule, stmt, active):
        """The tangent contributions of a rule whose JVPs are Python code, not templates (a
        user's primitive: sourcegrad.extend.defjvp), called when the forward-mode pass runs."""
        value = stmt.value
        return [
            self.inst.emit(
                "jvp_at_run_time",
                [Const(rule.name), Const(pos), self.tangent_atom(atom), Var(stmt.target)]
                + list(value.args),
                list(value.kwargs),
            ).atom
            for pos, atom in active
            if rule.jvp_for(pos) is not None
        ]

    def substituted(self, call, replace):
        """`call` with the inputs at the positions of `replace` replaced (the rest kept)."""
        names = list(RULES[call.op].params)
        args = tuple(replace.get(i, a) for i, a in enumerate(call.args))
        kwargs = tuple(
            (k, replace.get(names.index(k), a) if k in names else a) for k, a in call.kwargs
        )
        return self.inst.emit(call.op, list(args), list(kwargs)).atom


def forward_mode(fn: Function, wrt: list, env: dict, namer) -> Function:
    wrt_names = [fn.params[i] for i in wrt]
    fm = ForwardMode(fn, wrt_names, env, namer)
    tangent_params = [fm.tangent(p) for p in wrt_names]
    body, out, t_out = _sweep(fn, fm)
    body.append(Return(Tup((out, t_out)), fn.body[-1].loc))
    return Function(
        f"jvp_{fn.name}",
        list(fn.params) + tangent_params,
        body,
        fn.source_file,
        fn.loc,
        dict(fn.free),
        set(fn.user_names),
        list(fn.dependencies),
    )


def derivative(fn: Function, wrt: int, env: dict, namer, with_value: bool = False) -> Function:
    """The derivative of `fn` with respect to its number parameter `wrt`: forward mode with
    that parameter's tangent fixed at 1.0 (so the seed folds away in the rule templates).

    Returns a function of the primal parameters returning the derivative, or
    `(value, derivative)` with `with_value`. This is how `grad(grad(f))` differentiates a
    generated gradient with loops and branches: no tape of the tape is needed.
    """
    name = fn.params[wrt]
    reassigned = name in assignment_counts(fn.body)
    fm = ForwardMode(fn, [name], env, namer, seeds={} if reassigned else {name: Const(1.0)})
    prologue = [Assign(fm.tangent(name), Const(1.0), fn.loc, "seed")] if reassigned else []
    body, out, t_out = _sweep(fn, fm)
    result = Tup((out, t_out)) if with_value else t_out
    body = prologue + body + [Return(result, fn.body[-1].loc)]
    prefix = "value_and_d" if with_value else "d"
    return Function(
        f"{prefix}{fn.name}_d{name}",
        list(fn.params),
        body,
        fn.source_file,
        fn.loc,
        dict(fn.free),
        set(fn.user_names),
        list(fn.dependencies),
    )


def _sweep(fn, fm):
    """The primal body with its tangents, and the output's value and tangent atoms."""
    body = fm.block(fn.body[:-1])
    out = fn.body[-1].value
    t_out = fm.tangent_atom(out)
    fm.inst.out = body
    if t_out is None:
        t_out = fm.zero_like(out)
    return body, out, t_out


__all__ = ["derivative", "forward_mode"]
