"""sourcegrad.compile of nn.RNN / nn.LSTM / nn.GRU and of BatchNorm in training mode,
against torch 2.13: outputs, h_n (and c_n), the gradients with respect to the input, the
initial state and every parameter; BatchNorm's running statistics after several training
steps, then in eval mode. Each compiled call is one node (no graph break)."""

import warnings

import numpy as np
import pytest

import sourcegrad
import sourcegrad as torch
import sourcegrad.nn as nn

real = pytest.importorskip("torch")


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _run(T, module, inputs, weights):
    """module(*inputs) and the gradients of sum(output_i * weights_i) with respect to the
    inputs that require grad and to every parameter."""
    out = module(*inputs)
    leaves = _leaves(out)
    loss = sum((o * T.tensor(w)).sum() for o, w in zip(leaves, weights))
    loss.backward()
    given = [a for a in _leaves(tuple(inputs)) if a.requires_grad]
    return (
        [o.detach().numpy() for o in leaves],
        [a.grad.numpy() for a in given] + [p.grad.numpy() for p in module.parameters()],
        leaves,
    )


def _twin(model, cls_name, kwargs):
    twin = getattr(real.nn, cls_name)(**kwargs)
    twin.load_state_dict({k: real.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return twin


CASES = {
    "lstm 2 layers, bidirectional, batch_first, (h_0, c_0)": (
        "LSTM",
        dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True),
        (2, 5, 3),
        True,
    ),
    "lstm proj_size, unbatched": (
        "LSTM",
        dict(input_size=3, hidden_size=5, proj_size=2),
        (4, 3),
        False,
    ),
    "gru 2 layers, bidirectional": (
        "GRU",
        dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True),
        (5, 2, 3),
        False,
    ),
    "gru unbatched, h_0": ("GRU", dict(input_size=3, hidden_size=4), (4, 3), True),
    "rnn relu, no bias, batch_first, h_0": (
        "RNN",
        dict(input_size=3, hidden_size=4, nonlinearity="relu", bias=False, batch_first=True),
        (2, 5, 3),
        True,
    ),
    "rnn tanh 3 layers": ("RNN", dict(input_size=3, hidden_size=4, num_layers=3), (5, 2, 3), False),
}


def _initial_state(cls_name, kwargs, shape, rng):
    directions = 2 if kwargs.get("bidirectional") else 1
    states = kwargs.get("num_layers", 1) * directions
    batch = () if len(shape) == 2 else (shape[0] if kwargs.get("batch_first") else shape[1],)
    hidden = kwargs["hidden_size"]
    h = rng.normal(size=(states,) + batch + (kwargs.get("proj_size") or hidden,))
    if cls_name != "LSTM":
        return h.astype(np.float32)
    return (h.astype(np.float32), rng.normal(size=(states,) + batch + (hidden,)).astype(np.float32))


@pytest.mark.parametrize("case", list(CASES))
def test_a_compiled_recurrent_layer_is_torchs(case):
    cls_name, kwargs, shape, with_state = CASES[case]
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    model = getattr(nn, cls_name)(**kwargs)
    twin = _twin(model, cls_name, kwargs)
    compiled = sourcegrad.compile(model)
    x = rng.normal(size=shape).astype(np.float32)
    state = _initial_state(cls_name, kwargs, shape, rng) if with_state else None

    def inputs(T):
        args = [T.tensor(x, requires_grad=True)]
        if state is not None:
            args.append(
                tuple(T.tensor(s, requires_grad=True) for s in state)
                if isinstance(state, tuple)
                else T.tensor(state, requires_grad=True)
            )
        return args

    expected, _, _ = _run(real, twin, inputs(real), [np.ones(1)] * 3)
    weights = [rng.normal(size=e.shape).astype(np.float32) for e in expected]
    twin.zero_grad()
    expected, expected_grads, _ = _run(real, twin, inputs(real), weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        got, got_grads, outputs = _run(torch, compiled, inputs(torch), weights)
    assert {type(o.grad_fn).__name__ for o in outputs} == {f"Compiled{cls_name}Forward0Backward"}
    assert len(got) == len(expected) and len(got_grads) == len(expected_grads)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_grads, expected_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lstm_dropout_between_layers_draws_eagers_masks_and_eval_is_torchs():
    torch.manual_seed(0)
    model = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    compiled = sourcegrad.compile(model)
    x = torch.randn(5, 2, 3)
    torch.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, _ = compiled(x)
    torch.manual_seed(7)
    eager, _ = model(x)
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-5, atol=1e-6)
    model.eval()
    out, (h, c) = compiled(x)
    twin = _twin(model, "LSTM", dict(input_size=3, hidden_size=4, num_layers=2, dropout=0.5))
    twin.eval()
    t_out, (t_h, t_c) = twin(real.tensor(x.numpy()))
    for a, b in ((out, t_out), (h, t_h), (c, t_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_wrong_input_size_runs_eagerly_and_raises_torchs_error():
    model = nn.GRU(3, 4)
    compiled = sourcegrad.compile(model)
    with (
        pytest.warns(UserWarning, match="input_size"),
        pytest.raises(
            RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"
        ),
    ):
        compiled(torch.randn(5, 2, 2))


# --- BatchNorm in training mode ----------------------------------------------------------------


def _bn_net(T, kind, bn_kwargs):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            if kind == "1d":
                self.body = T.nn.Linear(3, 4)
                self.bn = T.nn.BatchNorm1d(4, **bn_kwargs)
            else:
                self.body = T.nn.Conv2d(2, 3, 3, padding=1)
                self.bn = T.nn.BatchNorm2d(3, **bn_kwargs)
            self.out = T.nn.Linear(4 if kind == "1d" else 3 * 16, 2)

        def forward(self, x):
            y = T.relu(self.bn(self.body(x)))
            return self.out(y.reshape(y.shape[0], -1))

    return Net()


BN_CASES = {
    "1d": ("1d", {}),
    "2d momentum 0.3": ("2d", {"momentum": 0.3}),
    "1d momentum None (cumulative)": ("1d", {"momentum": None}),
    "1d affine=False": ("1d", {"affine": False}),
    "1d no running stats": ("1d", {"track_running_stats": False}),
}


@pytest.mark.parametrize("case", list(BN_CASES))
def test_batchnorm_training_steps_are_torchs(case):
    kind, bn_kwargs = BN_CASES[case]
    torch.manual_seed(0)
    model = _bn_net(torch, kind, bn_kwargs)
    twin = _bn_net(real, kind, bn_kwargs)
    twin.load_state_dict({k: real.tensor(v.numpy()) for k, v in model.state_dict().items()})
    compiled = sourcegrad.compile(model)
    rng = np.random.default_rng(2)
    ours = torch.optim.SGD(compiled.parameters(), lr=0.1)
    theirs = real.optim.SGD(twin.parameters(), lr=0.1)
    shape = (6, 3) if kind == "1d" else (5, 2, 4, 4)
    for _ in range(3):
        x = rng.normal(size=shape).astype(np.float32) * 2 + 1
        outputs = []
        for T, m, opt in ((torch, compiled, ours), (real, twin, theirs)):
            opt.zero_grad()
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no graph break
                out = m(T.tensor(x))
            (out * out).sum().backward()
            opt.step()
            outputs.append(out)
        assert type(outputs[0].grad_fn).__name__ == "CompiledNetForward0Backward"
        np.testing.assert_allclose(
            outputs[0].detach().numpy(), outputs[1].detach().numpy(), rtol=1e-4, atol=1e-5
        )
    # the running statistics, num_batches_tracked and the parameters after the steps
    assert set(model.state_dict()) == set(twin.state_dict())
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(
            value.numpy(), twin.state_dict()[name].numpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )
    # eval mode: the running statistics (or, without them, the batch's)
    compiled.eval()
    twin.eval()
    x = rng.normal(size=shape).astype(np.float32)
    out = compiled(torch.tensor(x))
    assert type(out.grad_fn).__name__ == "CompiledNetForward0Backward"
    np.testing.assert_allclose(
        out.detach().numpy(), twin(real.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5
    )


def test_a_refused_batchnorm_call_runs_eagerly_once_and_updates_once():
    """A 4-d input to BatchNorm1d: the compiled code refuses it before touching the
    statistics; eager raises torch's error and nothing was counted."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.BatchNorm1d(2))
    compiled = sourcegrad.compile(model)
    with (
        pytest.warns(UserWarning, match="graph break"),
        pytest.raises(ValueError, match="expected 2D or 3D input"),
    ):
        compiled(torch.randn(2, 2, 2, 2))
    assert model[0].num_batches_tracked.item() == 0
    np.testing.assert_array_equal(model[0].running_mean.numpy(), [0.0, 0.0])


NET_WITH_STATE = """
import sourcegrad as torch
import sourcegrad.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(3)
        self.gru = nn.GRU(3, 4, batch_first=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.norm(x.transpose(1, 2)).transpose(1, 2)
        out, h = self.gru(x)
        return self.head(out), h
"""


def test_show_prints_the_loop_and_the_statistics_update(tmp_path, capsys):
    from sourcegrad.cli import main

    path = tmp_path / "tagger.py"
    path.write_text(NET_WITH_STATE)
    assert main(["show", f"{path}:Tagger", "--args", "x=float32(2, 5, 3)"]) == 0
    out = capsys.readouterr().out
    assert "def value_and_dTagger_forward_0_outputs_" in out  # (logits, h_n): one node
    assert "sourcegrad.ops.nn_layers.track_running_stats(" in out
    forward, backward = out.split("_backward(", 1)
    assert "track_running_stats" not in backward  # the statistics move in the forward only
    assert "for " in forward and "in reversed(range(" in backward  # the loop over time


class Stateful(nn.Module):
    """A user module passing its state to an LSTM and returning it: three outputs."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x, h, c):
        out, (h, c) = self.lstm(x, (h, c))
        return self.fc(out), h, c


def test_a_state_passed_through_a_user_module_gets_its_gradients():
    torch.manual_seed(0)
    model = Stateful()
    compiled = sourcegrad.compile(model)
    x, h, c = (torch.randn(*s, requires_grad=True) for s in ((5, 2, 3), (1, 2, 4), (1, 2, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs = compiled(x, h, c)
    assert len({o.grad_fn for o in outs}) == 1
    sum((o * (i + 1)).sum() for i, o in enumerate(outs)).backward()
    got = [t.grad.numpy().copy() for t in (x, h, c)] + [p.grad.numpy() for p in model.parameters()]
    twin = real.nn.LSTM(3, 4)
    twin.load_state_dict(
        {
            k[5:]: real.tensor(v.numpy())
            for k, v in model.state_dict().items()
            if k.startswith("lstm.")
        }
    )
    fc = real.nn.Linear(4, 2)
    fc.load_state_dict(
        {
            "weight": real.tensor(model.fc.weight.detach().numpy()),
            "bias": real.tensor(model.fc.bias.detach().numpy()),
        }
    )
    rx, rh, rc = (real.tensor(t.detach().numpy(), requires_grad=True) for t in (x, h, c))
    out, (nh, nc) = twin(rx, (rh, rc))
    (fc(out).sum() + (nh * 2).sum() + (nc * 3).sum()).backward()
    expected = [t.grad.numpy() for t in (rx, rh, rc)]
    expected += [p.grad.numpy() for p in list(twin.parameters()) + list(fc.parameters())]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


class TakesATuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, pair):
        return self.fc(pair[0]) * pair[1]


def test_a_tuple_argument_to_a_user_forward_runs_eagerly_with_its_gradients():
    model = TakesATuple()
    compiled = sourcegrad.compile(model)
    a, b = torch.randn(2, 3), torch.randn(2, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="a tuple or list argument"):
        compiled((a, b)).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), model.fc(a).detach().numpy(), rtol=1e-6)
