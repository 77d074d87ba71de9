"""Training loops in the styles people publish, each run under torch and under sourcegrad
(`lib` is one or the other) from the same weights and batches, compared value for value.

Each program returns what a user would look at (losses, learning rates, gradient norms,
gradients a hook saw, parameters and buffers after the steps, the keys and errors of
`load_state_dict`); the two runs must agree to ~1e-9 in float64. The programs: a
CIFAR-style CNN (BatchNorm2d, MaxPool2d, Dropout, a step-counting buffer) trained with
weight-decay groups from `named_parameters`, Nesterov SGD, clipping and each scheduler; a
language model whose output layer shares the embedding's Parameter, with state_dict round
trips (strict=False, missing and unexpected keys, size mismatch); a fine-tuning loop with
a frozen first layer, module and tensor hooks, gradient accumulation, `retain_graph`,
`no_grad` / `inference_mode`, and a parameter group added when the layer is unfrozen.
"""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(2026)


def as_numpy(value):
    """Tensors (and nests of them) as numpy arrays, for comparison."""
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    if hasattr(value, "detach"):
        return value.detach().numpy().copy()
    return value


def assert_same(expected, got, path="result"):
    if isinstance(expected, dict):
        assert sorted(expected) == sorted(got), path
        for k in expected:
            assert_same(expected[k], got[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert len(expected) == len(got), path
        for i, (a, b) in enumerate(zip(expected, got)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(expected, (str, bool, type(None))):
        assert expected == got, path
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11, err_msg=path)


def run_both(program, *args):
    """The program's results under torch and under sourcegrad, the second model starting
    from the first's weights (copied through state_dict)."""
    weights = {}

    def start(lib, model):
        model = model.double()
        if not weights:
            weights.update({k: v.detach().numpy().copy() for k, v in model.state_dict().items()})
        else:
            model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        return model

    expected = as_numpy(program(torch, start, *args))
    got = as_numpy(program(sg, start, *args))
    assert_same(expected, got)


# --- a CIFAR-style CNN ------------------------------------------------------------------------

IMAGES = R.standard_normal((5, 6, 3, 8, 8))
LABELS = R.integers(0, 10, (5, 6))


def cnn(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1, bias=False),
                nn.BatchNorm2d(4),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
                nn.Conv2d(4, 8, 3, padding=1),
                nn.BatchNorm2d(8, momentum=None),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2, 2),
                nn.Dropout(0.0),
            )
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(8 * 2 * 2, 16), nn.ReLU(), nn.Linear(16, 10)
            )
            self.register_buffer("steps", lib.zeros((), dtype=lib.long))

        def forward(self, x):
            self.steps += 1
            return self.classifier(self.features(x))

    return Net()


def scheduler(lib, opt, kind):
    schedulers = lib.optim.lr_scheduler
    if kind == "step":
        return schedulers.StepLR(opt, step_size=2, gamma=0.5)
    if kind == "cosine":
        return schedulers.CosineAnnealingLR(opt, T_max=3, eta_min=1e-3)
    if kind == "onecycle":
        return schedulers.OneCycleLR(opt, max_lr=0.2, total_steps=5)
    return schedulers.ReduceLROnPlateau(opt, patience=0, factor=0.5)


def cnn_program(lib, start, kind, clip):
    model = start(lib, cnn(lib))
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or name.endswith(".bias") else decay).append(p)
    opt = lib.optim.SGD(
        [{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
        lr=0.1,
        momentum=0.9,
        nesterov=True,
    )
    sched = scheduler(lib, opt, kind)
    criterion = lib.nn.CrossEntropyLoss(label_smoothing=0.1)
    out = {"loss": [], "lr": [], "norm": []}
    for images, labels in zip(IMAGES, LABELS):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(lib.tensor(images)), lib.tensor(labels))
        loss.backward()
        if clip == "value":
            lib.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.01)
        else:
            norm_type = float("inf") if clip == "inf" else 2.0
            out["norm"].append(lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type))
        opt.step()
        sched.step(loss.item()) if kind == "plateau" else sched.step()
        out["loss"].append(loss.item())
        out["lr"].append([g["lr"] for g in opt.param_groups])
    model.eval()
    with lib.no_grad():
        out["eval"] = model(lib.tensor(IMAGES[0]))
    out["state"] = dict(model.state_dict())
    return out


@pytest.mark.parametrize(
    "kind, clip",
    [("step", "norm"), ("cosine", "value"), ("onecycle", "inf"), ("plateau", "norm")],
)
def test_cnn_with_batchnorm_schedulers_and_clipping(kind, clip):
    run_both(cnn_program, kind, clip)


# --- weight tying and state_dict round trips --------------------------------------------------

TOKENS = R.integers(0, 30, (3, 4, 6))


def tied_lm(lib):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 8, padding_idx=0)
            self.ln = nn.LayerNorm(8)
            self.head = nn.Linear(8, 30, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("pos", lib.arange(6).double() / 6, persistent=False)
            self.register_buffer("scale", lib.ones(8, dtype=lib.float64))

        def forward(self, t):
            h = self.emb(t) + self.pos[None, : t.shape[1], None]
            return self.head(self.ln(lib.tanh(h) * self.scale))

    return LM()


def tied_lm_program(lib, start):
    model = start(lib, tied_lm(lib))
    out = {
        "keys": " ".join(model.state_dict()),
        "named": " ".join(n for n, _ in model.named_parameters()),
        "tied": model.head.weight is model.emb.weight,
    }
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    out["loss"] = []
    for tokens in TOKENS:
        t = lib.tensor(tokens)
        logits = model(t)
        loss = lib.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, 30), t[:, 1:].reshape(-1), ignore_index=0
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        out["loss"].append(loss.item())
    state = model.state_dict()
    partial = {k: v for k, v in state.items() if k != "scale"}
    partial["extra.w"] = lib.zeros(3)
    other = tied_lm(lib).double()
    result = other.load_state_dict(partial, strict=False)
    out["missing"], out["unexpected"] = result.missing_keys, result.unexpected_keys
    out["loaded"] = other.head.weight
    out["still_tied"] = other.head.weight is other.emb.weight
    for bad in (partial, {**state, "ln.weight": lib.zeros(3)}):
        with pytest.raises(RuntimeError) as error:
            other.load_state_dict(bad)
        out.setdefault("errors", []).append(str(error.value))
    return out


def test_tied_embedding_and_state_dict_round_trips():
    run_both(tied_lm_program)


# --- fine-tuning: freezing, hooks, accumulation ----------------------------------------------

INPUTS = R.standard_normal((6, 4, 5))
TARGETS = R.standard_normal((6, 4, 3))


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(5, 6), nn.GELU(), nn.Linear(6, 6), nn.SiLU(), nn.LayerNorm(6), nn.Linear(6, 3)
    )


def fine_tune_program(lib, start):
    model = start(lib, mlp(lib))
    out = {"forward": [], "grad_input": [], "grad_output": [], "tensor_hook": []}

    def backward_hook(module, grad_input, grad_output):
        out["grad_input"].append(grad_input[0].clone())
        out["grad_output"].append(grad_output[0].clone())

    handles = [
        model[1].register_forward_hook(lambda m, i, o: out["forward"].append(o.sum().item())),
        model[3].register_full_backward_hook(backward_hook),
        model[4].register_forward_pre_hook(lambda m, inputs: (inputs[0] * 2,)),
    ]
    model[0].requires_grad_(False)
    opt = lib.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2, amsgrad=True)
    accumulate = 2
    for i, (x, y) in enumerate(zip(INPUTS, TARGETS)):
        prediction = model(lib.tensor(x))
        if i == 0:
            prediction.register_hook(lambda g: out["tensor_hook"].append(g.clone()))
            prediction.register_hook(lambda g: g * 0.5)
        loss = lib.nn.functional.smooth_l1_loss(prediction, lib.tensor(y), beta=0.5)
        (loss / accumulate).backward()
        if (i + 1) % accumulate == 0:
            out[f"grad{i}"] = model[5].weight.grad.clone()
            opt.step()
            opt.zero_grad()
    out["frozen_grad"] = model[0].weight.grad
    for handle in handles:
        handle.remove()
    x = lib.tensor(INPUTS[0], requires_grad=True)
    z = model(x).pow(2).sum()
    (out["autograd_grad"],) = lib.autograd.grad(z, x, retain_graph=True)
    z.backward(retain_graph=True)
    z.backward()
    out["twice"] = x.grad
    with lib.no_grad():
        out["no_grad"] = model(x).requires_grad
    with lib.inference_mode():
        out["inference"] = model(x).requires_grad
    model[0].requires_grad_(True)
    opt.add_param_group({"params": model[0].parameters(), "lr": 1e-3})
    for x in INPUTS[:2]:
        loss = model(lib.tensor(x)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    out["params"] = dict(model.named_parameters())
    return out


def test_fine_tuning_with_hooks_freezing_and_accumulation():
    run_both(fine_tune_program)
