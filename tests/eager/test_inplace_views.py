"""In-place updates through views, compared with torch: values, gradients, node names, errors.

Each scenario is a function of the library (`torch` or `sourcegrad`) that returns what it
observed; both must agree (floats to 1e-12, everything else exactly). Regression tests
for the silently wrong gradients of in-place updates through views whose gradient
arrives in another memory order (a transpose, an expand, a dim reduction), of
`diagonal()` (was a copy), of a view whose base came to require grad later, and for
torch's refusals (views made in no_grad mode, outputs of unbind/split).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "detach"):
        return ("tensor", tuple(v.shape), np.asarray(v.detach().tolist(), dtype=float))
    return v


def _same(a, b):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        assert isinstance(b, tuple) and b[:2] == a[:2], (a, b)
        np.testing.assert_allclose(b[2], a[2], rtol=1e-12, atol=1e-12)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _outcome(fn, lib):
    try:
        return ("ok", _plain(fn(lib)))
    except Exception as e:  # noqa: BLE001 - the error is part of what is compared
        return ("error", type(e).__name__, str(e))


def both(fn):
    """fn(lib) on torch and on sourcegrad: the same values, gradients, names or error."""
    want, got = _outcome(fn, torch), _outcome(fn, sg)
    assert got[0] == want[0], (want, got)
    if want[0] == "error":
        assert got == want
    else:
        _same(want[1], got[1])
    return got


def _leaves(lib):
    y = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
    x = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
    return y, x


def _name(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None


# --- the reproducers of the issue --------------------------------------------------------


def test_add_into_an_element_then_mean_over_dim():
    def run(lib):
        y, _ = _leaves(lib)
        a = y.clone()
        a[1, 2] += 0.13
        a.mean(dim=0).sum().backward()
        return [a, y.grad, _name(a)]

    _, (a, grad, name) = both(run)
    assert grad[2][1][2] == 0.5 and name == "CopySlices"


def test_scale_a_row_then_square_of_sum_over_dim():
    def run(lib):
        y, _ = _leaves(lib)
        a = y.clone()
        a[1] *= 0.5
        (a.sum(dim=0) ** 2).sum().backward()
        return [a, y.grad, _name(a)]

    _, (a, grad, name) = both(run)
    assert grad[2][1].tolist() == [1.5, 1.5, 1.5]


def test_assign_a_row_then_read_through_transpose():
    def run(lib):
        y, x = _leaves(lib)
        a = y.clone()
        a[1] = x
        a.T[1:].sum().backward()
        return [a, y.grad, x.grad, _name(a)]

    _, (a, ygrad, xgrad, name) = both(run)
    assert ygrad[2][1].tolist() == [0.0, 0.0, 0.0] and xgrad[2].tolist() == [0.0, 1.0, 1.0]


# --- variants: every kind of view, then any read ------------------------------------------

VIEWS = [
    "a[1]",
    "a[:, 1]",
    "a[1, 2]",
    "a[0:2]",
    "a[:, 1:]",
    "a[::2]",
    "a.T",
    "a.T[1:]",
    "a.t()",
    "a.transpose(0, 1)[2]",
    "a.view(6)[2:5]",
    "a.reshape(3, 2)[1]",
    "a.select(1, 0)",
    "a.narrow(1, 1, 2)",
    "a.diagonal()",
    "a.diagonal(1)",
    "a.unsqueeze(0)[0, 1]",
    "a[None]",
    "a.view(-1)",
    "a.flatten()[::2]",
    "a.movedim(0, 1)[1:]",
]
UPDATES = [
    "{v}.add_(x[0])",
    "{v}.mul_(x[1])",
    "{v}.sub_(x[2], alpha=2)",
    "{v}.div_(x[0])",
    "{v}.copy_(x[2] * 3)",
    "{v}.zero_()",
    "{v}.clamp_(0.5, 2.0)",
    "{v}.exp_()",
    "{v}.mul_({v})",
]
READS = [
    "a.sum(dim=0).pow(2).sum()",
    "a.mean(dim=1).sum()",
    "(a.T[1:] * 3).sum()",
    "(a * a).sum()",
    "a[1].sum() + a[:, 2].sum()",
    "(v * v).sum() + a.sum()",
]


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("update", UPDATES)
def test_update_through_view(view, update):
    def run(lib):
        y = lib.arange(1.0, 7.0, dtype=lib.float64).reshape(2, 3).mul(0.25).requires_grad_()
        x = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        out = []
        for read in READS:
            y.grad = x.grad = None
            a = y.clone()
            v = eval(view)
            eval(update.format(v="v"))
            r = eval(read)
            r.backward()
            out += [a, r, y.grad, x.grad, _name(a), _name(v), a._version]
        return out

    both(run)


@pytest.mark.parametrize("first", ["a[1]", "a.T[0]", "a.diagonal()", "a[:, ::2]"])
@pytest.mark.parametrize("second", ["a[:, 1]", "a.view(6)[1:4]", "a.T", "a"])
def test_two_views_updated_in_turn_and_a_kept_view_read(first, second):
    def run(lib):
        y = lib.arange(1.0, 7.0, dtype=lib.float64).reshape(2, 3).requires_grad_()
        x = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        a = y.clone()
        kept = a.T
        eval(first).mul_(x[0])
        eval(second).add_(x[1])
        names = [_name(a), _name(kept)]
        ((kept**2).sum() + a.sum(dim=1).pow(2).sum()).backward()
        return [a, y.grad, x.grad, names]

    both(run)


def test_setitem_of_a_view_through_a_transposed_base():
    def run(lib):
        y, x = _leaves(lib)
        a = y.clone()
        a.T[1:, 0] = x[:2]
        a.T[2] *= x[1:]
        (a.T.sum(dim=1) ** 2).sum().backward()
        return [a, y.grad, x.grad, _name(a)]

    both(run)


def test_second_order_through_copyslices():
    def run(lib):
        y, x = _leaves(lib)
        a = y.clone()
        a.T[1] *= x[1]
        s = (a.sum(dim=0) ** 2).sum()
        (g,) = lib.autograd.grad(s, x, create_graph=True)
        g.sum().backward()
        return [g, y.grad]

    both(run)


# --- diagonal is a view ------------------------------------------------------------------


def test_diagonal_is_a_view():
    def run(lib):
        a = lib.zeros(3, 4)
        a.diagonal().add_(1)
        a.diagonal(-1).fill_(2)
        y = lib.ones(2, 3, 4, dtype=lib.float64, requires_grad=True)
        b = y.clone()
        b.diagonal(0, 1, 2)[0] *= 3
        (b * lib.arange(24.0, dtype=lib.float64).reshape(2, 3, 4)).sum().backward()
        return [a, b, y.grad, _name(b), b.diagonal(1)._version]

    both(run)


# --- views whose base changes requires_grad later ------------------------------------------


def test_view_of_a_base_that_comes_to_require_grad():
    def run(lib):
        y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.ones(3)
        v, w = b[0:2], b[1:]
        b.mul_(y)
        flags = [v.requires_grad, _name(w), _name(v.sin()), _name(v[0])]
        ((v * 2).sum() + (w[1:] * 5).sum() + y.sum()).backward()
        return [flags, y.grad]

    both(run)


# --- torch's refusals ----------------------------------------------------------------------

REFUSED = {
    "unbind output": "b = y.clone(); b.unbind(0)[1].mul_(2)",
    "view of an unbind output": "b = y.clone(); b.unbind(0)[1][0].mul_(2)",
    "split output": "b = y.clone(); b.split(1)[1].T.mul_(2)",
    "chunk output": "b = y.clone(); u = b.chunk(2, 1)[1]; u += 1",
    "split with sizes": "b = y.clone(); b.split([1, 2], 1)[0].zero_()",
    "unbind of no-grad base, grad value": "b = lib.ones(2, 3); b.unbind(0)[1].mul_(y[0])",
    "base changed, unbind output read": "b = y.clone(); u = b.unbind(0)[1]; b.mul_(2); u.grad_fn",
    "no_grad view modified": "b = y.clone()\nwith lib.no_grad(): v = b[0]\nv.mul_(2)",
    "no_grad view of a no-grad base": "b = lib.ones(2, 3)\nwith lib.no_grad(): v = b[0]\n"
    "v.mul_(y[0])",
    "no_grad view, base changed": "b = y.clone()\nwith lib.no_grad(): v = b[0]\nb.mul_(2)\n"
    "v.grad_fn",
    "view of a no_grad view": "b = y.clone()\nwith lib.no_grad(): v = b[0]\nv[1:].mul_(2)",
    "no_grad view of a leaf": "with lib.no_grad(): v = y[0]\nv.mul_(2)",
    "leaf in place": "y.add_(1)",
    "operand does not broadcast": "b = y.clone(); b.T[0] += lib.ones(3)",
    "operand broadcasts beyond the view": "b = y.clone(); b[0].mul_(lib.ones(2, 3))",
    "copy_ of the wrong shape": "b = y.clone(); b[:, 0].copy_(lib.ones(3))",
    "x.mul_(x) saves x": "b = y.clone(); b *= b; b.sum().backward()",
    "view.div_(view) saves it": "b = y.clone(); b[1].div_(b[1]); b.sum().backward()",
    "view of a leaf in place": "y.T[0].mul_(2)",
    "saved result changed": "b = y.clone(); e = b[0].exp(); b[0].exp_(); b.mul_(2); "
    "(e.sum() + b.sum()).backward()",
    "saved view changed": "b = y.clone(); s = b[0] * b[0]; b[0] += 1; s.sum().backward()",
    "add into an expanded view": "b = y.clone(); b[0].unsqueeze(0).expand(2, 3).add_(1)",
    "backward of a fill of an expanded view": "b = y.clone(); b[0].unsqueeze(0).expand(2, 3)"
    ".fill_(1); b.sum().backward()",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_torch_refuses(name):
    def run(lib):
        y = lib.ones(2, 3, requires_grad=True)
        exec(REFUSED[name], {"lib": lib, "y": y})
        return "ran"

    outcome = both(run)
    assert outcome[0] == "error"


ALLOWED = {
    "x.add_(x) saves nothing": "b = y.clone(); b[1].add_(b[1]); b.sum().backward()",
    "tensor_split piece": "b = y.clone(); b.tensor_split(2)[1].zero_(); b.sum().backward()",
    "unbind output without grad": "b = y.detach().clone(); b.unbind(0)[1].mul_(2)",
    "unbind output under no_grad": "b = y.clone()\nwith lib.no_grad(): b.unbind(0)[1].mul_(2)",
    "clamp_ then change": "b = y.clone(); b[1].clamp_(0, 0.5); b[1] += 1; b.sum().backward()",
    "div_ then change": "b = y.clone(); b[1] /= y[0, 0]; b[1] += 1; b.sum().backward()",
    "fill of an expanded view without grad": "lib.zeros(3).expand(2, 3).fill_(1)",
    "select of an expanded view": "b = y.clone(); b[0].unsqueeze(0).expand(2, 3)[1].add_(1); "
    "b.sum().backward()",
    "empty slice of an expanded view": "b = y.clone(); b.unsqueeze(0).expand(2, 2, 3)[:, 0:0]"
    ".add_(1); b.sum().backward()",
    "expanded diagonal": "lib.zeros(3).expand(3, 3).diagonal().add_(1)",
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_allowed_as_torch_allows(name):
    def run(lib):
        y = lib.ones(2, 3, requires_grad=True)
        exec(ALLOWED[name], {"lib": lib, "y": y})
        return [y.grad]

    outcome = both(run)
    assert outcome[0] == "ok"


@pytest.mark.parametrize("inplace", [False, True])
def test_clamp_gives_zero_gradient_where_it_clamped_even_for_nan(inplace):
    # torch's where(mask, g, 0): a NaN arriving at a clamped element is not its gradient
    # (found by the eager in-place fuzzer, seed third-6668)
    grads = []
    for lib in (torch, sg):
        x = lib.tensor([-2.0, 0.5, 3.0], dtype=lib.float64, requires_grad=True)
        y = x.clone().clamp_(-1.0, 1.0) if inplace else x.clamp(-1.0, 1.0)
        w = lib.tensor([float("nan"), 2.0, float("inf")], dtype=lib.float64)
        (y * w).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
