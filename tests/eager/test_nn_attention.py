"""F.scaled_dot_product_attention and nn.MultiheadAttention against torch (float64).

torch's weights are copied in through state_dict; outputs, attention weights and
the gradients wrt query, key, value and every parameter must agree to ~1e-10.
"""

import itertools
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)


def _cosine_weights(lib, t):
    return lib.tensor(np.cos(np.arange(t.numel()) * 0.7).reshape(tuple(t.shape)))


def _assert_close(ours, theirs):
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# --- scaled_dot_product_attention -------------------------------------------------------------


def _sdpa(lib, arrays, mask, **kw):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    m = None if mask is None else lib.tensor(mask)
    out = lib.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    (out * _cosine_weights(lib, out)).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in ts]


def _bool_mask(shape):
    mask = R.random(shape) > 0.3
    mask[..., 0, :] = False  # a row that attends to nothing: zeros, not nan
    return mask


SDPA_CASES = {
    "plain": ({}, None),
    "scale": ({"scale": 0.3}, None),
    "causal": ({"is_causal": True}, None),
    "bool mask": ({}, "bool"),
    "float mask": ({}, "float"),
    "float mask with -inf row": ({}, "float -inf"),
}


@pytest.mark.parametrize("name", list(SDPA_CASES))
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 5)], ids=["4d", "2d"])
def test_sdpa_matches_torch(name, shape):
    kw, mask_kind = SDPA_CASES[name]
    lq, e = shape[-2], shape[-1]
    q = R.standard_normal(shape)
    k = R.standard_normal(shape[:-2] + (6, e))
    v = R.standard_normal(shape[:-2] + (6, 3))
    mask = None
    if mask_kind == "bool":
        mask = _bool_mask((lq, 6))
    elif mask_kind == "float":
        mask = R.standard_normal((lq, 6))
    elif mask_kind == "float -inf":
        mask = R.standard_normal(shape[:-1] + (6,))
        mask[..., 1, :] = -np.inf
    _assert_close(_sdpa(sg, [q, k, v], mask, **kw), _sdpa(torch, [q, k, v], mask, **kw))


def test_sdpa_grouped_query_attention():
    q, k, v = (
        R.standard_normal((1, 4, 3, 2)),
        R.standard_normal((1, 2, 5, 2)),
        R.standard_normal((1, 2, 5, 2)),
    )
    _assert_close(
        _sdpa(sg, [q, k, v], None, enable_gqa=True), _sdpa(torch, [q, k, v], None, enable_gqa=True)
    )


def test_sdpa_errors():
    q = sg.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        sg.nn.functional.scaled_dot_product_attention(
            q, q, q, attn_mask=sg.ones(2, 2), is_causal=True
        )
    for lib in (torch, sg):
        q = lib.zeros(1, 2, 3, dtype=lib.float64)
        with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
            lib.nn.functional.scaled_dot_product_attention(
                q, q, q, attn_mask=lib.ones(2, 2, dtype=lib.int32)
            )


def test_sdpa_dropout_is_applied():
    q = sg.tensor(R.standard_normal((2, 8, 4)))
    plain = sg.nn.functional.scaled_dot_product_attention(q, q, q)
    dropped = sg.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(plain.numpy(), dropped.numpy())


# --- MultiheadAttention ----------------------------------------------------------------------


def copy_weights(src, dst):
    dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )


def _mha(lib, module, arrays, call):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    while len(ts) < 3:  # self-attention: the same tensor three times
        ts.append(ts[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, weights = module(*ts, **call(lib))
    total = (out * _cosine_weights(lib, out)).sum()
    if weights is not None:
        total = total + (weights * _cosine_weights(lib, weights)).sum()
    total.backward()
    uniq = list(dict.fromkeys(ts))
    results = [out.detach().numpy()] + [t.grad.numpy() for t in uniq]
    results += [p.grad.numpy() for p in module.parameters()]
    return results + ([weights.detach().numpy()] if weights is not None else [])


def _masks(kind, n, tgt, src, unbatched):
    """(key_padding_mask, attn_mask) arrays for a case."""
    pad = np.zeros((src,) if unbatched else (n, src), bool)
    pad[..., -1] = True
    causal = np.triu(np.ones((tgt, src), bool), 1)
    return {
        "none": (None, None),
        "padding": (pad, None),
        "bool mask": (None, causal),
        "float masks": (
            np.where(pad, -1e9, 0.0),
            np.where(causal, -np.inf, 0.0) + R.standard_normal((tgt, src)),
        ),
        "3d mask": (None, np.broadcast_to(causal, ((1 if unbatched else n) * 2, tgt, src)).copy()),
    }[kind]


LAYOUTS = [(False, False), (True, False), (False, True)]  # (batch_first, unbatched)
CALLS = [{}, {"need_weights": False}, {"average_attn_weights": False}]
# every module option with every mask kind once; the calls and layouts cycle so that each
# (call, layout) pair is met too (a full product would take ten times as long)
MHA_GRID = [
    (kw, masks, CALLS[i // 3 % 3]) + LAYOUTS[i % 3]
    for i, (kw, masks) in enumerate(
        itertools.product(
            [
                {},
                {"bias": False},
                {"kdim": 5, "vdim": 6},
                {"add_bias_kv": True},
                {"add_zero_attn": True},
            ],
            ["none", "padding", "bool mask", "float masks", "3d mask"],
        )
    )
]


@pytest.mark.parametrize("kw,masks,call,batch_first,unbatched", MHA_GRID)
def test_multihead_attention_matches_torch(kw, masks, call, batch_first, unbatched):
    def make(lib):
        return lib.nn.MultiheadAttention(8, 2, batch_first=batch_first, **kw).double()

    mt, ms = make(torch), make(sg)
    assert repr(ms) == repr(mt)
    assert list(ms.state_dict()) == list(mt.state_dict())
    copy_weights(mt, ms)
    n, tgt, src = 2, 3, 4

    def shaped(length, dim):
        if unbatched:
            return (length, dim)
        return (n, length, dim) if batch_first else (length, n, dim)

    cross = "kdim" in kw or masks != "none" or call.get("need_weights") is False
    if cross:
        arrays = [
            R.standard_normal(shaped(tgt, 8)),
            R.standard_normal(shaped(src, kw.get("kdim", 8))),
            R.standard_normal(shaped(src, kw.get("vdim", 8))),
        ]
    else:  # self-attention
        arrays, src = [R.standard_normal(shaped(tgt, 8))], tgt
    pad, attn = _masks(masks, n, tgt, src, unbatched)

    def args(lib):
        out = dict(call)
        if pad is not None:
            out["key_padding_mask"] = lib.tensor(pad)
        if attn is not None:
            out["attn_mask"] = lib.tensor(attn)
        return out

    _assert_close(_mha(sg, ms, arrays, args), _mha(torch, mt, arrays, args))


def test_multihead_attention_causal_hint():
    x = R.standard_normal((3, 2, 8))
    causal = np.triu(np.ones((3, 3), bool), 1)
    mt = torch.nn.MultiheadAttention(8, 4).double()
    ms = sg.nn.MultiheadAttention(8, 4).double()
    copy_weights(mt, ms)
    for need in (True, False):

        def call(lib, need=need):
            return {"attn_mask": lib.tensor(causal), "is_causal": True, "need_weights": need}

        _assert_close(_mha(sg, ms, [x], call), _mha(torch, mt, [x], call))
    for lib in (torch, sg):
        m = lib.nn.MultiheadAttention(8, 4)
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal"):
            m(lib.zeros(3, 2, 8), lib.zeros(3, 2, 8), lib.zeros(3, 2, 8), is_causal=True)


def test_multihead_attention_init_and_errors():
    for lib in (torch, sg):
        with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
            lib.nn.MultiheadAttention(6, 4)
        with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
            lib.nn.MultiheadAttention(0, 1)
        m = lib.nn.MultiheadAttention(4, 2)
        with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
            m(
                lib.zeros(3, 2, 4),
                lib.zeros(3, 2, 4),
                lib.zeros(3, 2, 4),
                attn_mask=lib.zeros(3, 3, dtype=lib.int64),
            )
        with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
            m(lib.zeros(3, 2, 4), lib.zeros(3, 2, 4), lib.zeros(3, 2, 4), attn_mask=lib.zeros(3, 4))
    ms = sg.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    assert ms.in_proj_bias.abs().max().item() == 0 and ms.out_proj.bias.abs().max().item() == 0
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ of the (24, 8) in_proj_weight
    w = ms.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    assert tuple(ms.bias_k.shape) == (1, 1, 8)
