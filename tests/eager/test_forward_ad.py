"""`sourcegrad.autograd.forward_ad` against torch 2.x's forward-mode AD.

Each scenario is written against a torch-like module `T` (sourcegrad or torch) and its
`forward_ad`, so the same code runs on both: tangents (float64) must agree to 1e-10,
printed duals and error messages must be torch's. Without torch the comparisons skip;
the structural checks (every eager op has a forward rule) and the finite-difference
checks run anyway.
"""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.autograd.forward_ad as sg_fw
from sourcegrad.eager import tensor_math
from sourcegrad.eager.spec import ALL_SPECS
from sourcegrad.errors import ForwardADError

try:
    import torch
    import torch.autograd.forward_ad as torch_fw
except ImportError:  # pragma: no cover - torch is optional
    torch = torch_fw = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
BOTH = [(sg, sg_fw)] + ([(torch, torch_fw)] if torch is not None else [])
R = np.random.default_rng(3)


def _np(t):
    return None if t is None else t.detach().numpy()


def _tangent_of(T, fw, fn, *arrays):
    """The tangents of fn's outputs at `arrays`, each seeded with its own tangent."""
    with fw.dual_level():
        duals = [
            fw.make_dual(T.tensor(a, dtype=T.float64), T.tensor(np.cos(3 * a + i), dtype=T.float64))
            for i, a in enumerate(arrays)
        ]
        out = fn(T, *duals)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [(_np(fw.unpack_dual(o).primal), _np(fw.unpack_dual(o).tangent)) for o in outs]


def _compare(fn, *arrays):
    ours = _tangent_of(sg, sg_fw, fn, *arrays)
    theirs = _tangent_of(torch, torch_fw, fn, *arrays)
    assert len(ours) == len(theirs)
    for (p, t), (tp, tt) in zip(ours, theirs):
        np.testing.assert_allclose(p, tp, rtol=1e-10, atol=1e-12)
        assert (t is None) == (tt is None)
        if t is not None:
            np.testing.assert_allclose(t, tt, rtol=1e-9, atol=1e-11)


# --- every registry-made elementwise op ---------------------------------------------------

_BINARY = {"maximum", "minimum", "logaddexp", "atan2", "arctan2", "hypot", "copysign"}


def _domain(name, shape):
    if name in ("acosh", "arccosh"):
        return R.uniform(1.2, 2.0, shape)
    if name in ("asin", "arcsin", "acos", "arccos", "atanh", "arctanh"):
        return R.uniform(-0.8, 0.8, shape)
    if name in ("log", "log1p", "log2", "log10", "sqrt", "reciprocal", "rsqrt"):
        return R.uniform(0.3, 2.0, shape)
    return R.uniform(-2.0, 2.0, shape)


@needs_torch
@pytest.mark.parametrize("name", sorted(tensor_math.REGISTERED))
def test_registered_op_tangent_matches_torch(name):
    fn = (
        (lambda T, x, y: getattr(T, name)(x, y))
        if name in _BINARY
        else (lambda T, x: getattr(T, name)(x))
    )
    arrays = [_domain(name, (3, 4))] + ([_domain(name, (4,))] if name in _BINARY else [])
    _compare(fn, *arrays)


# --- ops whose tangent comes from each kind of rule ----------------------------------------

SCENARIOS = {
    # explicit JVPs, linear rules, transposed VJPs, views, multi-output ops
    "softmax": (lambda T, a: T.softmax(a, 1), [(3, 4)]),
    "log_softmax": (lambda T, a: T.log_softmax(a, 0), [(3, 4)]),
    "logsumexp": (lambda T, a: T.logsumexp(a, 1), [(3, 4)]),
    "matmul": (lambda T, a, b: a @ b, [(3, 4), (4, 2)]),
    "mse_loss": (lambda T, a, b: T.nn.functional.mse_loss(a, b), [(3, 4), (3, 4)]),
    "cat": (lambda T, a, b: T.cat([a, b * 2], 0), [(2, 3), (1, 3)]),
    "stack": (lambda T, a, b: T.stack([a, b], 1), [(2, 3), (2, 3)]),
    "max_dim": (lambda T, a: a.max(1).values, [(3, 4)]),
    "max_all": (lambda T, a: a.max(), [(3, 4)]),
    "std": (lambda T, a: a.std(), [(3, 4)]),
    "var_dim": (lambda T, a: a.var(0), [(3, 4)]),
    "mean": (lambda T, a: a.mean(1, keepdim=True), [(3, 4)]),
    "transpose_reshape": (lambda T, a: a.T.reshape(12), [(3, 4)]),
    "norm": (lambda T, a: a.norm(), [(3, 4)]),
    "where": (lambda T, a: T.where(a > 0, a, 0.0), [(3, 4)]),
    "prod": (lambda T, a: a.prod(), [(3, 4)]),
    "cumsum": (lambda T, a: a.cumsum(0), [(3, 4)]),
    "unbind": (lambda T, a: a.unbind(0), [(3, 4)]),
    "split": (lambda T, a: a.split(2, 1), [(3, 4)]),
    "pow_tensor": (lambda T, a, b: a.abs() ** b, [(3, 4), (3, 4)]),
    "clamp": (lambda T, a: a.clamp(-0.5, 0.5), [(3, 4)]),
    "chain": (lambda T, a: T.sigmoid(a).tanh().relu() * a.exp(), [(3, 4)]),
    # (its rule once took the slope through np.where of two numbers: float32 on Tensors)
    "leaky_relu": (lambda T, a: T.nn.functional.leaky_relu(a, 0.1), [(3, 4)]),
    "activations": (
        lambda T, a: (
            T.nn.functional.softplus(a)
            + T.nn.functional.gelu(a)
            + T.nn.functional.silu(a)
            + T.nn.functional.elu(a)
        ),
        [(3, 4)],
    ),
    "nll_loss": (
        lambda T, a: T.nn.functional.nll_loss(T.log_softmax(a, 1), T.tensor([1, 0, 3])),
        [(3, 4)],
    ),
    "group_norm": (lambda T, a: T.nn.functional.group_norm(a, 2), [(2, 4, 3)]),
    "batch_norm": (lambda T, a: T.nn.functional.batch_norm(a, None, None, training=True), [(5, 3)]),
    "bilinear": (
        lambda T, a: T.nn.functional.interpolate(
            a, scale_factor=2, mode="bilinear", align_corners=False
        ),
        [(1, 1, 3, 3)],
    ),
    "sort_topk": (lambda T, a: (a.sort(1).values, a.topk(2, 1).values), [(3, 4)]),
    "gather": (lambda T, a: T.gather(a, 1, T.tensor([[0, 2], [1, 1], [3, 0]])), [(3, 4)]),
    "inv_det": (
        lambda T, a: (
            T.linalg.inv(a + 4 * T.eye(4, dtype=T.float64)).sum()
            * T.linalg.det(a + 4 * T.eye(4, dtype=T.float64))
        ),
        [(4, 4)],
    ),
    "sdpa": (lambda T, q: T.nn.functional.scaled_dot_product_attention(q, q, q), [(1, 3, 4)]),
    "broadcast_add": (lambda T, a, b: a + b, [(3, 4), (4,)]),
    "div_sub": (lambda T, a, b: (a - 2 * b) / (b * b + 1), [(3, 4), (3, 1)]),
    "index": (lambda T, a: a[1:, ::2] * a[0, 1], [(3, 4)]),
    "expand": (lambda T, a: a.unsqueeze(0).expand(2, 3, 4), [(3, 4)]),
    "cross_entropy": (lambda T, a: T.nn.functional.cross_entropy(a, T.tensor([0, 3, 1])), [(3, 4)]),
    "linear": (
        lambda T, a, w: T.nn.functional.linear(a, w, T.ones(2, dtype=T.float64)),
        [(3, 4), (2, 4)],
    ),
    "cross": (lambda T, a, b: T.cross(a, b, dim=1), [(2, 3), (2, 3)]),
    "conv2d": (
        lambda T, a, w: T.nn.functional.conv2d(a, w, padding=1),
        [(1, 2, 4, 4), (3, 2, 3, 3)],
    ),
    "layer_norm": (lambda T, a: T.nn.functional.layer_norm(a, (4,)), [(3, 4)]),
    "smooth_l1": (lambda T, a, b: T.nn.functional.smooth_l1_loss(a, b), [(3, 4), (3, 4)]),
    "pad": (lambda T, a: T.nn.functional.pad(a, (1, 2)), [(3, 4)]),
    "max_pool": (lambda T, a: T.nn.functional.max_pool2d(a, 2), [(1, 1, 4, 4)]),
    "addmm": (lambda T, c, a, b: T.addmm(c, a, b), [(3, 2), (3, 4), (4, 2)]),
    "setitem": (lambda T, a: _setitem(T, a), [(3, 4)]),
    "clone_mul_": (lambda T, a: a.clone().mul_(a), [(3, 4)]),
    "zero_into_view": (lambda T, a: _into_view(T, a), [(3, 4)]),
    "exp_": (lambda T, a: (a * 1).exp_(), [(3, 4)]),
    "fill_": (lambda T, a: ((a * 1).fill_(2.0), (a * 1).zero_()), [(3, 4)]),
    "copy_": (lambda T, a: T.zeros(3, 4, dtype=T.float64).copy_(a * 2), [(3, 4)]),
    "integer_result": (lambda T, a: (a.argmax(), a > 0), [(3, 4)]),
    "to_float32": (lambda T, a: a.to(T.float32).double(), [(3, 4)]),
}


def _setitem(T, a):
    z = T.zeros(3, 4, dtype=T.float64)
    z[1] = a[0] * 3
    return z


def _into_view(T, a):
    z = T.zeros(4, 4, dtype=T.float64)
    z[1:].add_(a)  # the view gets a tangent; its base's (zeros) sees the write
    return z


@needs_torch
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_op_tangent_matches_torch(name):
    fn, shapes = SCENARIOS[name]
    _compare(fn, *[R.uniform(-1.5, 1.5, s) for s in shapes])


def test_every_eager_op_has_a_forward_rule():
    """Each rule an eager op records has a JVP, a VJP to derive one from or a linearity mark:
    forward mode never meets an op it cannot serve (it would refuse by name)."""
    lacking = sorted(
        {
            s.rule.name
            for s in ALL_SPECS
            if s.rule.differentiable and not (s.rule.jvps or s.rule.vjps or s.rule.linear)
        }
    )
    assert lacking == []


def _composite(T, a):
    return (T.softmax(a, 1) * a.tanh()).sum(0) / (1 + a.norm())


def _bce_logits(T, a):  # (torch's own forward AD of it takes 15 s to warm up: checked here)
    return T.nn.functional.binary_cross_entropy_with_logits(a, T.ones(3, 4) * 0.3)


@pytest.mark.parametrize("f", [_composite, _bce_logits])
def test_tangent_against_finite_differences(f):
    """Without torch: the tangent is the directional derivative."""
    x = R.uniform(-1, 1, (3, 4))
    v = R.uniform(-1, 1, (3, 4))
    with sg_fw.dual_level():
        out = f(sg, sg_fw.make_dual(sg.tensor(x), sg.tensor(v)))
        tangent = _np(sg_fw.unpack_dual(out).tangent)
    eps = 1e-6
    numeric = (f(sg, sg.tensor(x + eps * v)).numpy() - f(sg, sg.tensor(x - eps * v)).numpy()) / (
        2 * eps
    )
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)


# --- levels, duals, printing, errors --------------------------------------------------------


def _errors(T, fw):
    x = T.tensor([1.0, 2.0, 3.0])
    t = T.tensor([1.0, 0.0, 0.5])
    found = []

    def attempt(fn):
        try:
            fn()
            found.append(None)
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            # (ForwardADError is a NotImplementedError, torch's type for these)
            kind = "NotImplementedError" if isinstance(e, NotImplementedError) else type(e).__name__
            found.append((kind, str(e)))

    attempt(lambda: fw.make_dual(x, t))
    with fw.dual_level():
        d = fw.make_dual(x, t)

        def nested():
            with fw.dual_level():
                pass

        attempt(nested)
        attempt(lambda: fw.make_dual(x, T.ones(2)))
        attempt(lambda: fw.make_dual(T.tensor([1, 2]), T.ones(2)))
        attempt(lambda: fw.make_dual(d, t))
        attempt(lambda: 2.0 % d)  # ops torch has no forward AD for: refused, never zero
        attempt(lambda: d // 2)
    return found


@needs_torch
def test_errors_are_torchs():
    ours = _errors(sg, sg_fw)
    assert ours == _errors(torch, torch_fw)
    assert all(e is not None for e in ours)


def _levels(T, fw):
    """Levels given explicitly, exits without a level, nesting, 0-d tangents: what torch
    2.13 does (it refuses nested levels, so each `level=` but the open one is an error)."""
    found = []

    def attempt(fn):
        try:
            found.append(("ok", repr(fn())))
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            found.append((type(e).__name__, str(e)))

    x, t = T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])
    attempt(lambda: fw.make_dual(x, t, level=0))
    attempt(lambda: fw.make_dual(x, t, level=-1))
    attempt(lambda: fw.unpack_dual(x, level=0))
    attempt(lambda: fw.exit_dual_level())
    attempt(lambda: fw.exit_dual_level(level=-1))
    attempt(lambda: fw.exit_dual_level(level=0))
    attempt(fw.enter_dual_level)
    attempt(fw.enter_dual_level)  # nested: refused, and the open level stays usable
    d = fw.make_dual(x, t, level=0)
    attempt(lambda: fw.unpack_dual(d, level=0).tangent)
    attempt(lambda: fw.unpack_dual(d, level=1))
    attempt(lambda: fw.unpack_dual(d, level=-1))
    attempt(lambda: fw.unpack_dual(x, level=1))
    attempt(lambda: fw.unpack_dual(3.0))
    attempt(lambda: fw.make_dual(x, t, level=1))
    attempt(lambda: fw.make_dual(x, t, level=-1))
    attempt(lambda: fw.make_dual(T.tensor(2.0), T.tensor(7.0)) * 3)
    attempt(lambda: fw.exit_dual_level(level=1))
    attempt(lambda: fw.exit_dual_level(level=0))
    attempt(lambda: fw.unpack_dual(d, level=0))
    return found


@needs_torch
def test_levels_are_torchs():
    ours = _levels(sg, sg_fw)
    assert ours == _levels(torch, torch_fw)
    assert ("RuntimeError", "Nested forward mode AD is not supported at the moment") in ours
    assert ("ok", "tensor(6., tangent=21.0)") in ours


def _printed(T, fw):
    lines = []
    x = T.tensor([1.0, 2.0, 3.0])
    with fw.dual_level() as level:
        lines.append(repr(level))
        d = fw.make_dual(x, T.tensor([1.0, 0.0, 0.5]))
        lines.append(repr(d))
        y = d.sin() * 2
        lines.append(repr(y))
        lines.append(repr(fw.unpack_dual(y)).replace("torch.", ""))
        lines.append(repr(fw.unpack_dual(x)))
        lines.append(repr(fw.make_dual(T.ones(2, 3), T.ones(2, 3) / 3)))
        lines.append(repr(fw.make_dual(T.tensor([1.0], requires_grad=True), T.ones(1))))
    lines.append(repr(fw.unpack_dual(y)))
    lines.append(repr(y))
    return lines


@needs_torch
def test_printed_duals_are_torchs():
    assert _printed(sg, sg_fw) == _printed(torch, torch_fw)


def test_unpack_dual_and_level_exit():
    x = sg.tensor([1.0, 2.0])
    t = sg.tensor([3.0, 4.0])
    with sg_fw.dual_level():
        d = sg_fw.make_dual(x, t)
        unpacked = sg_fw.unpack_dual(d)
        assert unpacked.tangent is t and unpacked[1] is t
        assert unpacked.primal._base is x and sg_fw.unpack_dual(unpacked.primal).tangent is None
        assert d._base is x and not d.requires_grad
        y = d * 2
        with sg.no_grad():  # grad mode does not switch forward mode off, as in torch
            assert np.array_equal(sg_fw.unpack_dual(d * 3).tangent.numpy(), [9.0, 12.0])
        assert sg_fw.unpack_dual(d.detach()).tangent is None
    assert sg_fw.unpack_dual(y).tangent is None  # leaving the level drops every tangent
    with sg_fw.dual_level():  # a new level starts clean
        assert sg_fw.unpack_dual(y).tangent is None


@needs_torch
def test_reverse_over_forward_matches_torch():
    def run(T, fw):
        x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
        tr = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
        with fw.dual_level():
            y = (fw.make_dual(x, tr).sin() * x).sum()
            tangent = fw.unpack_dual(y).tangent
            tangent.backward()
        return x.grad.numpy(), tr.grad.numpy(), tangent.item()

    for ours, theirs in zip(run(sg, sg_fw), run(torch, torch_fw)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@needs_torch
def test_custom_function_jvp():
    def run(T, fw):
        class Mul(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.x, ctx.y = x, y
                return x * y

            @staticmethod
            def backward(ctx, g):
                raise AssertionError("not called")

        class MulJvp(Mul):
            @staticmethod
            def jvp(ctx, tx, ty):
                return tx * ctx.y + ty * ctx.x

        with fw.dual_level():
            d = fw.make_dual(T.tensor([1.0, 2.0]), T.tensor([1.0, 1.0]))
            try:
                Mul.apply(d, T.ones(2))
                refused = None
            except NotImplementedError as e:
                refused = str(e)
            out = fw.unpack_dual(MulJvp.apply(d, T.tensor([3.0, 4.0]))).tangent.tolist()
        return refused, out

    assert run(sg, sg_fw) == run(torch, torch_fw)


def test_an_op_without_any_rule_is_refused():
    """The transposed VJP needs a differentiable VJP; an op whose VJP is not one is named."""

    class Opaque(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with sg_fw.dual_level():
        d = sg_fw.make_dual(sg.ones(2), sg.ones(2))
        with pytest.raises(NotImplementedError, match="jvp function"):
            Opaque.apply(d)
    assert issubclass(ForwardADError, NotImplementedError)
