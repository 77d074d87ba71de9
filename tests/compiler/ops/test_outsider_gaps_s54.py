"""Compiler gaps outsiders' numpy code hits (session 54): np.take's modes wrap and clip (and
`a.take`), np.maximum/minimum.accumulate, np.add.reduceat, np.logaddexp.reduce and
.accumulate, np.nanvar and np.nanstd, np.linalg.cond, np.pad's constant_values carrying a
gradient, and a trace that imports a module while it runs (scipy.special on first use of
`scipy.special.erf`). Gradients against central finite differences in float64 in both front
ends, the JVP and the Hessian-vector product where the registry exposes them (fd_check);
what stays refused, located."""

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_all

R = np.random.default_rng(54)
FRONT_ENDS = ["source", "trace"]
X6 = R.normal(size=6)
X12 = R.normal(size=12)


def gradient(fn, front_end, wrt=0):
    """sourcegrad.grad(fn) read from its source, or traced: of a copy of fn for the trace
    (the code compiled for fn is cached per function, whichever front end made it)."""
    if front_end == "trace":
        fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)
    g = sourcegrad.grad(fn, wrt=wrt)
    g.reads_source = front_end == "source"
    return g


def close(ours, numeric):
    scale = max(1.0, float(np.max(np.abs(numeric))))
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-6 * scale)


def both_front_ends_and_second_order(fn, x):
    """The gradient of each front end against central differences, then (the source front
    end's) JVP and Hessian-vector product against differences (fd_check.check_all)."""
    numeric = numeric_grad(fn, (x.copy(),), 0)
    for front_end in FRONT_ENDS:
        close(gradient(fn, front_end)(x.copy()), numeric)
    check_all(fn, x.copy())


# -- np.take(a, idx, mode='wrap' / 'clip'), a.take(...) ------------------------------------------

IDX = np.array([0, 7, -9, 3, 12, 3])  # out of range both ways, and repeated


def take_wrap(x):
    return np.sum(np.take(x, IDX, mode="wrap") ** 2 * np.arange(1, 7))


def take_clip(x):
    return np.sum(np.sin(np.take(x, IDX, mode="clip")) * np.arange(1, 7))


def take_method_wrap_axis(x):
    return np.sum(x.reshape(2, 6).take(np.array([[5, -1], [8, 0]]), axis=1, mode="wrap") ** 3)


def take_method_clip(x):
    return np.sum(np.exp(x.take(IDX, mode="clip")))


def take_clip_positional(x):
    # np.take(a, indices, axis, out, mode): the mode fifth
    return np.sum(np.take(x.reshape(3, 4), [4, -1], 1, None, "clip") ** 2)


@pytest.mark.parametrize(
    "fn, x",
    [
        (take_wrap, X6),
        (take_clip, X6),
        (take_method_wrap_axis, X12),
        (take_method_clip, X6),
        (take_clip_positional, X12),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_take_modes(fn, x):
    both_front_ends_and_second_order(fn, x)


def take_bad_mode(x):
    return np.sum(np.take(x, IDX, mode="bounce"))


def test_take_with_a_mode_numpy_refuses_raises_numpys_error():
    with pytest.raises(ValueError, match="clipmode"):
        take_bad_mode(X6)
    with pytest.raises(ValueError, match="clipmode"):
        sourcegrad.grad(take_bad_mode)(X6.copy())


@pytest.mark.parametrize(
    "indices, axis, mode",
    [
        (np.array([-1, 2, 7, -7]), None, "clip"),  # clip reads -1 as 0 (it read the last)
        (np.array([[-6, 6], [1, 9]]), 1, "wrap"),
        (np.array([-2, 0]), 0, "clip"),
        (7, None, "wrap"),
        (-1, 1, "clip"),
    ],
)
def test_eager_take_with_a_mode_reads_what_numpy_reads(indices, axis, mode):
    # np.take(tensor, ...) in eager mode took the indices as given whatever the mode (a
    # silently wrong value and gradient for clip's negative indices); torch is the oracle of
    # the gradient, given the indices numpy reads (skipped where torch is not installed: the
    # [test] extra alone)
    torch = pytest.importorskip("torch")

    x = R.normal(size=(2, 5))
    t = sourcegrad.tensor(x.copy(), requires_grad=True)
    y = np.take(t, indices, axis=axis, mode=mode)
    np.testing.assert_array_equal(y.detach().numpy(), np.take(x, indices, axis=axis, mode=mode))
    weights = np.cos(np.arange(np.size(y.detach().numpy()))).reshape(np.shape(y.detach().numpy()))
    (y * sourcegrad.tensor(weights)).sum().backward()
    n = x.size if axis is None else x.shape[axis]
    read = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
    xt = torch.tensor(x, requires_grad=True)
    flat = xt.reshape(-1) if axis is None else xt
    taken = torch.index_select(flat, 0 if axis is None else axis, torch.tensor(np.ravel(read)))
    taken = taken.reshape(np.shape(y.detach().numpy()))
    (taken * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


# -- np.maximum.accumulate / np.minimum.accumulate -------------------------------------------


def running_max(x):
    return np.sum(np.maximum.accumulate(x) ** 2 * np.arange(1, 7))


def running_min_rows(x):
    return np.sum(
        np.tanh(np.minimum.accumulate(x.reshape(3, 4), axis=1)) * np.arange(12).reshape(3, 4)
    )


def running_max_columns(x):
    return np.sum(np.maximum.accumulate(x.reshape(3, 4), 0) ** 3)


@pytest.mark.parametrize(
    "fn, x",
    [(running_max, X6), (running_min_rows, X12), (running_max_columns, X12)],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_running_max_and_min(fn, x):
    both_front_ends_and_second_order(fn, x)


def weighted_running_max(x):
    return np.sum(np.maximum.accumulate(x) * np.array([1.0, 2.0, 4.0, 8.0, 16.0]))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_running_max_ties_give_the_first_element_its_gradient(front_end):
    # x[2] ties with the running maximum x[1]: numpy's maximum keeps its first argument, and
    # the gradient goes to the element that reached the value first (np.argmax's choice);
    # each result element's weight lands on exactly one element of x
    x = np.array([1.0, 3.0, 3.0, 2.0, 0.5])
    got = gradient(weighted_running_max, front_end)(x.copy())
    weights = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    first = np.array([0, 1, 1, 1, 1])  # the element each running value copies, first reached
    np.testing.assert_array_equal(got, np.bincount(first, weights, minlength=5))
    # away from the tie (x[2] moved off it either way) the gradients agree with differences
    for shifted in (x + [0, 0, 1e-3, 0, 0], x - [0, 0, 1e-3, 0, 0]):
        close(
            gradient(weighted_running_max, front_end)(shifted.copy()),
            numeric_grad(weighted_running_max, (shifted,), 0),
        )


# -- np.add.reduceat ---------------------------------------------------------------------------


def segment_sums(x):
    return np.sum(np.add.reduceat(x, [0, 2, 5]) ** 2 * np.array([1.0, -2.0, 3.0]))


def segment_sums_rows(x):
    # a non-increasing pair (4, 2): numpy's sum there is x[4] alone
    return np.sum(np.sin(np.add.reduceat(x.reshape(2, 6), np.array([1, 4, 2, 3]), axis=1)))


def segment_sums_columns(x):
    return np.sum(np.add.reduceat(x.reshape(4, 3), [0, 0, 3], 0) ** 3)


@pytest.mark.parametrize(
    "fn, x",
    [(segment_sums, X6), (segment_sums_rows, X12), (segment_sums_columns, X12)],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_add_reduceat(fn, x):
    both_front_ends_and_second_order(fn, x)


# -- np.logaddexp.reduce and .accumulate -----------------------------------------------------


def logaddexp_all(x):
    return np.logaddexp.reduce(x * 3.0) ** 2


def logaddexp_rows(x):
    return np.sum(np.logaddexp.reduce(x.reshape(3, 4), axis=1, keepdims=True) * x.reshape(3, 4))


def logaddexp_everything(x):
    return np.logaddexp.reduce(x.reshape(2, 2, 3), axis=None) * 1.5


def logaddexp_running(x):
    return np.sum(np.logaddexp.accumulate(x.reshape(3, 4)) ** 2)


def logaddexp_running_rows(x):
    return np.sum(np.sin(np.logaddexp.accumulate(x.reshape(3, 4), axis=1)))


@pytest.mark.parametrize(
    "fn, x",
    [
        (logaddexp_all, X6),
        (logaddexp_rows, X12),
        (logaddexp_everything, X12),
        (logaddexp_running, X12),
        (logaddexp_running_rows, X12),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_logaddexp_reduce_and_accumulate(fn, x):
    both_front_ends_and_second_order(fn, x)


def test_logaddexp_reduce_of_large_values_does_not_overflow():
    x = np.array([1000.0, 1000.5, 999.0])
    got = gradient(logaddexp_all, "source")(x.copy())
    z = 3.0 * x
    softmax = np.exp(z - np.max(z)) / np.sum(np.exp(z - np.max(z)))
    close(got, 2.0 * np.logaddexp.reduce(z) * 3.0 * softmax)


# -- np.nanvar / np.nanstd / np.nanmean ------------------------------------------------------

NANS = np.array([False, True, False, False, False, True, False, False, True, False, False, False])


def nanvar_all(x):
    return np.nanvar(np.where(NANS, np.nan, x)) * 2.0


def nanvar_rows_ddof(x):
    return np.sum(np.nanvar(np.where(NANS, np.nan, x).reshape(3, 4), axis=1, ddof=1) ** 2)


def nanvar_keepdims(x):
    y = np.where(NANS, np.nan, x).reshape(3, 4)
    return np.sum(np.nanvar(y, axis=0, keepdims=True) * np.nan_to_num(y))


def nanstd_all_ddof(x):
    return np.nanstd(np.where(NANS, np.nan, x), ddof=1)


def nanstd_rows(x):
    return np.sum(np.nanstd(np.where(NANS, np.nan, x).reshape(3, 4), axis=-1) * np.arange(3))


def nanstd_keepdims(x):
    y = np.where(NANS, np.nan, x).reshape(2, 6)
    return np.sum(np.nanstd(y, 1, None, None, 1, True) * np.nan_to_num(y) ** 2)


def nanmean_rows(x):
    return np.sum(np.nanmean(np.where(NANS, np.nan, x).reshape(3, 4), axis=1) ** 2)


@pytest.mark.parametrize(
    "fn",
    [
        nanvar_all,
        nanvar_rows_ddof,
        nanvar_keepdims,
        nanstd_all_ddof,
        nanstd_rows,
        nanstd_keepdims,
        nanmean_rows,
    ],
    ids=lambda v: v.__name__,
)
def test_nanvar_nanstd_nanmean(fn):
    both_front_ends_and_second_order(fn, X12)


def nanstd_of_an_input(x):
    return np.sum(np.nanstd(x, axis=0))


def test_nanstd_gives_a_nan_element_no_gradient_and_a_constant_row_zero():
    x = np.array([[1.0, 2.0, 5.0], [np.nan, 2.0, 3.0], [4.0, 2.0, np.nan]])
    got = gradient(nanstd_of_an_input, "source")(x.copy())
    assert got[1, 0] == 0.0 and got[2, 2] == 0.0  # the NaNs take no part
    np.testing.assert_array_equal(got[:, 1], 0.0)  # a std of 0: 0, as std's rule gives it
    # the rest is the std of the elements that are there: differences of each column's own
    for column, rows in ((0, [0, 2]), (2, [0, 1])):
        values = x[rows, column]
        close(got[rows, column], (values - values.mean()) / (len(values) * values.std()))


# -- np.linalg.cond --------------------------------------------------------------------------


def cond_default(x):
    return np.linalg.cond(x.reshape(3, 4)) ** 2


def cond_two_square(x):
    return np.linalg.cond(x[:9].reshape(3, 3) + 2.0 * np.eye(3), 2)


def cond_minus_two_stack(x):
    return np.sum(np.linalg.cond(x.reshape(2, 3, 2), -2) * np.array([1.0, 3.0]))


@pytest.mark.parametrize(
    "fn", [cond_default, cond_two_square, cond_minus_two_stack], ids=lambda v: v.__name__
)
def test_cond(fn):
    both_front_ends_and_second_order(fn, X12)


def cond_frobenius(x):
    return np.linalg.cond(x[:9].reshape(3, 3), "fro")


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_cond_of_other_p_is_refused_located(front_end):
    with pytest.raises(errors.NoRuleError) as raised:
        gradient(cond_frobenius, front_end)(X12.copy())
    message = str(raised.value)
    assert "np.linalg.cond with p other than None, 2 and -2" in message
    assert f"{__file__}:" in message and 'np.linalg.cond(x[:9].reshape(3, 3), "fro")' in message


# -- np.pad(x, w, constant_values=c) with c carrying a gradient ------------------------------


def pad_with_an_element(x):
    return np.sum(np.pad(x, 2, constant_values=x[0]) ** 2 * np.arange(10))


def pad_with_a_mean(x):
    y = np.pad(x.reshape(2, 3), ((1, 0), (0, 2)), "constant", constant_values=np.mean(x) * 0.3)
    return np.sum(y**3 * np.arange(15).reshape(3, 5))


V4 = np.array([0.3, 1.7, -2.2, 0.9])


def pad_a_constant_with_a_value(x):
    # V is plain: numpy's dispatch looks at np.pad's array only, and the trace ran numpy's
    # own np.pad on the traced value (refused, TraceEscapeError); the source front end refused
    # the argument (NoRuleError)
    return np.sum(np.pad(V4, (2, 1), constant_values=x[0] * x[1]) ** 2 * np.arange(7))


@pytest.mark.parametrize(
    "fn",
    [pad_with_an_element, pad_with_a_mean, pad_a_constant_with_a_value],
    ids=lambda v: v.__name__,
)
def test_pad_constant_values_carry_the_gradient(fn):
    both_front_ends_and_second_order(fn, X6)


def pad_with_two_values(x):
    c = np.stack([x[0], x[1]])  # (before, after) for every axis
    return np.sum(np.pad(x, 1, constant_values=c))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_pad_with_per_axis_values_carrying_a_gradient_is_refused_located(front_end):
    with pytest.raises(errors.NoRuleError) as raised:
        gradient(pad_with_two_values, front_end)(X6.copy())
    message = str(raised.value)
    assert "constant_values other than one number" in message
    assert f"{__file__}:" in message and "np.pad(x, 1, constant_values=c)" in message


# -- a module imported while the trace runs (scipy.special on first use) ---------------------

_IMPORTED_MODULE = """
import numpy as np

STATE = {"calls": 0}
STATE["self"] = STATE  # (a container that holds itself)
for _k in range(3):
    STATE["calls"] += 1
TABLE = {k: np.float64(k) / 4.0 for k in range(4)}


def scaled(x):
    return x * TABLE[2]
"""


def test_a_module_imported_while_the_trace_runs_is_not_traced(tmp_path):
    # its top level changes its own globals and builds a dict that holds itself: the trace
    # refused the first (a change of a global) and crashed on the second
    (tmp_path / "s54_imported_mid_trace.py").write_text(_IMPORTED_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:

        def loss(x):
            import s54_imported_mid_trace as m

            return np.sum(np.sin(m.scaled(x)) ** 2)

        grad = sourcegrad.grad(loss)
        grad.reads_source = False  # (traced: the source front end refuses an import)
        assert "s54_imported_mid_trace" not in sys.modules
        close(grad(X6.copy()), numeric_grad(loss, (X6.copy(),), 0))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("s54_imported_mid_trace", None)


_GELU_PROGRAM = """
import numpy as np
import scipy  # scipy.special is imported by the first scipy.special.erf, inside the trace

import sourcegrad
from sourcegrad.api import numeric_grad


def loss(x):
    return np.sum(0.5 * x * (1.0 + scipy.special.erf(x / np.sqrt(2.0))) * np.arange(5))


x = np.linspace(-1.3, 1.1, 5)
g = sourcegrad.grad(loss)
g.reads_source = False
assert "scipy.special" not in __import__("sys").modules
np.testing.assert_allclose(g(x), numeric_grad(loss, (x,), 0), rtol=1e-6, atol=1e-7)
print("ok")
"""


def test_a_traced_gelu_importing_scipy_special_on_first_use(tmp_path):
    # (a process of its own: in this one scipy.special is long imported)
    program = tmp_path / "gelu_program.py"
    program.write_text(textwrap.dedent(_GELU_PROGRAM))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


# -- out= buffers: the result written where numpy writes it ------------------------------------


def reduceat_into_a_buffer(x):
    buf = np.zeros(3)
    np.add.reduceat(x, [0, 2, 4], out=buf)
    return np.sum(buf**2)


def running_max_into_a_buffer(x):
    buf = np.zeros(6)
    np.maximum.accumulate(x, 0, None, buf)  # (out the fourth argument)
    return np.sum(buf**2 * np.arange(6))


def logaddexp_into_a_buffer(x):
    buf = np.zeros(3)
    np.logaddexp.reduce(x.reshape(2, 3), 0, None, buf)
    return np.sum(buf**2)


def take_into_a_buffer(x):
    buf = np.zeros(4)
    np.take(x, [0, 7, -8, 2], out=buf, mode="wrap")
    return np.sum(buf**2 * np.arange(4))


def nanvar_into_a_buffer(x):
    buf = np.zeros(2)
    np.nanvar(x.reshape(2, 3), axis=1, out=buf, ddof=1)
    return np.sum(buf**2)


@pytest.mark.parametrize(
    "fn",
    [
        reduceat_into_a_buffer,
        running_max_into_a_buffer,
        logaddexp_into_a_buffer,
        take_into_a_buffer,
        nanvar_into_a_buffer,
    ],
    ids=lambda v: v.__name__,
)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_results_written_into_a_buffer(fn, front_end):
    # (the source front end read a ufunc method's out= as a plain argument: the buffer kept
    # its zeros in the compiler's model, a zero gradient; it now leaves such a call to the
    # trace, which records the store)
    close(gradient(fn, front_end)(X6.copy()), numeric_grad(fn, (X6.copy(),), 0))
