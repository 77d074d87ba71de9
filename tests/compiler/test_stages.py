"""Each stage of the compiled gradient fed directly, its output checked on its own.

The stages, in the order `compiler.pipeline` runs them (and the folder each lives in):
frontend (source -> IR), prepare (IR -> IR: hoisted, the aux pair), analysis.infer_shapes
(IR -> abstract values), specialise.branches.decide_branches (IR -> IR), derive's reverse /
forward (IR -> derivative IR), optimize (IR -> IR), emit.codegen (IR -> source), load
(source -> functions); and the door, `sourcegrad.compiler.compile`, running 1-9 in order.
A derivative stage is checked by printing its output unoptimized and running it against
finite differences, so a fault is pinned to the stage that made it.
"""

import numpy as np
import pytest

from sourcegrad.compiler.analysis import aval_of, infer_shapes
from sourcegrad.compiler.specialise.branches import decide_branches
from sourcegrad.compiler.emit.codegen import BACKENDS, SourceInfo, generate_module, load
from sourcegrad.compiler.derive.forward import derivative
from sourcegrad.compiler.frontend import function_to_ir
from sourcegrad.compiler.ir import Assign, Call, Const, If, Return, Tup, Var, walk
from sourcegrad.compiler.names import Namer
from sourcegrad.ops import template_globals
from sourcegrad.compiler.optimize import optimize
from sourcegrad.compiler.derive.reverse import reverse


def softplus_sum(x, w):
    z = x * w + 1.0
    return np.sum(np.log(1.0 + np.exp(z)))


def by_rank(x):
    if x.ndim == 2:
        return np.sum(x @ x.T)
    return np.sum(x * x)


X = np.array([0.3, -1.2, 2.0])
W = np.array([1.5, 0.5, -0.25])


def fd(fn, args, i, eps=1e-6):
    out = np.zeros_like(args[i])
    for k in range(out.size):
        step = np.zeros_like(out)
        step.flat[k] = eps
        hi = list(args)
        hi[i] = args[i] + step
        lo = list(args)
        lo[i] = args[i] - step
        out.flat[k] = (fn(*hi) - fn(*lo)) / (2 * eps)
    return out


def namer_for(ir):
    """New names that clash with none of the function's (as api.Gradient.compile makes)."""
    return Namer(
        reserved=set(ir.params)
        | template_globals()
        | {"math"}
        | {s.target for s in walk(ir.body) if isinstance(s, Assign)}
    )


def run(fn_ir, args, what="gradient"):
    """Print `fn_ir` (no optimization) and call it."""
    info = SourceInfo("stages.py", fn_ir.name, (), frozenset(), what=what)
    source = generate_module([fn_ir], info, BACKENDS["numpy"])
    module = load(source, fn_ir.name, dict(fn_ir.free))
    return getattr(module, fn_ir.name)(*args), source


def test_frontend_lowers_to_a_normal_form_with_the_users_names():
    ir = function_to_ir(softplus_sum)
    assert ir.params == ["x", "w"]
    assigns = [s for s in ir.body if isinstance(s, Assign)]
    assert all(isinstance(s.value, (Call, Var, Const)) for s in assigns)
    for s in assigns:  # one primitive per statement: its arguments are names or constants
        if isinstance(s.value, Call):
            assert all(isinstance(a, (Var, Const)) for a in s.value.args)
    assert "z" in {s.target for s in assigns}
    assert isinstance(ir.body[-1], Return)
    assert all(s.loc.line > 0 and "softplus_sum" not in s.loc.text for s in assigns)


def test_infer_shapes_gives_every_value_its_shape():
    ir = function_to_ir(softplus_sum)
    env = infer_shapes(ir, [aval_of(X), aval_of(W)])
    assert env["z"].shape == (3,)
    returned = ir.body[-1].value.name
    assert env[returned].shape == ()


def test_decide_branches_keeps_the_branch_the_signature_takes():
    ir = function_to_ir(by_rank)
    assert any(isinstance(s, If) for s in walk(ir.body))
    for arg, kept in ((X, "mul_op"), (np.ones((2, 3)), "matmul_op")):
        env = infer_shapes(ir, [aval_of(arg)])
        decided = decide_branches(ir, env)
        ops = {
            s.value.op
            for s in walk(decided.body)
            if isinstance(s, Assign) and isinstance(s.value, Call)
        }
        assert kept in ops
        assert not any(
            isinstance(s, If)
            and isinstance(s.test, Var)
            and s.test.name in env
            and env[s.test.name].known
            for s in walk(decided.body)
        )


@pytest.mark.parametrize("wrt", [0, 1])
def test_reverse_alone_gives_the_gradient(wrt):
    ir = function_to_ir(softplus_sum)
    env = infer_shapes(ir, [aval_of(X), aval_of(W)])
    grad_ir = reverse(ir, [wrt], env, namer_for(ir))
    got, source = run(grad_ir, (X, W))
    np.testing.assert_allclose(got, fd(softplus_sum, (X, W), wrt), rtol=1e-6, atol=1e-9)
    assert "def " in source


def test_forward_alone_gives_the_derivative_in_a_number():
    ir = function_to_ir(softplus_sum)
    w = 0.7
    env = infer_shapes(ir, [aval_of(X), aval_of(w)])
    jvp_ir = derivative(ir, 1, env, namer_for(ir))
    got, _ = run(jvp_ir, (X, w), what="forward-mode derivative (JVP)")
    eps = 1e-6
    want = (softplus_sum(X, w + eps) - softplus_sum(X, w - eps)) / (2 * eps)
    assert got == pytest.approx(want, rel=1e-6)


def test_optimize_alone_removes_repeats_and_dead_values():
    from sourcegrad.compiler.ir import Function

    body = [
        Assign("a", Call("exp", (Var("x"),))),
        Assign("b", Call("exp", (Var("x"),))),  # the same value again
        Assign("dead", Call("sin", (Var("x"),))),  # never read
        Assign("c", Call("add_op", (Var("a"), Var("b")))),
        Return(Var("c")),
    ]
    fn = Function("f", ["x"], body, "f.py", None, {}, {"x"})
    out = optimize(fn, {"x": (3,)}, {"x": np.dtype("float64")})
    calls = [
        s.value.op for s in walk(out.body) if isinstance(s, Assign) and isinstance(s.value, Call)
    ]
    assert calls.count("exp") == 1 and "sin" not in calls
    got, _ = run(out, (X,))
    np.testing.assert_allclose(got, 2 * np.exp(X))


def test_codegen_alone_prints_the_ir_as_python():
    from sourcegrad.compiler.ir import Function

    body = [Assign("y", Call("mul_op", (Var("x"), Const(2.0)))), Return(Var("y"))]
    fn = Function("double", ["x"], body, "f.py", None, {}, {"x"})
    info = SourceInfo("f.py", "double", ("x",), frozenset())
    source = generate_module([fn], info, BACKENDS["numpy"])
    assert "def double(x):" in source and "y = x * 2.0" in source and "return y" in source
    module = load(source, "double", {})
    assert module.double(3.0) == 6.0


def test_pipeline_specialised_runs_stages_3_to_6():
    from sourcegrad.compiler import pipeline

    ir = function_to_ir(by_rank)
    primal, env = pipeline.specialised(ir, ir, [aval_of(np.ones((2, 3)))], ["x"])
    assert not any(isinstance(s, If) for s in walk(primal.body))
    assert any(
        isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "matmul_op"
        for s in walk(primal.body)
    )
    assert all(a is None or hasattr(a, "stand_in") for a in env.values())


def test_prepare_alone_hoists_and_makes_the_aux_pair():
    from sourcegrad import errors
    from sourcegrad.compiler import Mode, prepare

    def with_aux(x):
        return np.sum(x * x), x

    ir = function_to_ir(with_aux)
    pair = prepare(ir, Mode((0,), has_aux=True)).body[-1].value
    assert isinstance(pair, Tup) and len(pair.items) == 2
    with pytest.raises(errors.NonScalarOutputError, match="has_aux=True"):
        prepare(ir, Mode((0,)))
    assert prepare(function_to_ir(softplus_sum), Mode((0,)), traced=True).body == (
        function_to_ir(softplus_sum).body
    )


def test_the_door_runs_stages_1_to_9_as_the_api_does():
    import sourcegrad
    from sourcegrad import compiler

    made = compiler.compile(softplus_sum, (X, W), compiler.Mode((0,)))
    g = sourcegrad.grad(softplus_sum)
    g(X, W)
    assert made.source == g.source
    assert made.names == [made.ir.name] and not made.control_flow
    assert made.manifest == g.saved and "exp_z" in {entry["name"] for entry in made.manifest}
    # stage 10: the source loaded, and the gradient it computes
    _, _, (fn,) = compiler.load(made.source, made.ir.name, made.primal.free, made.names, "numpy")
    np.testing.assert_allclose(fn(X, W), fd(softplus_sum, (X, W), 0), rtol=1e-6, atol=1e-9)


def test_the_door_gives_each_mode_its_functions():
    from sourcegrad import compiler

    vjp = compiler.compile(softplus_sum, (X, W), compiler.Mode((0, 1), "vjp", single=False))
    assert len(vjp.names) == 2  # a forward and a backward
    w = 0.7
    jvp = compiler.compile(softplus_sum, (X, w), compiler.Mode((1,), "jvp"))
    _, _, (fn,) = compiler.load(jvp.source, jvp.ir.name, jvp.primal.free, jvp.names, "numpy")
    value, tangent = fn(X, w, 1.0)
    eps = 1e-6
    want = (softplus_sum(X, w + eps) - softplus_sum(X, w - eps)) / (2 * eps)
    assert value == pytest.approx(softplus_sum(X, w)) and tangent == pytest.approx(want, rel=1e-6)
    # abstract values may stand for the arguments; the IR for the function
    ir = function_to_ir(softplus_sum)
    by_avals = compiler.compile(ir, [aval_of(X), aval_of(W)], compiler.Mode((0,)))
    assert by_avals.source == compiler.compile(softplus_sum, (X, W), compiler.Mode((0,))).source
