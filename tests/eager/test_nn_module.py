"""`sourcegrad.nn.Module` and the containers against torch.nn (the oracle).

The same network is built with both libraries from one builder, torch's weights
are copied across through state_dict, and everything a user can observe is
compared: forward values, every parameter's gradient, grad_fn names, reprs,
state_dict keys, load_state_dict results and errors, hook order, modes.
"""

from collections import OrderedDict

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad import nn


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def build(lib):
    """A small network using every kind of registration (same code for both libraries)."""
    tnn = lib.nn

    class Net(tnn.Module):
        def __init__(self):
            super().__init__()
            self.body = tnn.Sequential(
                tnn.Linear(4, 8), tnn.GELU(), tnn.LayerNorm(8), tnn.Linear(8, 8), tnn.Tanh()
            )
            self.emb = tnn.Embedding(10, 4, padding_idx=0)
            self.heads = tnn.ModuleDict({"a": tnn.Linear(8, 3), "b": tnn.Linear(8, 3, bias=False)})
            self.extra = tnn.ParameterList([tnn.Parameter(lib.ones(3))])
            self.register_buffer("scale", lib.tensor(2.0))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)

        def forward(self, idx, x):
            h = self.body(x + self.emb(idx).sum(1))
            return (self.heads["a"](h) * self.scale + self.heads["b"](h)) * self.extra[0]

    return Net()


def copy_weights(src, dst):
    """torch module -> sourcegrad module, through state_dict and numpy."""
    result = dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )
    assert repr(result) == "<All keys matched successfully>"


def _np(t):
    return t.detach().numpy()


def test_network_forward_backward_repr_and_names_match_torch(torch):
    t_net, s_net = build(torch), build(sg)
    assert repr(s_net) == repr(t_net)
    assert str(s_net) == str(t_net)
    assert list(s_net.state_dict()) == list(t_net.state_dict())
    assert [n for n, _ in s_net.named_parameters()] == [n for n, _ in t_net.named_parameters()]
    assert [n for n, _ in s_net.named_buffers()] == [n for n, _ in t_net.named_buffers()]
    assert [n for n, _ in s_net.named_modules()] == [n for n, _ in t_net.named_modules()]
    assert [n for n, _ in s_net.named_children()] == [n for n, _ in t_net.named_children()]
    assert [p.shape for p in s_net.parameters()] == [tuple(p.shape) for p in t_net.parameters()]
    copy_weights(t_net, s_net)
    for (name, a), b in zip(t_net.state_dict().items(), s_net.state_dict().values()):
        np.testing.assert_array_equal(_np(a), _np(b), err_msg=name)

    rng = np.random.default_rng(0)
    idx = np.array([[0, 3], [5, 0], [1, 2]])
    x = rng.standard_normal((3, 4)).astype(np.float32)
    yt = t_net(torch.tensor(idx), torch.tensor(x))
    ys = s_net(sg.tensor(idx), sg.tensor(x))
    np.testing.assert_allclose(_np(ys), _np(yt), rtol=1e-5, atol=1e-6)
    (yt**2).sum().backward()
    (ys**2).sum().backward()
    for (name, a), b in zip(t_net.named_parameters(), s_net.parameters()):
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=1e-4, atol=1e-6, err_msg=name)
    # the padding row of the embedding gets no gradient, as in torch
    assert not s_net.emb.weight.grad[0].numpy().any()


def test_state_dict_is_detached_ordered_and_keep_vars(torch):
    net = build(sg)
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert all(not v.requires_grad and v.grad_fn is None for v in sd.values())
    assert "tmp" not in sd and "scale" in sd
    # detached, but the same storage: writing it writes the parameter
    sd["body.0.bias"][0] = 5.0
    assert net.body[0].bias[0].item() == 5.0
    kept = net.state_dict(keep_vars=True)
    assert kept["body.0.weight"] is net.body[0].weight
    # prefix
    assert list(net.body.state_dict(prefix="p."))[:2] == ["p.0.weight", "p.0.bias"]


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def test_load_state_dict_errors_are_torchs(torch):
    t_net, s_net = build(torch), build(sg)
    t_sd = {k: v.clone() for k, v in t_net.state_dict().items()}
    s_sd = {k: sg.tensor(v.numpy().copy()) for k, v in t_sd.items()}
    # missing and unexpected keys
    for drop, add in [
        ("body.0.bias", None),
        (None, "bogus"),
        ("heads.a.weight", "heads.c.x"),
        (None, "body.9.weight"),
    ]:
        t_bad, s_bad = dict(t_sd), dict(s_sd)
        if drop:
            del t_bad[drop], s_bad[drop]
        if add:
            t_bad[add] = torch.zeros(1)
            s_bad[add] = sg.zeros(1)
        assert _error(lambda: s_net.load_state_dict(s_bad)) == _error(
            lambda: t_net.load_state_dict(t_bad)
        )
        assert repr(s_net.load_state_dict(s_bad, strict=False)) == repr(
            t_net.load_state_dict(t_bad, strict=False)
        )
    # size mismatch (raised even with strict=False)
    t_bad, s_bad = dict(t_sd), dict(s_sd)
    t_bad["body.3.weight"] = torch.zeros(8, 7)
    s_bad["body.3.weight"] = sg.zeros(8, 7)
    t_bad["scale"] = torch.zeros(2)
    s_bad["scale"] = sg.zeros(2)
    for strict in (True, False):
        assert _error(lambda: s_net.load_state_dict(s_bad, strict=strict)) == _error(
            lambda: t_net.load_state_dict(t_bad, strict=strict)
        )
    assert _error(lambda: s_net.load_state_dict([1])) == _error(lambda: t_net.load_state_dict([1]))


def test_load_state_dict_copies_in_place_and_keeps_the_parameters():
    net = nn.Linear(3, 2)
    w = net.weight
    version = w._version
    net.load_state_dict({"weight": sg.ones(2, 3), "bias": sg.zeros(2)})
    assert net.weight is w and w.requires_grad and w._version > version
    np.testing.assert_array_equal(w.detach().numpy(), np.ones((2, 3)))
    # assign=True puts the given tensors in (as Parameters keeping requires_grad)
    net.load_state_dict({"weight": sg.full((2, 3), 2.0), "bias": sg.zeros(2)}, assign=True)
    assert net.weight is not w and isinstance(net.weight, nn.Parameter)
    assert net.weight.requires_grad


def test_registration_rules_and_messages(torch):
    results = []
    for lib in (torch, sg):
        m = lib.nn.Module()
        out = []
        out.append(_error(lambda: m.register_buffer("a.b", lib.zeros(1))))
        out.append(_error(lambda: m.register_buffer("", lib.zeros(1))))
        out.append(_error(lambda: m.register_buffer("x", 3)))
        out.append(_error(lambda: m.register_parameter("p", lib.zeros(1))))
        out.append(_error(lambda: m.register_parameter("q", lib.nn.Parameter(lib.zeros(1)) * 2)))
        out.append(_error(lambda: m.add_module("m", 3)))
        out.append(_error(lambda: m.add_module("a.b", lib.nn.ReLU())))
        out.append(_error(lambda: m.nothing))
        m.w = lib.nn.Parameter(lib.zeros(2))
        out.append(_error(lambda: setattr(m, "w", lib.zeros(2))))
        m.sub = lib.nn.ReLU()
        out.append(_error(lambda: setattr(m, "sub", 3)))
        m.register_buffer("buf", lib.zeros(1))
        out.append(_error(lambda: setattr(m, "buf", 3)))
        out.append(_error(lambda: m.register_buffer("w", lib.zeros(1))))
        out.append(_error(lambda: m.get_submodule("sub.x")))
        out.append(_error(lambda: m.get_submodule("w")))
        out.append(_error(lambda: m.get_parameter("buf")))
        results.append(out)
    assert results[0] == results[1]


def test_setattr_moves_names_between_registries():
    m = nn.Module()
    m.x = nn.Parameter(sg.zeros(2))
    assert "x" in m._parameters
    m.x = None  # a registered parameter may be set to None
    assert m._parameters["x"] is None and m.x is None
    del m.x
    assert "x" not in m._parameters
    m.x = nn.Linear(1, 1)
    assert "x" in m._modules
    m.x = nn.Parameter(sg.zeros(1))  # replaces the module
    assert "x" not in m._modules and "x" in m._parameters
    m.register_buffer("b", sg.zeros(1), persistent=False)
    m.b = sg.ones(1)  # stays a non-persistent buffer
    assert "b" in m._buffers and "b" not in m.state_dict()
    del m.b
    assert "b" not in m._buffers and "b" not in m._non_persistent_buffers_set
    m.plain = 3
    assert m.__dict__["plain"] == 3
    assert m.get_submodule("") is m


def test_shared_parameters_are_listed_once(torch):
    for lib in (torch, sg):
        lin = lib.nn.Linear(2, 2)
        seq = lib.nn.Sequential(lin, lib.nn.ReLU(), lin)
        assert len(list(seq.parameters())) == 2
        assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
        assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
        assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
        assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
        assert [n for n, _ in seq.named_parameters(prefix="net", recurse=False)] == []
        assert [n for n, _ in seq[0].named_parameters(prefix="net")] == ["net.weight", "net.bias"]


def test_hooks_run_in_torchs_order_and_can_replace_values(torch):
    logs = []
    for lib in (torch, sg):
        log = []
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.eye(2))
            lin.bias.zero_()
        h1 = lin.register_forward_pre_hook(lambda m, args: log.append("pre1"))
        lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        lin.register_forward_pre_hook(lambda m, args: log.append("pre0"), prepend=True)
        lin.register_forward_pre_hook(
            lambda m, args, kwargs: log.append(("prek", sorted(kwargs))) or None, with_kwargs=True
        )
        h2 = lin.register_forward_hook(lambda m, args, out: log.append(("fwd", out.tolist())))
        lin.register_forward_hook(lambda m, args, out: out + 1)
        lin.register_forward_hook(lambda m, args, kwargs, out: log.append("fwdk"), with_kwargs=True)
        y = lin(lib.tensor([[1.0, 2.0]]))
        log.append(y.tolist())
        h1.remove()
        h2.remove()
        h2.remove()  # a second remove is harmless
        log.append(lin(lib.tensor([[1.0, 2.0]])).tolist())
        with lin.register_forward_hook(lambda m, a, o: log.append("ctx")):
            lin(lib.tensor([[0.0, 0.0]]))
        lin(lib.tensor([[0.0, 0.0]]))
        logs.append(log)
    assert logs[0] == logs[1]


def test_train_eval_and_dropout(torch):
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Sequential(nn.Dropout(0.25)))
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    x = sg.ones(64, 4)
    np.testing.assert_array_equal(net[1](x).numpy(), x.numpy())
    net.train()
    sg.manual_seed(0)
    y = net[1](sg.ones(200, 50)).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    assert abs((y == 0).mean() - 0.5) < 0.03
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    with pytest.raises(
        ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"
    ):
        nn.Dropout(1.5)
    assert repr(nn.Dropout(0.2, inplace=True)) == repr(torch.nn.Dropout(0.2, inplace=True))
    # the gradient of dropout is the mask, scaled
    x = sg.ones(10, 10, requires_grad=True)
    out = nn.Dropout(0.5)(x)
    assert out.grad_fn.name() == "MulBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


def test_zero_grad_requires_grad_apply_and_conversions():
    net = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    net(sg.ones(4, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    params = list(net.parameters())
    net.register_buffer("count", sg.tensor(3))
    net(sg.ones(1, 3)).sum().backward()
    assert net.double() is net
    assert [p.dtype for p in net.parameters()] == [sg.float64] * 4
    assert all(p.grad.dtype == sg.float64 for p in net.parameters())
    assert list(net.parameters())[0] is params[0] and params[0].requires_grad
    assert net.count.dtype == sg.int64  # integer buffers keep their dtype
    assert net(sg.ones(1, 3, dtype=sg.float64)).dtype == sg.float64
    net.float()
    assert params[0].dtype == sg.float32 and params[0].is_leaf
    net.to(sg.float64)
    assert params[0].dtype == sg.float64
    net.to("cpu", dtype=sg.float32)
    assert params[0].dtype == sg.float32
    assert net.cpu() is net
    net.half()
    assert params[0].dtype == sg.float16
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        net.to(sg.int32)


def test_forward_not_implemented_and_init_arguments(torch):
    msgs = [_error(lambda: lib.nn.Module()(1)) for lib in (torch, sg)]
    assert msgs[0] == msgs[1]
    msgs = [_error(lambda: lib.nn.Module(3)) for lib in (torch, sg)]
    assert msgs[0] == msgs[1]


def test_attribute_before_init_is_refused(torch):
    results = []
    for lib in (torch, sg):

        class Early(lib.nn.Module):
            def __init__(self):
                self.w = lib.nn.Parameter(lib.zeros(1))

        results.append(_error(Early))
    assert results[0] == results[1]


# --- containers ---------------------------------------------------------------------------------


def test_sequential_indexing_slicing_and_editing(torch):
    reprs = []
    for lib in (torch, sg):
        tnn = lib.nn
        seq = tnn.Sequential(tnn.Linear(2, 3), tnn.ReLU(), tnn.Linear(3, 1))
        assert len(seq) == 3
        assert isinstance(seq[0], tnn.Linear) and isinstance(seq[-1], tnn.Linear)
        sub = seq[1:]
        assert isinstance(sub, tnn.Sequential) and list(sub._modules) == ["1", "2"]
        seq.append(tnn.Sigmoid())
        seq.insert(1, tnn.Tanh())
        seq[0] = tnn.Linear(2, 3, bias=False)
        del seq[2]
        out = [repr(seq), repr(sub), [type(m).__name__ for m in seq]]
        out.append(_error(lambda: seq[10]))
        od = tnn.Sequential(OrderedDict([("fc", tnn.Linear(1, 1)), ("act", tnn.ReLU())]))
        out.append(repr(od))
        out.append(repr(od + tnn.Sequential(tnn.Tanh())))
        out.append(repr(tnn.Sequential(tnn.ReLU()) * 2))
        out.append(repr(tnn.Sequential()))
        out.append(od.fc is od[0])
        reprs.append(out)
    assert reprs[0] == reprs[1]


def test_sequential_forward_and_grad_fn_names(torch):
    t_seq = torch.nn.Sequential(
        torch.nn.Linear(3, 4),
        torch.nn.ReLU(),
        torch.nn.Linear(4, 4),
        torch.nn.Sigmoid(),
        torch.nn.Linear(4, 2),
        torch.nn.Tanh(),
        torch.nn.Linear(2, 2),
        torch.nn.Softmax(dim=1),
    )
    s_seq = nn.Sequential(
        nn.Linear(3, 4),
        nn.ReLU(),
        nn.Linear(4, 4),
        nn.Sigmoid(),
        nn.Linear(4, 2),
        nn.Tanh(),
        nn.Linear(2, 2),
        nn.Softmax(dim=1),
    )
    copy_weights(t_seq, s_seq)
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    yt, ys = t_seq(torch.tensor(x)), s_seq(sg.tensor(x))
    np.testing.assert_allclose(_np(ys), _np(yt), rtol=1e-5, atol=1e-7)

    def names(fn, depth=8):
        out = []
        while fn is not None and depth:
            out.append(fn.name())
            nxt = [
                f
                for f, _ in fn.next_functions
                if f is not None and "AccumulateGrad" not in f.name()
            ]
            fn = nxt[-1] if nxt else None
            depth -= 1
        return out

    assert names(ys.grad_fn) == names(yt.grad_fn)
    (yt[:, 0] * torch.arange(5.0)).sum().backward()
    (ys[:, 0] * sg.arange(5.0)).sum().backward()
    for (name, a), b in zip(t_seq.named_parameters(), s_seq.parameters()):
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=1e-4, atol=1e-7, err_msg=name)


def test_module_list_and_dict(torch):
    outs = []
    for lib in (torch, sg):
        tnn = lib.nn
        ml = tnn.ModuleList([tnn.Linear(2, 2) for _ in range(3)] + [tnn.ReLU(), tnn.ReLU()])
        ml.append(tnn.Tanh())
        ml.extend([tnn.Linear(2, 2)])
        ml.insert(0, tnn.Sigmoid())
        out = [repr(ml), len(ml), repr(ml[1:3]), repr(tnn.ModuleList())]
        del ml[0]
        out.append(repr(ml))
        out.append([n for n, _ in ml.named_parameters()])
        md = tnn.ModuleDict({"b": tnn.ReLU(), "a": tnn.Linear(1, 1)})
        md["c"] = tnn.Tanh()
        md.update([("d", tnn.Sigmoid())])
        out += [repr(md), list(md.keys()), "a" in md, len(md)]
        md.pop("b")
        out.append(list(md))
        out.append(_error(lambda: ml[20]))
        outs.append(out)
    assert outs[0] == outs[1]


def test_parameter_list_and_dict(torch):
    outs = []
    for lib in (torch, sg):
        tnn = lib.nn
        pl = tnn.ParameterList([tnn.Parameter(lib.ones(2)), lib.zeros(3, 4)])
        pl.append(lib.ones(1, dtype=lib.float64))
        out = [
            repr(pl),
            len(pl),
            [n for n, _ in pl.named_parameters()],
            isinstance(pl[1], tnn.Parameter),
            repr(pl[0:2]),
        ]
        pd = tnn.ParameterDict({"w": lib.ones(2), "a": tnn.Parameter(lib.zeros(1))})
        pd["z"] = lib.ones(2, 2)
        out += [
            repr(pd),
            list(pd.keys()),
            [n for n, _ in pd.named_parameters()],
            "w" in pd,
            isinstance(pd["w"], tnn.Parameter),
        ]
        pd.pop("w")
        out.append(list(pd))
        out.append(_error(lambda: pl(1)))
        outs.append(out)
    assert outs[0] == outs[1]


def test_micro_training_loop_matches_torch(torch):
    """An MLP trained with SGD (momentum) from torch's initial weights: the same losses."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((16, 5)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    losses = []
    torch.manual_seed(0)
    t_net = torch.nn.Sequential(
        torch.nn.Linear(5, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 16),
        torch.nn.Tanh(),
        torch.nn.Linear(16, 3),
    )
    s_net = nn.Sequential(
        nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )
    copy_weights(t_net, s_net)
    for lib, net in ((torch, t_net), (sg, s_net)):
        opt = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        xs, ys = lib.tensor(X), lib.tensor(y)
        run = []
        for _ in range(15):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(net(xs), ys)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-5)
    assert losses[1][-1] < 0.7 * losses[1][0]
    for (name, a), b in zip(t_net.named_parameters(), s_net.parameters()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-4, atol=1e-5, err_msg=name)


def test_custom_extra_repr_and_nesting_print_as_torch(torch):
    reprs = []
    for lib in (torch, sg):

        class Block(lib.nn.Module):
            def __init__(self, k):
                super().__init__()
                self.k = k
                self.inner = lib.nn.ModuleList([lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)])

            def extra_repr(self):
                return f"k={self.k}\nsecond line"

        class Leaf(lib.nn.Module):
            def extra_repr(self):
                return "one line"

        top = lib.nn.Sequential(Block(1), lib.nn.Sequential(Block(2), Leaf()), Leaf())
        top.add_module("none", None)
        reprs.append([repr(top), repr(Leaf()), repr(lib.nn.Module())])
    assert reprs[0] == reprs[1]


def test_deepcopy_and_pickle_give_independent_modules():
    import copy
    import pickle

    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    net.register_buffer("b", sg.ones(1), persistent=False)
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert repr(clone) == repr(net)
        w, w0 = clone[0].weight, net[0].weight
        assert isinstance(w, nn.Parameter) and w.requires_grad and w is not w0
        np.testing.assert_array_equal(w.detach().numpy(), w0.detach().numpy())
        with sg.no_grad():
            w.zero_()
        assert w0.detach().numpy().any()
        assert "b" in dict(clone.named_buffers()) and "b" not in clone.state_dict()


def _backward_hook_log(lib):
    import warnings

    log = []
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
        lin.bias.zero_()

    def pre(m, go):
        log.append(("pre", [g.tolist() if g is not None else None for g in go]))
        return (go[0] * 3,)

    def post(m, gi, go):
        log.append(
            ("post", [g.tolist() if g is not None else None for g in gi], [g.tolist() for g in go])
        )
        return (gi[0] * 2,) if gi[0] is not None else None

    lin.register_full_backward_pre_hook(pre)
    handle = lin.register_full_backward_hook(post)
    x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = lin(x)
    log.append(y.grad_fn.name())
    y.sum().backward()
    log += [x.grad.tolist(), lin.weight.grad.tolist()]
    # no input requires grad: the hooks fire from the outputs' side, with a warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lin(lib.tensor([[1.0, 1.0, 1.0]])).sum().backward()
    log.append([str(w.message)[:40] for w in caught])
    handle.remove()
    x.grad = None
    lin(x).sum().backward()
    log.append(x.grad.tolist())
    return log


def test_full_backward_hooks_match_torch(torch):
    assert _backward_hook_log(sg) == _backward_hook_log(torch)


def test_always_call_forward_hook_runs_when_forward_raises(torch):
    logs = []
    for lib in (torch, sg):
        log = []

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        m.register_forward_hook(lambda mod, a, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, a, out: log.append("normal"))
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        logs.append(log)
    assert logs[0] == logs[1] == [("always", None)]


def test_buffer_assignment_registers_a_buffer(torch):
    outs = []
    for lib in (torch, sg):
        m = lib.nn.Module()
        m.a = lib.nn.Buffer(lib.ones(2), persistent=False)
        m.b = lib.nn.Buffer(lib.zeros(1))
        m.c = lib.ones(1)  # a plain tensor is a plain attribute
        outs.append(
            [
                list(m.state_dict()),
                [n for n, _ in m.named_buffers()],
                isinstance(m.a, lib.nn.Buffer),
                isinstance(lib.ones(1), lib.nn.Buffer),
                type(m.a) is lib.Tensor,
            ]
        )
    assert outs[0] == outs[1]


def test_set_submodule_and_get_buffer(torch):
    outs = []
    for lib in (torch, sg):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        net.register_buffer("steps", lib.tensor(3))
        net.set_submodule("1.0", lib.nn.Tanh())
        net.set_submodule("2", lib.nn.Sigmoid())
        out = [repr(net), net.get_buffer("steps").item()]
        out.append(_error(lambda: net.set_submodule("1.5", lib.nn.ReLU(), strict=True)))
        out.append(_error(lambda: net.set_submodule("", lib.nn.ReLU())))
        out.append(_error(lambda: net.set_submodule("steps", lib.nn.ReLU())))
        out.append(_error(lambda: net.get_buffer("0.weight")))
        outs.append(out)
    assert outs[0][:2] == outs[1][:2]
    assert [e[0] for e in outs[0][2:]] == [e[0] for e in outs[1][2:]]
    assert outs[0][3:] == outs[1][3:]


def test_zero_grad_of_a_gradient_that_requires_grad_zeroes_it_as_torch_does(torch):
    # a gradient set from create_graph=True results is a leaf that requires grad: torch
    # stops it requiring grad and zeroes it (zero_() on it raised the leaf in-place error)
    out = []
    for lib in (torch, sg):
        m = lib.nn.Linear(2, 1).double()
        loss = (m(lib.ones(3, 2, dtype=lib.float64)) ** 2).sum()
        grads = lib.autograd.grad(loss, list(m.parameters()), create_graph=True)
        for p, g in zip(m.parameters(), grads):
            p.grad = g.detach().requires_grad_()
        m.zero_grad(set_to_none=False)
        out.append([(p.grad.tolist(), p.grad.requires_grad) for p in m.parameters()])
    assert out[1] == out[0]
