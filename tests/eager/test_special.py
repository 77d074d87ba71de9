"""`sourcegrad.special` (torch.special), the top-level functions and Tensor methods made from the
same registry entries (torch.lgamma, x.digamma(), x.erfinv_(), ...) against torch: values,
gradients, second derivatives through create_graph, node names, float32, the gradients torch
refuses, and that importing sourcegrad does not import scipy."""

import subprocess
import sys

import numpy as np
import pytest

import sourcegrad

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")

R = np.random.default_rng(7)
UNIT = R.uniform(0.1, 0.9, size=(2, 3))  # in (0, 1): logit, erfinv, ndtri, entr
POS = R.uniform(0.5, 3.0, size=(2, 3))  # positive: gammaln, digamma, zeta's q, gammainc's x
REAL = R.normal(size=(2, 3))
W = R.normal(size=(2, 3))

# name -> (function of (library, x), input, second derivative in torch's graph too)
CASES = {
    "erf": (lambda L, x: L.special.erf(x), REAL),
    "erfc": (lambda L, x: L.special.erfc(x), REAL),
    "erfinv": (lambda L, x: L.special.erfinv(x), UNIT),
    "erfcx": (lambda L, x: L.special.erfcx(x), REAL),
    "expit": (lambda L, x: L.special.expit(x), REAL),
    "logit": (lambda L, x: L.special.logit(x), UNIT),
    "logit_eps": (lambda L, x: L.special.logit(x, eps=0.3), UNIT),
    "gammaln": (lambda L, x: L.special.gammaln(x), POS),
    "digamma": (lambda L, x: L.special.digamma(x), POS),
    "psi": (lambda L, x: L.special.psi(x), POS),
    "polygamma": (lambda L, x: L.special.polygamma(2, x), POS),
    "multigammaln": (lambda L, x: L.special.multigammaln(x + 1.0, 3), POS),
    "i0": (lambda L, x: L.special.i0(x), REAL),
    "i0e": (lambda L, x: L.special.i0e(x), REAL),
    "i1": (lambda L, x: L.special.i1(x), REAL),
    "i1e": (lambda L, x: L.special.i1e(x), REAL),
    "ndtr": (lambda L, x: L.special.ndtr(x), REAL),
    "ndtri": (lambda L, x: L.special.ndtri(x), UNIT),
    "log_ndtr": (lambda L, x: L.special.log_ndtr(x), REAL),
    "xlogy_x": (lambda L, x: L.special.xlogy(x, L.tensor(POS)), REAL),
    "xlogy_y": (lambda L, x: L.special.xlogy(L.tensor(REAL), x), POS),
    "xlog1py_x": (lambda L, x: L.special.xlog1py(x, L.tensor(POS)), REAL),
    "xlog1py_y": (lambda L, x: L.special.xlog1py(L.tensor(REAL), x), POS),
    "entr": (lambda L, x: L.special.entr(x), UNIT),
    "sinc": (lambda L, x: L.special.sinc(x), REAL),
    "exp2": (lambda L, x: L.special.exp2(x), REAL),
    "expm1": (lambda L, x: L.special.expm1(x), REAL),
    "log1p": (lambda L, x: L.special.log1p(x), POS),
    "round": (lambda L, x: L.special.round(x) * x, REAL),
    "logsumexp": (lambda L, x: L.special.logsumexp(x, 1, keepdim=True), REAL),
    "softmax": (lambda L, x: L.special.softmax(x, 0), REAL),
    "log_softmax": (lambda L, x: L.special.log_softmax(x, 1), REAL),
    "zeta_q": (lambda L, x: L.special.zeta(L.tensor(POS + 1.5), x), POS),
    "gammainc_x": (lambda L, x: L.special.gammainc(L.tensor(POS), x), POS),
    "gammaincc_x": (lambda L, x: L.special.gammaincc(L.tensor(POS), x), POS),
    # torch's top-level functions and Tensor methods of the same entries
    "torch.lgamma": (lambda L, x: L.lgamma(x), POS),
    "torch.digamma": (lambda L, x: L.digamma(x), POS),
    "torch.erfinv": (lambda L, x: L.erfinv(x), UNIT),
    "torch.polygamma": (lambda L, x: L.polygamma(1, x), POS),
    "torch.mvlgamma": (lambda L, x: L.mvlgamma(x + 1.0, 2), POS),
    "torch.igamma": (lambda L, x: L.igamma(L.tensor(POS), x), POS),
    "torch.xlogy": (lambda L, x: L.xlogy(x, L.tensor(POS)), REAL),
    "torch.i0": (lambda L, x: L.i0(x), REAL),
    "torch.logit": (lambda L, x: L.logit(x, 0.2), UNIT),
    "x.erf": (lambda L, x: x.erf(), REAL),
    "x.erfc": (lambda L, x: x.erfc(), REAL),
    "x.erfinv": (lambda L, x: x.erfinv(), UNIT),
    "x.lgamma": (lambda L, x: x.lgamma(), POS),
    "x.digamma": (lambda L, x: x.digamma(), POS),
    "x.polygamma": (lambda L, x: x.polygamma(3), POS),
    "x.mvlgamma": (lambda L, x: (x + 1.0).mvlgamma(2), POS),
    "x.i0": (lambda L, x: x.i0(), REAL),
    "x.logit": (lambda L, x: x.logit(), UNIT),
    "x.logit_eps": (lambda L, x: x.logit(0.25), UNIT),
    "x.xlogy": (lambda L, x: x.xlogy(L.tensor(POS)), REAL),
    "x.igammac": (lambda L, x: L.tensor(POS).igammac(x), POS),
    # in place, on a non-leaf
    "x.erf_": (lambda L, x: (x * 1.0).erf_(), REAL),
    "x.erfinv_": (lambda L, x: (x * 1.0).erfinv_(), UNIT),
    "x.lgamma_": (lambda L, x: (x * 1.0).lgamma_(), POS),
    "x.digamma_": (lambda L, x: (x * 1.0).digamma_(), POS),
    "x.i0_": (lambda L, x: (x * 1.0).i0_(), REAL),
    "x.logit_": (lambda L, x: (x * 1.0).logit_(), UNIT),
    "x.logit_eps_": (lambda L, x: (x * 1.0).logit_(0.3), UNIT),
}
SECOND_ORDER_NONE = {"round"}  # torch's round has a zero gradient: no second derivative


def _run(lib, fn, x, dtype):
    tx = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
    out = fn(lib, tx)
    (g,) = lib.autograd.grad((out * lib.tensor(W, dtype=out.dtype)).sum(), tx, create_graph=True)
    gg = None
    if g.requires_grad:
        (gg,) = lib.autograd.grad((g * g).sum(), tx, allow_unused=True)
    return out, g, gg


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, x = CASES[name]
    ours = _run(sourcegrad, fn, x, "float64")
    ref = _run(torch, fn, x, "float64")
    assert type(ours[0].grad_fn).__name__ == type(ref[0].grad_fn).__name__
    for a, b in zip(ours[:2], ref[:2]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    if name not in SECOND_ORDER_NONE and ref[2] is not None:
        np.testing.assert_allclose(ours[2].numpy(), ref[2].numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["erfinv", "gammaln", "digamma", "polygamma", "i1e", "xlogy_y"])
def test_float32_stays_float32(name):
    fn, x = CASES[name]
    ours = _run(sourcegrad, fn, x, "float32")
    ref = _run(torch, fn, x, "float32")
    for a, b in zip(ours[:2], ref[:2]):
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5, atol=1e-6)


def test_an_integer_tensor_becomes_float():
    for lib in (sourcegrad, torch):
        out = lib.special.gammaln(lib.tensor([1, 2, 3]))
        assert str(out.dtype).endswith("float32")
        np.testing.assert_allclose(out.numpy(), [0.0, 0.0, np.log(2.0)], atol=1e-6)


@pytest.mark.parametrize(
    "name, arg", [("zeta", 0), ("gammainc", 0), ("gammaincc", 0)], ids=["zeta", "igamma", "igammac"]
)
def test_the_gradients_torch_refuses_are_refused(name, arg):
    # torch has no derivative for zeta's x or the incomplete gammas' a: both refuse, loudly
    for lib, error in ((torch, NotImplementedError), (sourcegrad, sourcegrad.NoRuleError)):
        args = [lib.tensor(POS + 1.5), lib.tensor(POS)]
        args[arg].requires_grad_()
        out = getattr(lib.special, name)(*args)
        with pytest.raises(error, match="derivative"):
            out.sum().backward()


def test_the_bessel_functions_torch_does_not_differentiate_require_no_grad():
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"):
        ours = getattr(sourcegrad.special, name)(sourcegrad.tensor(POS, requires_grad=True))
        ref = getattr(torch.special, name)(torch.tensor(POS, requires_grad=True))
        assert ours.requires_grad is ref.requires_grad is False
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10)


def test_scipy_special_on_a_tensor_records_the_torch_node():
    import scipy.special

    x = sourcegrad.tensor(UNIT, requires_grad=True)
    out = scipy.special.erfinv(x)
    assert type(out.grad_fn).__name__ == "ErfinvBackward0"
    out.sum().backward()
    t = torch.tensor(UNIT, requires_grad=True)
    torch.special.erfinv(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_mvlgamma_of_small_inputs_is_inf_as_torch():
    # (scipy's multigammaln refuses them; torch gives inf where a gammaln term is at a pole)
    ours, ref = (L.mvlgamma(L.tensor([0.5, 2.0], dtype=L.float64), 3) for L in (sourcegrad, torch))
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'not_a_function'"):
        sourcegrad.special.not_a_function  # noqa: B018
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'no_such_method'"):
        sourcegrad.tensor([1.0]).no_such_method  # noqa: B018
    assert not hasattr(sourcegrad, "no_such_function")


@pytest.mark.long
def test_importing_sourcegrad_does_not_import_scipy():
    code = (
        "import sys, sourcegrad as torch\n"
        "x = torch.tensor([0.5], requires_grad=True)\n"
        "y = torch.special.erf(x) + torch.special.expit(x) + torch.special.log1p(x)\n"
        "assert 'scipy' not in sys.modules, 'imported'\n"
        "assert type(torch.special.gammaln(x).grad_fn).__name__ == 'LgammaBackward0'\n"
        "assert type(x.digamma().grad_fn).__name__ == 'DigammaBackward0'\n"
        "print('scipy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
