"""The eager fast paths (engine ready queue, RuleNode.apply, record, operators) agree with torch.

Each scenario runs on torch and on sourcegrad and must give the same values, the
same node order and the same errors; the fast paths are only about speed.
"""

import threading
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402
from sourcegrad.eager import spec, tensor_math  # noqa: E402

LIBS = [torch, sourcegrad]


def both(fn):
    """fn(lib) on torch and on sourcegrad; the two results must be equal (values to 1e-6)."""
    a, b = (fn(lib) for lib in LIBS)
    _assert_same(_plain(a), _plain(b))
    return b


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "detach"):
        return (
            "tensor",
            str(v.dtype).replace("sourcegrad", "torch"),
            tuple(v.shape),
            np.asarray(v.detach().tolist(), dtype=float),
        )
    return v


def _assert_same(a, b):
    """Equal structure, dtypes, shapes and other values; tensor values close (CPUs round apart)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b


# --- node order --------------------------------------------------------------------------------


def _record_order(lib, build):
    order = []
    leaves, out, nodes = build(lib)
    for n in nodes:
        n.register_hook(lambda gi, go, n=n: order.append(type(n).__name__))
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda t, i=i: order.append(f"leaf{i}"))
    out.backward()
    return order


def _diamond(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y2 = x + 3
    e = y1.exp()
    z = (y1 * y2 + e).sum()
    return [x], z, [y1.grad_fn, y2.grad_fn, e.grad_fn, z.grad_fn]


def _two_ready_at_once(lib):
    x = lib.tensor([0.5, 1.5], requires_grad=True)
    y = x * 2
    s = y.sin()
    c = y.cos()
    out = (s + c).sum()
    return [x], out, [y.grad_fn, s.grad_fn, c.grad_fn]


def _many_leaves(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([2.0], requires_grad=True)
    c = lib.tensor([3.0], requires_grad=True)
    p = a * b
    q = p + c
    r = (q * a + b).sum()
    return [a, b, c], r, [p.grad_fn, q.grad_fn]


def _branch_waits(lib):
    x = lib.tensor([1.0, -1.0], requires_grad=True)
    y = x + 1
    z = y * 2
    w = z.tanh() + y
    v = w.sum()
    return [x], v, [y.grad_fn, z.grad_fn, w.grad_fn]


@pytest.mark.parametrize("build", [_diamond, _two_ready_at_once, _many_leaves, _branch_waits])
def test_node_order_matches_torch(build):
    order = both(lambda lib: _record_order(lib, build))
    assert order


def test_leaf_order_without_node_hooks():
    def run(lib):
        order = []
        leaves = [lib.tensor([float(i + 1)], requires_grad=True) for i in range(4)]
        for i, t in enumerate(leaves):
            t.register_post_accumulate_grad_hook(lambda _, i=i: order.append(i))
        a, b, c, d = leaves
        ((a * b) + (c * d) + a * d).sum().backward()
        return order

    both(run)


# --- gradients through the add/sub fast path --------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [((3, 1), (1, 4)), ((3, 4), (4,)), ((), (2, 3)), ((2,), ()), ((1,), (1,)), ((2, 3), (2, 3))],
)
@pytest.mark.parametrize("op", ["add", "sub", "radd", "alpha"])
def test_broadcast_gradients_match_torch(shapes, op):
    def run(lib):
        rng = np.random.default_rng(0)
        a = lib.tensor(rng.normal(size=shapes[0]), requires_grad=True)
        b = lib.tensor(rng.normal(size=shapes[1]), requires_grad=True)
        if op == "add":
            out = a + b
        elif op == "sub":
            out = a - b
        elif op == "radd":
            out = 2.0 + a + b
        else:
            out = lib.add(a, b, alpha=3)
        (out * out).sum().backward()
        return [out, a.grad, b.grad]

    both(run)


@pytest.mark.parametrize(
    "dtypes", [("float32", "float64"), ("float64", "float32"), ("float32", "int64")]
)
def test_mixed_dtype_gradients_match_torch(dtypes):
    def run(lib):
        a = lib.ones(2, 3, dtype=getattr(lib, dtypes[0]), requires_grad=True)
        b_dtype = getattr(lib, dtypes[1])
        b = (
            lib.ones(3, dtype=b_dtype, requires_grad=True)
            if b_dtype.is_floating_point
            else lib.arange(3, dtype=b_dtype)
        )
        out = a + b - a / 2
        out.sum().backward()
        return [out, a.grad] + ([b.grad] if b.requires_grad else [])

    both(run)


def test_add_fast_path_is_used_for_add():
    # the spec analysis that lets RuleNode.apply skip add's VJP
    assert tensor_math.ADD.passes == (True, True)
    assert tensor_math.SUB.passes == (True, False)
    assert tensor_math.MUL.passes == (False, False)


def test_gradient_passed_through_is_not_shared_with_grad():
    def run(lib):
        x = lib.zeros(3, requires_grad=True)
        y = x + 1.0
        g = lib.ones(3)
        y.backward(g)
        g.mul_(5)  # .grad must be a copy, not the seed itself
        return [x.grad, g]

    both(run)


# --- errors and graph lifetime -----------------------------------------------------------------


def _error(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e).split("\n")[0].replace("sourcegrad", "torch")
    return None


def test_modified_saved_tensor_still_detected():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        z = y * y
        y.add_(1)
        return _error(lambda: z.sum().backward())

    assert both(run) is not None


def test_second_backward_without_retain_graph():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        add = (x + 1).sum()  # nothing saved: a second backward works
        add.backward()
        ok = _error(lambda: add.backward())
        mul = (x * x).sum()  # saved values were freed
        mul.backward()
        return [ok, _error(lambda: mul.backward()), x.grad]

    both(run)


def test_retain_graph_keeps_saved_values():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out = (x * x + x).sum()
        out.backward(retain_graph=True)
        out.backward()
        return x.grad

    both(run)


# --- hooks, targets, create_graph --------------------------------------------------------------


def test_hook_registered_during_backward_runs():
    def run(lib):
        seen = []
        x = lib.ones(2, requires_grad=True)
        y = x + 1.0
        z = y * 3
        w = z + 2.0

        def on_w(g):
            y.register_hook(lambda gy: seen.append(gy.tolist()) or gy * 10)
            return g

        w.register_hook(on_w)
        w.sum().backward()
        return [seen, x.grad]

    both(run)


def test_retain_grad_and_leaf_hooks_on_the_fast_path():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        x.register_hook(lambda g: g * 2)
        y = x + 1.0
        y.retain_grad()
        z = y + 1.0
        z.sum().backward()
        return [x.grad, y.grad]

    both(run)


def test_grad_with_inputs_and_unreached_parts():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = a + b
        d = c * b + a
        (ga,) = lib.autograd.grad(d.sum(), [a], retain_graph=True)
        d.sum().backward(inputs=[b])
        return [ga, a.grad, b.grad]

    both(run)


def test_create_graph_through_adds():
    def run(lib):
        x = lib.tensor([1.5], requires_grad=True)
        y = x
        for _ in range(5):
            y = y + 1.0
        y = y * y
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g, x)
        return [g, gg]

    both(run)


def test_no_grad_and_inference_mode_record_nothing():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            a = x + 1.0
        with lib.inference_mode():
            b = x + 1.0
        return [a.requires_grad, a.grad_fn is None, b.requires_grad, b.is_inference()]

    both(run)


def test_anomaly_mode_still_checks_fast_path_nodes():
    def run(lib):
        x = lib.zeros(1, requires_grad=True)
        y = (x + 0.0).sqrt()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                return _error(lambda: (y * 0.0 + 1.0).sum().backward())

    assert both(run) is not None


# --- operators and long chains ---------------------------------------------------------------


def test_operators_decline_unknown_operands():
    x = sourcegrad.ones(2)
    for name in ("__add__", "__radd__", "__sub__", "__mul__", "__rmul__", "__truediv__"):
        assert getattr(x, name)("a") is NotImplemented
    with pytest.raises(TypeError):
        x + "a"
    assert sourcegrad.Tensor.__add__.__name__ == "add"


def test_operators_match_functions():
    def run(lib):
        x = lib.tensor([1, 2, 3])  # integer: true division promotes
        y = lib.tensor([2.0, 4.0, 8.0], requires_grad=True)
        outs = [x / 2, 3 + x, x * 2.5, x - 1, y / x, 1.0 + y, y * y - y]
        sum(o.sum() for o in outs[4:]).backward()
        return outs + [y.grad, [type(o.grad_fn).__name__ for o in outs[4:]]]

    both(run)


def test_long_chain_backward():
    x = sourcegrad.ones(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y + 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_backward_in_threads():
    errors = []

    def work():
        try:
            for _ in range(20):
                x = sourcegrad.ones(3, requires_grad=True)
                y = x
                for _ in range(50):
                    y = y + 1.0
                (y * y).sum().backward()
                assert x.grad.tolist() == [102.0] * 3
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_every_spec_has_a_plan_for_every_mask():
    for s in spec.ALL_SPECS:
        if s._table is None:
            continue
        for entry in s._table:
            arg_modes, _, _, kept = entry
            assert [i for i, _, _ in kept] == [i for i, m in enumerate(arg_modes) if m]
