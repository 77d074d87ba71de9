"""The eager engine under load: deep and wide graphs, long loops, threads, bad input.

* a 100,000-op chain and a 1,000-wide fan-in backpropagate (and are freed)
  without recursion;
* 1,000 training steps leave no memory behind: every step's graph, saved
  tensors and loss are freed by reference counting alone (the cyclic garbage
  collector is off while they run, and finds nothing afterwards);
* grad mode and inference mode are per thread, with threads running at once;
* bad input raises torch's error, in torch's words (checked against torch when
  it is installed).
"""

import gc
import math
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None


@pytest.fixture
def no_cycle_collector():
    """Run with the cyclic GC off, so only reference counting frees anything."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# ---- deep and wide graphs ------------------------------------------------------------------

N_CHAIN = 100_000


@pytest.mark.long
def test_chain_of_100000_ops(no_cycle_collector):
    assert N_CHAIN > sys.getrecursionlimit() * 10
    x = sg.tensor([1.0, 2.0], dtype=sg.float64, requires_grad=True)
    y = x
    for _ in range(N_CHAIN):
        y = y * 1.00001
    node = weakref.ref(y.grad_fn)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.00001**N_CHAIN] * 2, rtol=1e-9)
    # freeing the chain (100,000 nodes, each holding the next) does not recurse either
    del y
    assert node() is None


@pytest.mark.long
def test_chain_with_saved_tensors_and_retain_graph():
    x = sg.tensor(0.3, dtype=sg.float64, requires_grad=True)
    y = x
    for _ in range(N_CHAIN // 5):
        y = (y * 0.5).sin() + 0.25  # saves its input at every step
    (g1,) = sg.autograd.grad(y, x, retain_graph=True)
    (g2,) = sg.autograd.grad(y, x)
    # the same derivative by the chain rule, step by step in plain floats
    v, d = 0.3, 1.0
    for _ in range(N_CHAIN // 5):
        d *= 0.5 * math.cos(v * 0.5)
        v = math.sin(v * 0.5) + 0.25
    assert float(y.detach()) == pytest.approx(v, rel=1e-12)
    assert float(g1) == float(g2) == pytest.approx(d, rel=1e-9)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        sg.autograd.grad(y, x)


@pytest.mark.long
def test_long_chain_freed_without_backward(no_cycle_collector):
    x = sg.ones(3, requires_grad=True)
    y = x
    for _ in range(N_CHAIN):
        y = y + 1
    first = weakref.ref(y.grad_fn)
    del y
    assert first() is None


@pytest.mark.long
def test_double_backward_through_a_long_chain():
    x = sg.tensor(0.2, dtype=sg.float64, requires_grad=True)
    y = x
    for _ in range(2_000):
        y = y * (1 + 1e-4) + y * y * 1e-4
    (g,) = sg.autograd.grad(y, x, create_graph=True)
    (gg,) = sg.autograd.grad(g, x)
    eps = 1e-5

    def first(v):
        t = sg.tensor(v, dtype=sg.float64, requires_grad=True)
        out = t
        for _ in range(2_000):
            out = out * (1 + 1e-4) + out * out * 1e-4
        return float(sg.autograd.grad(out, t)[0])

    assert float(gg) == pytest.approx((first(0.2 + eps) - first(0.2 - eps)) / (2 * eps), rel=1e-5)


@pytest.mark.long
def test_fan_in_1000_wide(no_cycle_collector):
    # one leaf used 1,000 times: its AccumulateGrad has 1,000 incoming edges
    w = sg.tensor(1.5, dtype=sg.float64, requires_grad=True)
    total = sg.stack([w * i for i in range(1000)]).sum() + sum(w * w for _ in range(1000))
    total.backward()
    assert float(w.grad) == pytest.approx(sum(range(1000)) + 1000 * 2 * 1.5)
    # 1,000 leaves into one node (cat), and into one sum of 1,000 products
    xs = [sg.tensor([float(i), 1.0], requires_grad=True) for i in range(1000)]
    cat = sg.cat(xs)
    assert len(cat.grad_fn.next_functions) == 1000
    (cat * 2).sum().backward()
    products = sum((x * x).sum() for x in xs)
    gs = sg.autograd.grad(products, xs)
    for i, (x, g) in enumerate(zip(xs, gs)):
        assert x.grad.tolist() == [2.0, 2.0]
        assert g.tolist() == [2.0 * i, 2.0]


@pytest.mark.long
def test_wide_and_deep_together():
    """1,000 chains of 50 ops, all summed: 50,000 nodes reached through one root."""
    x = sg.tensor(np.linspace(0.1, 1.0, 1000), dtype=sg.float64, requires_grad=True)
    parts = list(x.unbind())
    for _ in range(50):
        parts = [p * 1.01 for p in parts]
    sg.stack(parts).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(1000, 1.01**50), rtol=1e-12)


# ---- memory over a long training loop ------------------------------------------------------


def _model():
    sg.manual_seed(0)
    w1 = sg.nn.Parameter(sg.randn(16, 8) * 0.3)
    b1 = sg.nn.Parameter(sg.zeros(16))
    w2 = sg.nn.Parameter(sg.randn(4, 16) * 0.3)
    x = sg.randn(32, 8)
    y = sg.randint(0, 4, (32,))
    return [w1, b1, w2], x, y


def _loss(params, x, y):
    w1, b1, w2 = params
    h = F.linear(x, w1, b1).relu()
    logits = F.linear(h, w2)
    return F.cross_entropy(logits, y) + 1e-3 * sum((p * p).sum() for p in params)


def _growth(step, steps, warmup=100):
    """(bytes still allocated, Python objects still tracked) after `steps` more steps.

    The byte count includes what CPython's and numpy's free lists keep (freed tuples and
    dimension arrays, a bounded amount), so it is compared with a generous bound; the
    count of objects tracked by the GC (tensors, nodes, dicts, ...) must not grow at all.
    """
    for _ in range(warmup):
        step(None)
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(steps):
            step(i)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return grown, len(gc.get_objects()) - objects


@pytest.mark.long
def test_training_loop_does_not_grow(no_cycle_collector):
    params, x, y = _model()
    opt = sg.optim.Adam(params, lr=1e-2)
    watched = []  # weak references to a few steps' loss, its node and a saved activation

    def step(i):
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        opt.step()
        if i is not None and i % 100 == 0:
            watched.append((weakref.ref(loss), weakref.ref(loss.grad_fn)))
        return loss.item()

    first = step(None)
    grown, objects = _growth(step, 1000)
    # one leaked activation (32 x 16 floats) per step alone would be 2 MB
    assert grown < 256 * 1024, f"{grown} bytes kept over 1,000 steps"
    assert objects <= len(watched) * 2 + 10, f"{objects} more objects after 1,000 steps"
    assert all(r() is None for pair in watched for r in pair)
    assert gc.collect() == 0  # no reference cycles were left for the collector
    assert _loss(params, x, y).item() < first * 0.5  # and it did train


@pytest.mark.long
def test_double_backward_loop_does_not_grow(no_cycle_collector):
    """A gradient penalty (autograd.grad with create_graph) every step: nothing is kept."""
    params, x, y = _model()
    opt = sg.optim.SGD(params, lr=1e-2, momentum=0.9)

    def step(i):
        opt.zero_grad()
        loss = _loss(params, x, y)
        grads = sg.autograd.grad(loss, params, create_graph=True)
        penalty = sum((g * g).sum() for g in grads)
        (loss + 0.1 * penalty).backward()
        opt.step()

    grown, objects = _growth(step, 200, warmup=30)
    assert grown < 256 * 1024, f"{grown} bytes kept over 200 steps"
    assert objects <= 10, f"{objects} more objects after 200 steps"
    assert gc.collect() == 0
    assert all(p.grad is not None and p.grad.grad_fn is None for p in params)


def test_saved_tensors_are_released_by_backward(no_cycle_collector):
    x = sg.randn(50, 50, requires_grad=True)
    h = x.exp()
    loss = (h.sin() * h).sum()
    node = loss.grad_fn.next_functions[0][0]  # MulBackward0: saves h.sin() and h
    saved = weakref.ref(node._saved_self)
    del h
    loss.backward()
    assert saved() is None  # freed as soon as its node ran
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


# ---- threads -------------------------------------------------------------------------------


def _in_threads(target, n):
    errors = []

    def run(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]


def test_grad_mode_is_thread_local():
    n = 8
    barrier = threading.Barrier(n)
    x = sg.ones(2, requires_grad=True)
    seen = {}

    def worker(i):
        kind = ("no_grad", "enable", "inference", "set_false")[i % 4]
        barrier.wait()
        if kind == "no_grad":
            ctx = sg.no_grad()
        elif kind == "inference":
            ctx = sg.inference_mode()
        elif kind == "set_false":
            sg.set_grad_enabled(False)  # a plain call: this thread only, for good
            ctx = None
        else:
            ctx = sg.enable_grad()
        if ctx is not None:
            ctx.__enter__()
        barrier.wait()  # every thread is inside its mode now
        for _ in range(200):
            y = x * 2
            state = (
                sg.is_grad_enabled(),
                sg.is_inference_mode_enabled(),
                y.requires_grad,
                y.is_inference(),
            )
            assert seen.setdefault(i, state) == state
        barrier.wait()
        if ctx is not None:
            ctx.__exit__(None, None, None)

    _in_threads(worker, n)
    expected = {
        "no_grad": (False, False, False, False),
        "enable": (True, False, True, False),
        "inference": (False, True, False, True),
        "set_false": (False, False, False, False),
    }
    for i, state in seen.items():
        assert state == expected[("no_grad", "enable", "inference", "set_false")[i % 4]]
    # and the main thread was never touched
    assert sg.is_grad_enabled() and not sg.is_inference_mode_enabled()


def test_new_threads_start_with_grad_enabled():
    seen = []
    with sg.no_grad(), sg.inference_mode():
        _in_threads(
            lambda i: seen.append((sg.is_grad_enabled(), sg.is_inference_mode_enabled())), 3
        )
    assert seen == [(True, False)] * 3


def test_decorated_function_in_threads():
    x = sg.ones(2, requires_grad=True)
    barrier = threading.Barrier(4)

    @sg.no_grad()
    def inside():
        barrier.wait()
        return (x * 2).requires_grad, sg.is_grad_enabled()

    results = []

    def worker(i):
        if i % 2:
            results.append(("decorated", inside()))
        else:
            barrier.wait()
            results.append(("plain", ((x * 2).requires_grad, sg.is_grad_enabled())))

    _in_threads(worker, 4)
    for kind, r in results:
        assert r == ((False, False) if kind == "decorated" else (True, True))


@pytest.mark.long
def test_training_in_threads_matches_serial():
    def train(seed):
        with lock:  # the generator is shared: draw under a lock
            sg.manual_seed(seed)
            w = sg.nn.Parameter(sg.randn(3, 4))
            x = sg.randn(16, 4)
            y = sg.randint(0, 3, (16,))
        opt = sg.optim.SGD([w], lr=0.1)
        for _ in range(50):
            opt.zero_grad()
            loss = F.cross_entropy(x @ w.t(), y)
            (g,) = sg.autograd.grad(loss, w, create_graph=True)
            (loss + (g * g).sum()).backward()
            opt.step()
        return w.detach().numpy().copy()

    lock = threading.Lock()
    serial = [train(s) for s in range(6)]
    results = {}
    _in_threads(lambda i: results.__setitem__(i, train(i)), 6)
    for i in range(6):
        np.testing.assert_array_equal(results[i], serial[i])


# ---- bad input, in torch's words -----------------------------------------------------------


def _error(T, call):
    try:
        call(T)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).split("\n")[0]
    return None


def _int_requires_grad_attr(T):
    t = T.tensor([1, 2])
    t.requires_grad = True


BAD_INPUT = {
    "backward(gradient) of the wrong shape": (
        lambda T: (T.ones(3, requires_grad=True) * 2).backward(T.ones(2)),
        (
            "RuntimeError",
            (
                "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and "
                "output[0] has a shape of torch.Size([3])."
            ),
        ),
    ),
    "grad_outputs of the wrong shape": (
        lambda T: [
            T.autograd.grad(x * 2, x, T.ones(2, 1)) for x in [T.ones(2, 2, requires_grad=True)]
        ],
        (
            "RuntimeError",
            (
                "Mismatch in shape: grad_output[0] has a shape of torch.Size([2, 1]) "
                "and output[0] has a shape of torch.Size([2, 2])."
            ),
        ),
    ),
    "backward of a non-scalar without gradient": (
        lambda T: (T.ones(3, requires_grad=True) * 2).backward(),
        ("RuntimeError", "grad can be implicitly created only for scalar outputs"),
    ),
    "gradient that is not a tensor": (
        lambda T: (T.ones(3, requires_grad=True) * 2).backward([1.0, 2.0, 3.0]),
        ("TypeError", "gradients can be either Tensors or None, but got float"),
    ),
    "backward of a tensor without grad": (
        lambda T: T.ones(2).sum().backward(),
        (
            "RuntimeError",
            ("element 0 of tensors does not require grad and does not have a grad_fn"),
        ),
    ),
    "grad with respect to a number": (
        lambda T: T.autograd.grad((T.ones(2, requires_grad=True) * 2).sum(), [3.0]),
        ("RuntimeError", "all inputs have to be Tensors or GradientEdges, but got float"),
    ),
    "a number for a tensor argument": (
        lambda T: T.exp(3.0),
        ("TypeError", "exp(): argument 'input' (position 1) must be Tensor, not float"),
    ),
    "a list for a tensor argument": (
        lambda T: T.sigmoid([1.0, 2.0]),
        ("TypeError", "sigmoid(): argument 'input' (position 1) must be Tensor, not list"),
    ),
    "a list to sum": (
        lambda T: T.sum([1.0, 2.0]),
        ("TypeError", "sum(): argument 'input' (position 1) must be Tensor, not list"),
    ),
    "a number in cat": (
        lambda T: T.cat([T.ones(2), 1.0]),
        ("TypeError", "expected Tensor as element 1 in argument 0, but got float"),
    ),
    "a list in stack": (
        lambda T: T.stack([T.ones(2), [1.0, 2.0]]),
        ("TypeError", "expected Tensor as element 1 in argument 0, but got list"),
    ),
    "an unsupported operand": (
        lambda T: T.ones(2) + "a",
        ("TypeError", "unsupported operand type(s) for +: 'Tensor' and 'str'"),
    ),
    "requires_grad=True on an integer tensor": (
        lambda T: T.tensor([1, 2], requires_grad=True),
        (
            "RuntimeError",
            ("Only Tensors of floating point and complex dtype can require gradients"),
        ),
    ),
    "a factory's requires_grad on integers": (
        lambda T: T.zeros(2, dtype=T.int64, requires_grad=True),
        (
            "RuntimeError",
            ("Only Tensors of floating point and complex dtype can require gradients"),
        ),
    ),
    "requires_grad_() on an integer tensor": (
        lambda T: T.arange(3).requires_grad_(),
        ("RuntimeError", "only Tensors of floating point dtype can require gradients"),
    ),
    "setting .requires_grad on an integer tensor": (
        _int_requires_grad_attr,
        (
            "RuntimeError",
            ("only Tensors of floating point and complex dtype can require gradients"),
        ),
    ),
    "a Parameter of integers": (
        lambda T: T.nn.Parameter(T.tensor([1, 2])),
        (
            "RuntimeError",
            ("Only Tensors of floating point and complex dtype can require gradients"),
        ),
    ),
    "shapes that do not broadcast": (
        lambda T: T.ones(2, 3) + T.ones(2),
        (
            "RuntimeError",
            (
                "The size of tensor a (3) must match the size of tensor b (2) at "
                "non-singleton dimension 1"
            ),
        ),
    ),
    "shapes that do not broadcast, in place": (
        lambda T: T.ones(4, 1) * T.ones(3, 5),
        (
            "RuntimeError",
            (
                "The size of tensor a (4) must match the size of tensor b (3) at "
                "non-singleton dimension 0"
            ),
        ),
    ),
    "matrices that do not multiply": (
        lambda T: T.ones(2, 3) @ T.ones(2, 3),
        ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ),
    "mm that does not multiply": (
        lambda T: T.mm(T.ones(4, 2), T.ones(3, 1)),
        ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (4x2 and 3x1)"),
    ),
    "a vector that does not multiply": (
        lambda T: T.ones(2) @ T.ones(3, 4),
        ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (1x2 and 3x4)"),
    ),
    "a view of the wrong size": (
        lambda T: T.ones(3).view(2, 2),
        ("RuntimeError", "shape '[2, 2]' is invalid for input of size 3"),
    ),
    "in place on a leaf that requires grad": (
        lambda T: T.ones(2, requires_grad=True).add_(1),
        (
            "RuntimeError",
            ("a leaf Variable that requires grad is being used in an in-place operation."),
        ),
    ),
    "backward twice": (
        lambda T: [
            (y.backward(), y.backward()) for y in [T.ones(2, requires_grad=True).exp().sum()]
        ],
        (
            "RuntimeError",
            (
                "Trying to backward through the graph a second time (or directly "
                "access saved tensors after they have already been freed). Saved "
                "intermediate values of the graph are freed when you call .backward() "
                "or autograd.grad(). Specify retain_graph=True if you need to backward "
                "through the graph a second time or if you need to access saved "
                "tensors after calling backward."
            ),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUT))
def test_bad_input_raises_torchs_error(name):
    call, expected = BAD_INPUT[name]
    assert _error(sg, call) == expected
    if torch is not None:
        assert _error(torch, call) == expected


def _cuda_available():
    from sourcegrad.eager import devices

    return getattr(devices, "is_available", lambda: False)()


def test_devices_without_cuda():
    """With no CUDA device, asking for one says so (a RuntimeError naming CUDA)."""
    if _cuda_available():
        pytest.skip("a CUDA device is available")
    x = sg.ones(2)
    assert x.device == sg.device("cpu") and x.device.type == "cpu"
    with pytest.raises(RuntimeError, match="CUDA"):
        x.cuda()
    with pytest.raises(RuntimeError):
        sg.ones(2, device="tpu")


def test_mixing_devices():
    """A CPU tensor with a CUDA tensor: torch's 'same device' error (needs a CUDA device)."""
    if not _cuda_available():
        pytest.skip("no CUDA device")
    a = sg.ones(2, 2)
    b = a.cuda()
    for call in (lambda: a + b, lambda: b * a, lambda: a @ b, lambda: sg.cat([a, b])):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            call()
    # a 0-d CPU tensor takes part like a number, as in torch
    assert (b * sg.tensor(2.0)).device == b.device
