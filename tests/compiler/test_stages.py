"""Each stage of the compiled gradient fed directly, its output checked on its own.

The stages, in the order `compiler.pipeline` runs them (and the folder each lives in):
1 lower: frontend (source -> IR), or trace (a run -> IR); 2 prepare (IR -> IR: hoisted, the
aux pair); 3 infer: analysis.infer_shapes (IR -> abstract values); 4 decide:
specialise.branches.decide_branches (IR -> IR); 5 rewrite: each of its rewrites (IR, abstract
values -> IR of the same value); 6 check: each check (IR -> None, or a located error);
7 differentiate: derive's reverse, split_vjp, derivative and forward_mode (IR -> derivative
IR); 8 optimize (IR -> IR); 9 print: emit.codegen (IR -> source); 10 load (source ->
functions: numpy, dask, numba); and the door, `sourcegrad.compiler.compile`, running 1-9 in
order. A derivative stage is checked by printing its output unoptimized and running it
against finite differences, so a fault is pinned to the stage that made it.
"""

import numpy as np
import pytest

from sourcegrad.compiler.analysis import aval_of, infer_shapes
from sourcegrad.compiler.derive.forward import derivative
from sourcegrad.compiler.derive.reverse import reverse
from sourcegrad.compiler.emit.codegen import BACKENDS, SourceInfo, generate_module, load
from sourcegrad.compiler.frontend import function_to_ir
from sourcegrad.compiler.ir import Assign, Call, Const, If, Return, Tup, Var, walk
from sourcegrad.compiler.names import Namer
from sourcegrad.compiler.optimize import optimize
from sourcegrad.compiler.specialise.branches import decide_branches
from sourcegrad.ops import template_globals


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


# -- stage 1's second producer, and stages 5, 6, 7 (the rest), 10, each fed directly ---------


def test_trace_lowers_a_run_to_the_same_normal_form():
    from sourcegrad.compiler.trace import trace_function

    traced = trace_function(softplus_sum, (X, W), ["x", "w"], {0}, "the test asked")
    ir = traced.function
    assert ir.params == ["x", "w"] and traced.why == "the test asked" and traced.guards == 0
    assigns = [s for s in ir.body if isinstance(s, Assign)]
    for s in assigns:  # one primitive per statement, as the source front end writes
        assert isinstance(s.value, (Call, Var, Const))
        if isinstance(s.value, Call):
            assert all(isinstance(a, (Var, Const)) for a in s.value.args)
    assert {"mul_op", "exp", "log", "sum"} <= {s.value.op for s in assigns}
    assert all(s.loc.text.strip() in softplus_sum_lines() for s in assigns)
    got, _ = run(ir, (X, W), what="traced primal")
    assert got == pytest.approx(softplus_sum(X, W))


def softplus_sum_lines():
    import inspect

    return {line.strip() for line in inspect.getsource(softplus_sum).splitlines()}


def mean_of_a_list(x):
    return np.mean([x * 2.0, np.sin(x)])


def leaky(x):
    z = x * 1.0
    z[z < 0] = z[z < 0] * 0.1
    return np.sum(z)


def rows_through_a_matrix(U, xs):
    s = 0.0
    for t in range(len(xs)):
        s = s + np.sum(np.tanh(U @ xs[t]))
    return s


def negated_input(y, X, w):
    return np.sum(np.exp(-y * (X @ w)))


BIG = 200_000  # (negate_products applies to arrays of at least NEGATE_PRODUCTS_MIN_BYTES)
REWRITES = {
    # stage 5's rewrites, each: (a function it rewrites, arguments, ops gone, ops made)
    "arrays_of_lists": (mean_of_a_list, (X,), set(), {"np_array"}),
    "selects_for_masked_writes": (leaky, (np.linspace(-1, 1, 6),), {"setitem"}, {"where"}),
    "batch_row_products": (
        rows_through_a_matrix,
        (np.arange(9.0).reshape(3, 3) / 9, np.linspace(-1, 1, 15).reshape(5, 3)),
        set(),
        {"T"},
    ),
    "negate_products": (
        negated_input,
        (np.linspace(-1, 1, BIG), np.linspace(0, 1, 2 * BIG).reshape(BIG, 2) / BIG, W[:2]),
        set(),
        set(),
    ),
}


def _calls(fn):
    return [
        s.value.op for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.value, Call)
    ]


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_each_rewrite_alone_keeps_the_value(name):
    from sourcegrad.compiler import optimize
    from sourcegrad.compiler.specialise import list_operands, masked_writes

    rewrite = {
        "arrays_of_lists": list_operands.arrays_of_lists,
        "selects_for_masked_writes": masked_writes.selects_for_masked_writes,
        "batch_row_products": optimize.batch_row_products,
        "negate_products": optimize.negate_products,
    }[name]
    fn, args, gone, made = REWRITES[name]
    ir = function_to_ir(fn)
    env = infer_shapes(ir, [aval_of(a) for a in args])
    out = rewrite(ir, env)
    assert out is not ir, f"{name} left {fn.__name__} as it was"
    before, after = _calls(ir), _calls(out)
    assert not gone & set(after) and made <= set(after) - set(before)
    if name == "negate_products":  # `-y * p` -> `-(y * p)`: the negation after the product
        assert before.index("neg_op") < before.index("mul_op")
        assert after.index("neg_op") > after.index("mul_op")
    got, _ = run(out, args, what="rewritten primal")
    assert got == pytest.approx(fn(*args), rel=1e-12)
    # a function with nothing to rewrite is given back as it is
    plain = function_to_ir(softplus_sum)
    assert rewrite(plain, infer_shapes(plain, [aval_of(X), aval_of(W)])) is plain


def aliased(x):
    v = x[:2]
    x *= 2.0
    return np.sum(v)


def sorted_complex(x):
    return np.sum(np.real(np.sort(np.exp(1j * x))))


def summed_where(x):  # reshape's rule takes no order= (a method: the front end passes it on)
    return np.sum(x.reshape(3, 1, order="F") ** 2)


def copied_into(x):
    a = np.zeros(3)
    np.copyto(a, x)
    return np.sum(a)


def nan_filled_with(x):  # np.nan_to_num's rule gives its nan= no gradient
    return np.sum(np.nan_to_num(W, nan=x[0]) ** 2)


def test_each_check_alone_refuses_its_case_at_the_users_line():
    from sourcegrad import errors
    from sourcegrad.compiler.analysis import (
        check_dropped_inputs,
        check_in_place_updates,
        check_keywords,
        check_real_values,
        check_unmodelled_calls,
    )
    from sourcegrad.compiler.trace import trace_function

    checks = [
        (aliased, lambda ir, env: check_in_place_updates(ir, env), errors.SourcegradError),
        (
            sorted_complex,
            lambda ir, env: check_real_values(ir, env, ["x"]),
            errors.ComplexValueError,
        ),
        (copied_into, lambda ir, env: check_unmodelled_calls(ir, ["x"]), errors.NoRuleError),
        (summed_where, lambda ir, env: check_keywords(ir, ["x"]), errors.NoRuleError),
        (nan_filled_with, lambda ir, env: check_dropped_inputs(ir, env, ["x"]), errors.NoRuleError),
    ]
    plain = function_to_ir(softplus_sum)
    plain_env = infer_shapes(plain, [aval_of(X), aval_of(W)])
    for fn, check, error in checks:
        if fn is summed_where:  # (the source front end refuses it itself: by trace)
            ir = trace_function(fn, (X.copy(),), ["x"], {0}, "the test asked").function
        else:
            ir = function_to_ir(fn)
        env = infer_shapes(ir, [aval_of(X.copy())])
        with pytest.raises(error) as caught:
            check(ir, env)
        assert caught.value.loc.file == __file__ and caught.value.loc.text.strip()
        assert check(plain, plain_env) is None  # (a program it has nothing against)


def test_forward_mode_alone_gives_value_and_tangent():
    from sourcegrad.compiler.derive.forward import forward_mode

    ir = function_to_ir(softplus_sum)
    env = infer_shapes(ir, [aval_of(X), aval_of(W)])
    jvp_ir = forward_mode(ir, [0], env, namer_for(ir))
    assert jvp_ir.params[:2] == ["x", "w"] and len(jvp_ir.params) == 3
    tangent = np.array([0.5, -1.0, 2.0])
    (value, along), _ = run(jvp_ir, (X, W, tangent), what="forward-mode derivative (JVP)")
    assert value == pytest.approx(softplus_sum(X, W))
    assert along == pytest.approx(fd(softplus_sum, (X, W), 0) @ tangent, rel=1e-6)


def test_split_vjp_alone_gives_a_forward_and_a_backward():
    from sourcegrad.compiler.derive.reverse import split_vjp

    ir = function_to_ir(softplus_sum)
    env = infer_shapes(ir, [aval_of(X), aval_of(W)])
    namer = namer_for(ir)
    cotangent = namer.fresh("g")
    vjp_ir = reverse(ir, [0, 1], env, namer, as_tuple=True, cotangent=cotangent)
    fwd, bwd, _ = split_vjp(vjp_ir, cotangent)
    (value, residuals), _ = run(fwd, (X, W), what="VJP forward")
    assert value == pytest.approx(softplus_sum(X, W))
    (dx, dw), _ = run(bwd, (*residuals, 2.0), what="VJP backward")
    np.testing.assert_allclose(dx, 2.0 * fd(softplus_sum, (X, W), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dw, 2.0 * fd(softplus_sum, (X, W), 1), rtol=1e-6, atol=1e-9)


def test_load_alone_runs_the_source_on_dask_arrays():
    da = pytest.importorskip("dask.array")
    from sourcegrad import compiler

    made = compiler.compile(softplus_sum, (X, W), compiler.Mode((0,), backend="dask"))
    _, _, (fn,) = compiler.load(
        made.source, made.ir.name, made.primal.free, made.names, "dask", file=__file__
    )
    got = fn(da.from_array(X, chunks=2), W)
    assert isinstance(got, np.ndarray)  # (computed at once: one dask.compute)
    np.testing.assert_allclose(got, fd(softplus_sum, (X, W), 0), rtol=1e-6, atol=1e-9)


def test_load_alone_compiles_the_source_with_numba():
    pytest.importorskip("numba")
    from sourcegrad import compiler

    made = compiler.compile(softplus_sum, (X, W), compiler.Mode((0,), backend="numba"))
    source, _, (fn,) = compiler.load(
        made.source, made.ir.name, made.primal.free, made.names, "numba", (X, W), "softplus_sum"
    )
    assert "@numba.njit" in source and hasattr(fn, "py_func")  # compiled, not the fallback
    np.testing.assert_allclose(fn(X, W), fd(softplus_sum, (X, W), 0), rtol=1e-6, atol=1e-9)


CHECKS = {
    "check_in_place_updates",
    "check_real_values",
    "check_unmodelled_calls",
    "check_keywords",
    "check_dropped_inputs",
}


def test_every_rewrite_and_check_the_pipeline_runs_is_fed_here():
    """A rewrite or check added to stages 5-6 (`pipeline.specialised`) gets its test above."""
    import ast
    import inspect

    from sourcegrad.compiler import pipeline

    tree = ast.parse(inspect.getsource(pipeline.specialised))
    (listed,) = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "rewrites"
    ]
    rewrites = {n.id for n in ast.walk(listed) if isinstance(n, ast.Name)}
    # (_hoisted_again is stage 2's hoisting again, fed in the prepare test)
    assert rewrites - {"batch_rows", "_hoisted_again"} == set(REWRITES)
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert {name for name in called if name.startswith("check_")} == CHECKS
