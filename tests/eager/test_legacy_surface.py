"""The older spellings tutorials and real programs still use, against torch: the legacy tensor
types (`torch.FloatTensor(2, 3)`), `torch.matmul(..., out=)`, `torch.autograd.profiler`,
`torch.svd` / `Tensor.svd`, the in-place function forms (`torch.sin_`), the in-place view
ops (`unsqueeze_`, `squeeze_`, `transpose_`, `t_`), `torch.linalg.cross`, and a custom
`autograd.Function` with `setup_context` and a `jvp` used under forward AD.

Each check runs the same code with torch and with sourcegrad as `lib` and compares values,
gradients, node names and, for errors, the exception's type and text.
"""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)


def _outcome(scenario, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = scenario(lib)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result = ("raised", type(e).__name__, str(e))
    return result, [
        (w.category.__name__, str(w.message).split(" (Triggered")[0])
        for w in caught
        if not issubclass(w.category, DeprecationWarning)  # torch's own imports give some
    ]


def _close(a, b):
    """Equal, with arrays and tensors compared by dtype, shape and values (to ~1e-9)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_close, a, b))  # (torch.Size is a tuple)
    if hasattr(a, "detach") and hasattr(b, "detach"):
        a, b = a.detach().numpy(), b.detach().numpy()
        if str(a.dtype) != str(b.dtype) or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)
        return np.array_equal(a, b)
    return a == b


def same(scenario):
    ours, theirs = _outcome(scenario, sg), _outcome(scenario, torch)
    assert _close(ours[0], theirs[0]), (ours[0], theirs[0])
    assert ours[1] == theirs[1]
    return ours[0]


# --- legacy tensor types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "FloatTensor",
        "DoubleTensor",
        "HalfTensor",
        "LongTensor",
        "IntTensor",
        "ShortTensor",
        "CharTensor",
        "ByteTensor",
        "BoolTensor",
    ],
)
def test_legacy_constructors_make_tensors_of_their_type(name):
    def run(lib):
        T = getattr(lib, name)
        made = [T(2, 3), T(lib.Size([4])), T(), T([1, 0, 1]), T([[1.7, 2.2]])]
        seen = [(tuple(t.shape), str(t.dtype)) for t in made] + [made[3], made[4]]
        seen += [isinstance(made[3], T), isinstance(lib.ones(2, dtype=lib.complex64), T)]
        seen += [repr(T), T.dtype == made[0].dtype, lib.ones(2).type(T).dtype == T.dtype]
        seen.append(T(made[3]) is made[3])
        return seen

    same(run)


def test_legacy_constructors_refuse_as_torch():
    def run(lib):
        errors = []
        for call in (
            lambda: lib.FloatTensor(lib.ones(2, dtype=lib.float64)),
            lambda: lib.FloatTensor("a"),
            lambda: lib.FloatTensor(2.5),
            lambda: lib.LongTensor(2, requires_grad=True),
        ):
            try:
                call()
            except TypeError as e:
                errors.append(str(e))
        return errors + [lib.ones(2).type()]

    assert len(same(run)) == 5


# --- matmul(out=) --------------------------------------------------------------------------


def test_matmul_out():
    a, b = R.standard_normal((2, 3)), R.standard_normal((3, 4))

    def run(lib):
        x, y = lib.tensor(a), lib.tensor(b)
        out = lib.empty(2, 4, dtype=lib.float64)
        r = lib.matmul(x, y, out=out)
        seen = [r is out, out._version if hasattr(out, "_version") else None]
        small = lib.empty(0, dtype=lib.float64)
        lib.matmul(x, y, out=small)
        seen.append(small)
        resized = lib.empty(3, 3, dtype=lib.float64)
        lib.matmul(x, y, out=resized)  # warns: an out with elements resized
        seen.append(resized.shape)
        for bad in (
            lambda: lib.matmul(x, y, out=lib.empty(2, 4)),
            lambda: lib.matmul(x.requires_grad_(), y, out=lib.empty(2, 4, dtype=lib.float64)),
        ):
            try:
                bad()
            except RuntimeError as e:
                seen.append(str(e))
        return seen + [out]

    same(run)


# --- autograd.profiler -------------------------------------------------------------------


def test_profiler_context_managers():
    """profile and record_function work as context managers and decorators; the ranges the
    program names are in key_averages with their counts (torch lists its aten ops as well)."""

    def run(lib):
        from_profiler = lib.autograd.profiler

        @from_profiler.record_function("decorated")
        def step(x):
            return (x * 2).sum()

        with from_profiler.profile(record_shapes=True) as prof:
            for _ in range(3):
                with from_profiler.record_function("forward"):
                    y = step(lib.ones(4))
        named = {e.key: e.count for e in prof.key_averages() if e.key in ("forward", "decorated")}
        outer = next(e for e in prof.key_averages() if e.key == "forward")
        table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
        return [
            named,
            outer.cpu_time_total >= outer.self_cpu_time_total >= 0,
            "Self CPU time total" in table,
            "forward" in table,
            y.item(),
            step(lib.ones(2)).item(),  # outside any profile: the decorator only runs it
        ]

    assert same(run)[0] == {"forward": 3, "decorated": 3}


def test_profiler_chrome_trace(tmp_path):
    with sg.autograd.profiler.profile() as prof:
        with sg.autograd.profiler.record_function("block"):
            sg.ones(3).sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    import json

    events = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in events] == ["block"] and events[0]["dur"] >= 0


# --- svd -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_and_tensor_svd(shape, some):
    """U, S, V (V = Vh^T) of torch.svd; the signs of singular vectors depend on LAPACK, so the
    comparison is of what does not: S, U diag(S) V^T, |U|, and the gradient of a function of
    the singular values and of the reconstruction."""
    a = R.standard_normal(shape)

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        U, S, V = lib.svd(x, some=some) if shape[0] != 3 else x.svd(some=some)
        k = S.shape[-1]
        rebuilt = (U[..., :k] * S.unsqueeze(-2)) @ V[..., :k].transpose(-2, -1)
        (S.square().sum() + (rebuilt * lib.tensor(a)).sum()).backward()
        # (sourcegrad's full U of a non-square matrix is the reduced one and a constant rest)
        names = [U.grad_fn.name(), S.grad_fn.name(), V.grad_fn.name()] if some else []
        return [tuple(U.shape), tuple(V.shape), S, rebuilt, x.grad, names]

    same(run)


def test_svd_without_uv():
    a = R.standard_normal((3, 2))

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        r = lib.svd(x, compute_uv=False)
        r.S.sum().backward()
        return [r.U, r.V, r.S, x.grad, r.U.requires_grad, type(r).__name__]

    same(run)


# --- in-place forms --------------------------------------------------------------------------


_INPLACE = [
    "abs_",
    "acos_",
    "arccos_",
    "asin_",
    "atan_",
    "arcsinh_",
    "ceil_",
    "cos_",
    "cosh_",
    "erf_",
    "erfc_",
    "exp_",
    "exp2_",
    "expm1_",
    "fix_",
    "floor_",
    "log_",
    "log10_",
    "log1p_",
    "log2_",
    "logit_",
    "neg_",
    "reciprocal_",
    "relu_",
    "round_",
    "rsqrt_",
    "sigmoid_",
    "sin_",
    "sinc_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trunc_",
]


_NO_TORCH_DERIVATIVE = {"arcsinh_", "asinh_", "acosh_", "arccosh_", "atanh_", "arctanh_"}


@pytest.mark.parametrize("name", _INPLACE + ["atanh_", "acosh_"])
def test_inplace_function_forms(name):
    """torch.<op>_(x) and x.<op>_(): the same values, node and gradient as torch's."""
    values = np.array([1.15, 1.4, 1.75]) if name == "acosh_" else np.array([0.15, 0.4, 0.75])
    weights = np.array([1.0, 2.0, 3.0])

    def run(lib, inplace=True):
        fn = getattr(lib, name if inplace else name[:-1])
        x = lib.tensor(values, requires_grad=True)
        y = x * 1.0
        r = fn(y)
        y = y if inplace else r
        z = lib.tensor(values)
        getattr(z, name)()
        seen = [r is y, y.detach(), z, z._version]
        (y * lib.tensor(weights)).sum().backward()
        return seen + [x.grad]

    if name not in _NO_TORCH_DERIVATIVE:
        same(run)
        return
    # torch has no derivative for these three in place (NotImplementedError in backward):
    # sourcegrad's is the out-of-place op's
    ours = run(sg)
    theirs = run(torch, inplace=False)
    assert _close(ours[1:], theirs[1:])
    with pytest.raises(NotImplementedError, match="inplace version of"):
        run(torch)


def test_every_inplace_function_sourcegrad_has_is_torchs():
    ours = {n for n in dir(sg) if n.endswith("_") and not n.startswith("_")}
    theirs = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")}
    assert ours <= theirs
    assert set(_INPLACE) <= ours


# --- in-place view ops ------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        lambda y: y.unsqueeze_(0),
        lambda y: y.unsqueeze_(-1),
        lambda y: y.squeeze_(),
        lambda y: y.squeeze_(1),
        lambda y: y.squeeze_((0, 1)),
        lambda y: y.transpose_(0, 2),
        lambda y: y.swapdims_(2, 1),
        lambda y: y.squeeze_().t_(),
    ],
    ids=[
        "unsqueeze_",
        "unsqueeze_-1",
        "squeeze_",
        "squeeze_dim",
        "squeeze_dims",
        "transpose_",
        "swapdims_",
        "t_",
    ],  # fmt: skip
)
def test_inplace_view_ops(op):
    a = R.standard_normal((2, 1, 3))

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        y = x * 1.0
        r = op(y)
        w = lib.tensor(np.cos(np.arange(6.0)).reshape(tuple(y.shape)))
        (y * w).sum().backward()
        return [r is y, tuple(y.shape), y.grad_fn.name(), y._version, x.grad]

    same(run)


def test_unsqueeze_of_views_leaves_and_errors():
    def run(lib):
        seen = []
        base = lib.ones(2, 3)
        v = base[0:1]
        v.unsqueeze_(0)
        base.mul_(2)
        seen += [v, tuple(base.shape), v._base is base]
        x = lib.ones(2, 3, requires_grad=True)
        y = x * 1
        v = y[0]
        v.unsqueeze_(0)
        seen += [v.grad_fn.name(), v._base is y, v._version]
        v.mul_(3)
        y.sum().backward()
        seen.append(x.grad)
        with lib.no_grad():
            w = lib.ones(2, requires_grad=True)
            w.unsqueeze_(0)
            seen += [tuple(w.shape), w.requires_grad, w.grad_fn]
        for bad in (
            lambda: lib.ones(2, requires_grad=True).unsqueeze_(0),
            lambda: lib.ones(3).unsqueeze_(5),
        ):
            try:
                bad()
            except (RuntimeError, IndexError) as e:
                seen.append((type(e).__name__, str(e)))
        return seen

    same(run)


# --- linalg.cross ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes,dim",
    [(((4, 3), (4, 3)), -1), (((1, 3), (5, 3)), -1), (((3, 2), (3, 2)), 0), (((2, 3, 4),) * 2, 1)],
)
def test_linalg_cross(shapes, dim):
    a, b = (R.standard_normal(s) for s in shapes)

    def run(lib):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = lib.linalg.cross(x, y, dim=dim)
        (
            out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        ).sum().backward()
        return [out, x.grad, y.grad, out.grad_fn.name()]

    same(run)


def test_linalg_cross_errors():
    def run(lib):
        seen = []
        for a, b in (((2, 4), (2, 4)), ((2, 3), (3, 3))):
            try:
                lib.linalg.cross(lib.ones(*a), lib.ones(*b))
            except RuntimeError as e:
                seen.append(str(e))
        return seen

    same(run)


# --- a custom Function with setup_context and jvp ---------------------------------------------


def _scaled_sin(lib):
    class ScaledSin(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return lib.sin(x) * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.save_for_forward(x, output)
            ctx.k = k

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * lib.cos(x) * ctx.k, None

        @staticmethod
        def jvp(ctx, x_dot, k_dot):
            x, out = ctx.saved_tensors
            return x_dot * lib.cos(x) * ctx.k + 0 * out

    return ScaledSin


def test_function_with_setup_context_and_jvp():
    """Backward (reverse mode), jvp under forward AD (ctx.saved_tensors are then what
    save_for_forward saved), and both at once, as torch."""
    values, tangent = np.array([0.1, 0.5, 1.0]), np.array([1.0, -2.0, 3.0])

    def run(lib):
        import importlib

        fwAD = importlib.import_module(lib.__name__ + ".autograd.forward_ad")
        F = _scaled_sin(lib)
        x = lib.tensor(values, requires_grad=True)
        y = F.apply(x, 2.0)
        y.sum().backward()
        seen = [y, x.grad, type(y.grad_fn).__name__]
        for requires_grad in (False, True):
            with fwAD.dual_level():
                primal = lib.tensor(values, requires_grad=requires_grad)
                z = F.apply(fwAD.make_dual(primal, lib.tensor(tangent)), 3.0)
                p, t = fwAD.unpack_dual(z)
                seen += [p, t]
                if requires_grad:
                    z.sum().backward()
                    seen.append(primal.grad)
        return seen

    same(run)


def test_function_jvp_missing_is_torchs_error():
    def run(lib):
        import importlib

        fwAD = importlib.import_module(lib.__name__ + ".autograd.forward_ad")

        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with fwAD.dual_level():
            NoJvp.apply(fwAD.make_dual(lib.ones(2), lib.ones(2)))

    assert same(run)[1] == "NotImplementedError"
