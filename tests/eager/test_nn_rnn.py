"""nn.RNN / LSTM / GRU and their cells against torch.nn (float64).

torch's weights are copied in through state_dict; outputs, final states and the
gradients wrt the input, the initial states and every parameter must agree to
~1e-10. Also: parameter names and order, reprs, init bounds, errors.
"""

import itertools
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(3)


def copy_weights(src, dst):
    dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )


def run(lib, module, x, state):
    """Outputs and gradients (input, initial states, parameters) of one forward."""
    xt = lib.tensor(x, requires_grad=True)
    states = None if state is None else [lib.tensor(s, requires_grad=True) for s in state]
    args = [xt]
    if states is not None:
        args.append(tuple(states) if len(states) == 2 else states[0])
    out, hidden = module(*args)
    outs = [out] + (list(hidden) if isinstance(hidden, tuple) else [hidden])
    total = sum(
        (o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum() for o in outs
    )
    total.backward()
    grads = [xt.grad] + [s.grad for s in states or []] + [p.grad for p in module.parameters()]
    return [o.detach().numpy() for o in outs], [g.numpy() for g in grads]


def compare(make, x, state=None, train=False):
    mt, ms = make(torch).double(), make(sg).double()
    assert repr(ms) == repr(mt)
    assert [n for n, _ in ms.named_parameters()] == [n for n, _ in mt.named_parameters()]
    copy_weights(mt, ms)
    mt.train(train)
    ms.train(train)
    (ot, gt), (os_, gs) = run(torch, mt, x, state), run(sg, ms, x, state)
    for a, b in zip(os_ + gs, ot + gt):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


GRID = list(itertools.product(["RNN", "LSTM", "GRU"], [1, 2], [False, True], [False, True]))


@pytest.mark.parametrize(
    "cls,layers,bidirectional,batch_first",
    GRID,
    ids=[f"{c}-{n}-bi{b}-bf{f}" for c, n, b, f in GRID],
)
def test_recurrent_layers_match_torch(cls, layers, bidirectional, batch_first):
    kw = {"num_layers": layers, "bidirectional": bidirectional, "batch_first": batch_first}
    d = 2 if bidirectional else 1
    x = R.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    h = R.standard_normal((layers * d, 2, 4))
    state = (h, R.standard_normal((layers * d, 2, 4))) if cls == "LSTM" else (h,)
    compare(lambda lib: getattr(lib.nn, cls)(3, 4, **kw), x, state)
    compare(lambda lib: getattr(lib.nn, cls)(3, 4, **kw), x)  # zero initial state


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_unbatched_and_without_bias(cls):
    kw = {"bias": False, "num_layers": 2, "bidirectional": True}
    x = R.standard_normal((5, 3))
    h = R.standard_normal((4, 4))
    state = (h, R.standard_normal((4, 4))) if cls == "LSTM" else (h,)
    compare(lambda lib: getattr(lib.nn, cls)(3, 4, **kw), x, state)
    compare(lambda lib: getattr(lib.nn, cls)(3, 4, batch_first=True), x)


def test_relu_rnn_and_lstm_projections():
    x = R.standard_normal((4, 2, 3))
    compare(lambda lib: lib.nn.RNN(3, 4, 2, nonlinearity="relu"), x)
    compare(lambda lib: lib.nn.RNN(3, 4, 1, "relu", True, True), x.transpose(1, 0, 2))
    state = (R.standard_normal((4, 2, 2)), R.standard_normal((4, 2, 4)))
    compare(lambda lib: lib.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2), x, state)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers(cls):
    x = R.standard_normal((4, 2, 3))
    # p = 1 zeroes the first layer's output, deterministically: the second layer sees zeros
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(lambda lib: getattr(lib.nn, cls)(3, 4, num_layers=2, dropout=1.0), x, train=True)
        # eval mode ignores dropout
        compare(lambda lib: getattr(lib.nn, cls)(3, 4, num_layers=2, dropout=0.5), x)
    m = getattr(sg.nn, cls)(3, 4, num_layers=2, dropout=0.5).double()
    out_train = m(sg.tensor(x))[0]
    out_eval = m.eval()(sg.tensor(x))[0]
    assert not np.allclose(out_train.detach().numpy(), out_eval.detach().numpy())


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize("cls,kw", CELLS, ids=[f"{c}-{k}" for c, k in CELLS])
def test_cells_match_torch(cls, kw):
    def make(lib):
        return getattr(lib.nn, cls)(3, 4, **kw).double()

    for batch in ((2,), ()):
        x = R.standard_normal(batch + (3,))
        h = R.standard_normal(batch + (4,))
        state = (h, R.standard_normal(batch + (4,))) if cls == "LSTMCell" else (h,)
        for st in (state, None):
            mt, ms = make(torch), make(sg)
            assert repr(ms) == repr(mt)
            copy_weights(mt, ms)
            res = []
            for lib, m in ((torch, mt), (sg, ms)):
                xt = lib.tensor(x, requires_grad=True)
                sts = [lib.tensor(s, requires_grad=True) for s in st] if st else []
                arg = () if st is None else ((tuple(sts),) if len(sts) == 2 else (sts[0],))
                out = m(xt, *arg)
                outs = list(out) if isinstance(out, tuple) else [out]
                sum((o * (i + 1.5)).sum() for i, o in enumerate(outs)).backward()
                res.append(
                    [o.detach().numpy() for o in outs]
                    + [xt.grad.numpy()]
                    + [s.grad.numpy() for s in sts]
                    + [p.grad.numpy() for p in m.parameters()]
                )
            for a, b in zip(res[1], res[0]):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_parameter_names_shapes_and_init():
    for lib in (torch, sg):
        lib.manual_seed(0)
    mt = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    ms = sg.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    assert list(ms.state_dict()) == list(mt.state_dict())
    for (name, a), b in zip(mt.named_parameters(), ms.parameters()):
        assert tuple(b.shape) == tuple(a.shape), name
        assert np.abs(b.detach().numpy()).max() <= 1 / np.sqrt(5)
        assert b.dtype == sg.float32
    assert [[tuple(w.shape) for w in ws] for ws in ms.all_weights] == [
        [tuple(w.shape) for w in ws] for ws in mt.all_weights
    ]
    assert ms._flat_weights_names == mt._flat_weights_names
    values = np.concatenate([p.detach().numpy().ravel() for p in ms.parameters()])
    assert values.std() > 0.5 / np.sqrt(5)  # uniform on +-1/sqrt(5): std 0.258, not constant


ERRORS = [
    (lambda L: L.nn.RNN(3, 4, dropout=1.5), ValueError, "dropout should be a number in range"),
    (lambda L: L.nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported"),
    (lambda L: L.nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller"),
    (lambda L: L.nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity"),
    (lambda L: L.nn.RNN(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda L: L.nn.LSTM(3, 4, bias=1), TypeError, "bias should be of type bool"),
    (
        lambda L: L.nn.RNN(3, 4)(L.zeros(5)),
        ValueError,
        "RNN: Expected input to be 2D or 3D, got 1D tensor instead",
    ),
    (
        lambda L: L.nn.GRU(3, 4)(L.zeros(2, 5, 2)),
        RuntimeError,
        "input.size\\(-1\\) must be equal to input_size. Expected 3, got 2",
    ),
    (
        lambda L: L.nn.GRU(3, 4)(L.zeros(5, 2, 3), L.zeros(1, 3, 4)),
        RuntimeError,
        r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]",
    ),
    (
        lambda L: L.nn.RNN(3, 4)(L.zeros(5, 3), L.zeros(1, 1, 4)),
        RuntimeError,
        "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor",
    ),
    (
        lambda L: L.nn.LSTM(3, 4)(L.zeros(5, 2, 3), (L.zeros(1, 2, 4), L.zeros(1, 2, 5))),
        RuntimeError,
        r"Expected hidden\[1\] size \(1, 2, 4\), got \[1, 2, 5\]",
    ),
    (
        lambda L: L.nn.LSTM(3, 4)(L.zeros(5, 2, 3), (L.zeros(2, 4), L.zeros(2, 4))),
        RuntimeError,
        "For batched 3-D input, hx and cx should also be 3-D",
    ),
    (lambda L: L.nn.LSTM(3, 4)(L.zeros(5, 2, 3, dtype=L.float64)), ValueError, "RNN input dtype"),
    (
        lambda L: L.nn.GRUCell(3, 4)(L.zeros(2, 2, 3)),
        ValueError,
        "GRUCell: Expected input to be 1D or 2D, got 3D instead",
    ),
    (
        lambda L: L.nn.LSTMCell(3, 4)(L.zeros(2, 3), (L.zeros(2, 4), L.zeros(1, 2, 4))),
        ValueError,
        r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead",
    ),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    fn, kind, message = ERRORS[i]
    for lib in (torch, sg):
        with pytest.raises(kind, match=message):
            fn(lib)


def test_dropout_with_one_layer_warns():
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            lib.nn.LSTM(3, 4, dropout=0.2)


def test_char_lstm_training_steps_match_torch():
    """Embedding -> 2-layer LSTM -> Linear -> CrossEntropyLoss, three Adam steps, as in torch."""

    def make(lib):
        class CharLSTM(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(7, 4)
                self.lstm = lib.nn.LSTM(4, 5, num_layers=2, batch_first=True)
                self.head = lib.nn.Linear(5, 7)

            def forward(self, x, state=None):
                out, state = self.lstm(self.embed(x), state)
                return self.head(out), state

        return CharLSTM().double()

    mt, ms = make(torch), make(sg)
    copy_weights(mt, ms)
    tokens = R.integers(0, 7, (3, 6))
    losses = []
    for lib, model in ((torch, mt), (sg, ms)):
        opt = lib.optim.Adam(model.parameters(), lr=0.05)
        loss_fn = lib.nn.CrossEntropyLoss()
        x, y = lib.tensor(tokens[:, :-1]), lib.tensor(tokens[:, 1:])
        run_losses = []
        for _ in range(3):
            opt.zero_grad()
            logits, (h, c) = model(x)
            loss = loss_fn(logits.reshape(-1, 7), y.reshape(-1))
            loss.backward()
            opt.step()
            run_losses.append(loss.item())
        losses.append(run_losses)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-10)


@pytest.mark.parametrize(
    "batch_first, layers, bidirectional, steps",
    [(True, 1, False, 5), (False, 2, True, 4), (True, 2, True, 1), (False, 1, True, 3)],
)
def test_float32_lstm_is_one_node_per_layer_as_torchs(batch_first, layers, bidirectional, steps):
    """A float32 LSTM layer is one op with its backward through time (torch's
    MkldnnRnnLayerBackward0): values and every gradient as torch's to 1e-6, the same graph."""
    torch = pytest.importorskip("torch")
    import sourcegrad as sg

    torch.manual_seed(0)
    kw = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    tl, sl = torch.nn.LSTM(3, 4, **kw), sg.nn.LSTM(3, 4, **kw)
    sl.load_state_dict({k: sg.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    rng = np.random.default_rng(1)
    shape = (2, steps, 3) if batch_first else (steps, 2, 3)
    d = 2 if bidirectional else 1
    x, h0, c0 = (
        rng.normal(size=s).astype(np.float32)
        for s in (shape, (layers * d, 2, 4), (layers * d, 2, 4))
    )
    res, names = [], []
    for lib, layer in ((torch, tl), (sg, sl)):
        xt, ht, ct = (lib.tensor(a, requires_grad=True) for a in (x, h0, c0))
        o, (h, c) = layer(xt, (ht, ct))
        (o.sin().sum() + (h * h).sum() + c.cos().sum()).backward()
        res.append(
            [t.detach().numpy() for t in (o, h, c, xt.grad, ht.grad, ct.grad)]
            + [p.grad.numpy() for p in layer.parameters()]
        )
        names.append(
            [type(o.grad_fn).__name__]
            + [type(n).__name__ for n, _ in o.grad_fn.next_functions if n is not None]
        )
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    assert names[0] == names[1]


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_layer_rule_against_finite_differences(reverse):
    """The registry's lstm_layer: its VJPs (backpropagation through time) against central
    differences of its forward, in float64."""
    from sourcegrad.ops import RULES

    rule = RULES["lstm_layer"]
    rng = np.random.default_rng(3)
    shapes = [(3, 2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,), (16,)]
    args = [rng.normal(size=s) for s in shapes]
    cot = [rng.normal(size=(3, 2, 4)), rng.normal(size=(2, 4)), rng.normal(size=(2, 4))]

    def loss(*a):
        return sum(np.sum(c * o) for c, o in zip(cot, rule.forward(*a, reverse=reverse)))

    ans = rule.forward(*args, reverse=reverse)
    for k in range(7):
        ours = rule.vjp_for(k)(list(cot), ans, *args, reverse=reverse)
        numeric = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            moved = [a.copy() for a in args]
            moved[k][idx] += 1e-6
            plus = loss(*moved)
            moved[k][idx] -= 2e-6
            numeric[idx] = (plus - loss(*moved)) / 2e-6
        np.testing.assert_allclose(ours, numeric, rtol=1e-5, atol=1e-7, err_msg=f"input {k}")
