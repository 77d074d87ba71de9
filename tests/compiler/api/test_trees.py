"""Parameter trees in the compiled API: gradients with respect to lists, tuples, dicts,
NamedTuples, dataclasses and nestings of them, written as autograd's and JAX's examples
write them; every leaf checked against central finite differences (float64)."""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest

import sourcegrad
from sourcegrad import trees
from sourcegrad.api import numeric_grad


def tree_numeric_grad(fn, args, pos, eps=1e-6):
    """Central differences of fn with respect to every leaf of argument `pos`, as a tree."""
    leaves, treedef = trees.flatten(args[pos])
    out = []
    for k, leaf in enumerate(leaves):

        def at(value, k=k):
            moved = list(leaves)
            moved[k] = value
            return fn(*args[:pos], treedef.unflatten(moved), *args[pos + 1 :])

        out.append(numeric_grad(at, (leaf,), 0, eps))
    return treedef.unflatten(out)


def assert_tree_close(got, want, rtol=1e-6, atol=1e-8):
    got_leaves, got_def = trees.flatten(got)
    want_leaves, want_def = trees.flatten(want)
    assert got_def == want_def, (got_def, want_def)
    for g, w in zip(got_leaves, want_leaves):
        assert type(g) is type(w) or np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def check(fn, args, pos=0):
    got = sourcegrad.grad(fn, wrt=pos)(*args)
    assert_tree_close(got, tree_numeric_grad(fn, args, pos))
    return got


# --- the programs -----------------------------------------------------------------------------


def neural_net_predict(params, inputs):
    """autograd's examples/neural_net.py, with logsumexp written out."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    top = np.max(outputs, axis=1, keepdims=True)
    return outputs - (top + np.log(np.sum(np.exp(outputs - top), axis=1, keepdims=True)))


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = 0.0
    for W, b in params:
        log_prior = log_prior - L2_reg * (np.sum(W**2) + np.sum(b**2))
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return -(log_prior + log_lik)


def mlp_hidden_then_output(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W_out, b_out = params[-1]
    return np.sum((h @ W_out + b_out) ** 2)


def rnn_dict(params, xs):
    h = np.zeros(params["W_hh"].shape[0])
    for x in xs:
        h = np.tanh(params["W_xh"] @ x + params["W_hh"] @ h + params["b_h"])
    return np.sum(params["W_hy"] @ h) ** 2


def lstm_dict(params, xs):
    n = params["b_f"].shape[0]
    h, c = np.zeros(n), np.zeros(n)
    for x in xs:
        z = np.concatenate([x, h])
        f = 1.0 / (1.0 + np.exp(-(params["W_f"] @ z + params["b_f"])))
        i = 1.0 / (1.0 + np.exp(-(params["W_i"] @ z + params["b_i"])))
        g = np.tanh(params["W_g"] @ z + params["b_g"])
        c = f * c + i * g
        h = np.tanh(c)
    return np.sum(h * params["w_out"])


class Linear(NamedTuple):
    w: np.ndarray
    b: float


def named_tuple_loss(p, x, y):
    return np.mean((x @ p.w + p.b - y) ** 2)


def unpacked_named_tuple(p, x):
    w, b = p
    return np.sum(np.sin(x * w) + b * w)


@dataclass
class Model:
    W: np.ndarray
    bias: np.ndarray
    scale: float


def dataclass_loss(model, x):
    return model.scale * np.sum(np.tanh(x @ model.W + model.bias) ** 2)


def nested_mix(params, x):
    enc = params["encoder"]
    h = x
    for W, b in enc:
        h = np.tanh(h @ W + b)
    out = params["head"]
    return np.sum((h @ out.w + out.b) ** 2) + params["temperature"] * np.sum(h)


def over_items(params, x):
    total = 0.0
    for name, value in params.items():
        total = total + np.sum(np.sin(value * x[: value.shape[0]]))
    return total + 0.5 * sum_values(params)


def sum_values(params):
    s = 0.0
    for v in params.values():
        s = s + np.sum(v**2)
    return s


def keys_and_get(params, x):
    s = 0.0
    for k in params.keys():
        s = s + np.sum(params[k] * x)
    return s * len(params) + np.sum(params.get("missing", 0.0) * x)


def layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def list_of_dicts(layers, x):
    h = x
    for p in layers:
        h = layer(p, h)
    return np.sum(h**2)


def built_inside(w, b, x):
    params = {"w": w, "b": b}
    params["scaled"] = 2.0 * w
    total = 0.0
    for key, value in params.items():
        total = total + np.sum(value * x[: value.shape[0]])
    return total


def unpack_everything(params, x):
    (W1, b1), (W2, b2) = params
    return np.sum(np.tanh(x @ W1 + b1) @ W2 + b2)


def layers_in_a_time_loop(params, x, steps):
    h = x
    for t in range(steps):
        for W, b in params:
            h = np.tanh(h @ W + b)
    return np.sum(h)


def float_leaves(params, x):
    return params["a"] * np.sum(x**2) + params["b"] ** 2 * np.sum(x) + params["c"][0]


# --- inputs -------------------------------------------------------------------------------------


@pytest.fixture
def rng():
    return np.random.default_rng(20)


def layers(rng, sizes):
    return [
        (rng.normal(size=(m, n)) * 0.5, rng.normal(size=n) * 0.1)
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def test_tuple_of_layers_mlp(rng):
    params = layers(rng, [3, 5, 4])
    inputs = rng.normal(size=(6, 3))
    targets = np.eye(4)[rng.integers(0, 4, size=6)]
    g = check(log_posterior, (params, inputs, targets, 0.1))
    assert isinstance(g, list) and all(isinstance(t, tuple) for t in g)


def test_hidden_layers_sliced_and_output_unpacked(rng):
    check(mlp_hidden_then_output, (layers(rng, [3, 4, 4, 2]), rng.normal(size=(5, 3))))


def test_rnn_with_dict_parameters(rng):
    params = {
        "W_xh": rng.normal(size=(4, 3)) * 0.5,
        "W_hh": rng.normal(size=(4, 4)) * 0.5,
        "b_h": rng.normal(size=4) * 0.1,
        "W_hy": rng.normal(size=(2, 4)),
    }
    g = check(rnn_dict, (params, rng.normal(size=(5, 3))))
    assert list(g) == ["W_xh", "W_hh", "b_h", "W_hy"]


def test_lstm_with_dict_parameters(rng):
    n, d = 3, 2
    params = {}
    for gate in "fig":
        params[f"W_{gate}"] = rng.normal(size=(n, n + d)) * 0.5
        params[f"b_{gate}"] = rng.normal(size=n) * 0.1
    params["w_out"] = rng.normal(size=n)
    check(lstm_dict, (params, rng.normal(size=(4, d))))


def test_named_tuple_parameters(rng):
    p = Linear(rng.normal(size=3), 0.3)
    g = check(named_tuple_loss, (p, rng.normal(size=(6, 3)), rng.normal(size=6)))
    assert type(g) is Linear and type(g.b) is float
    check(unpacked_named_tuple, (Linear(rng.normal(size=3), 0.7), rng.normal(size=3)))


def test_dataclass_parameters(rng):
    model = Model(rng.normal(size=(3, 2)), rng.normal(size=2), 1.5)
    g = check(dataclass_loss, (model, rng.normal(size=(4, 3))))
    assert type(g) is Model and g.W.shape == (3, 2) and type(g.scale) is float


def test_nested_mix_of_dict_list_tuple_and_named_tuple(rng):
    params = {
        "encoder": layers(rng, [3, 4, 4]),
        "head": Linear(rng.normal(size=(4, 2)), rng.normal(size=2)),
        "temperature": 0.7,
    }
    g = check(nested_mix, (params, rng.normal(size=(5, 3))))
    assert type(g["head"]) is Linear and type(g["temperature"]) is float


def test_items_values_keys_get_and_len(rng):
    params = {"a": rng.normal(size=3), "b": rng.normal(size=2)}
    check(over_items, (params, rng.normal(size=3)))
    params = {"u": rng.normal(size=3), "v": rng.normal(size=3)}
    check(keys_and_get, (params, rng.normal(size=3)))


def test_list_of_dicts_through_a_helper(rng):
    layers_ = [{"W": W, "b": b} for W, b in layers(rng, [3, 4, 2])]
    check(list_of_dicts, (layers_, rng.normal(size=(5, 3))))


def test_dict_built_inside_keeps_adjoints(rng):
    w, b, x = rng.normal(size=3), rng.normal(size=2), rng.normal(size=3)
    dw, db = sourcegrad.grad(built_inside, wrt=(0, 1))(w, b, x)
    np.testing.assert_allclose(dw, numeric_grad(built_inside, (w, b, x), 0), rtol=1e-7)
    np.testing.assert_allclose(db, numeric_grad(built_inside, (w, b, x), 1), rtol=1e-7)


def test_unpacking_a_list_of_pairs(rng):
    check(unpack_everything, (layers(rng, [3, 4, 2]), rng.normal(size=(2, 3))))


def test_layers_unrolled_inside_a_run_time_loop(rng):
    params = layers(rng, [3, 3, 3])
    check(layers_in_a_time_loop, (params, rng.normal(size=(2, 3)), 3))


def test_float_leaves_stay_floats(rng):
    params = {"a": 0.5, "b": -1.5, "c": (2.0,)}
    g = check(float_leaves, (params, rng.normal(size=3)))
    assert type(g["a"]) is float and type(g["c"]) is tuple and type(g["c"][0]) is float


def test_tree_and_array_together_and_value_and_grad(rng):
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))

    def loss(params, x):
        return np.sum(np.tanh(x @ params["W"] + params["b"]) ** 2)

    value, (g_params, g_x) = sourcegrad.value_and_grad(loss, argnums=(0, 1))(params, x)
    assert value == pytest.approx(loss(params, x))
    assert_tree_close(g_params, tree_numeric_grad(loss, (params, x), 0))
    np.testing.assert_allclose(g_x, numeric_grad(loss, (params, x), 1), rtol=1e-6)


def test_has_aux_with_a_tree(rng):
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))

    def loss(params, x):
        out = x @ params["W"] + params["b"]
        return np.sum(out**2), out

    g, aux = sourcegrad.grad(loss, has_aux=True)(params, x)
    assert_tree_close(g, tree_numeric_grad(lambda p, x: loss(p, x)[0], (params, x), 0))
    np.testing.assert_allclose(aux, x @ params["W"] + params["b"])


def test_structure_is_part_of_the_cache_key(rng):
    g = sourcegrad.grad(log_posterior)
    inputs = rng.normal(size=(3, 3))
    targets = np.eye(2)[[0, 1, 1]]
    for sizes in ([3, 2], [3, 4, 2], [3, 2], [3, 5, 5, 2]):
        params = layers(rng, sizes)
        assert_tree_close(
            g(params, inputs, targets, 0.1),
            tree_numeric_grad(log_posterior, (params, inputs, targets, 0.1), 0),
        )
    g = sourcegrad.grad(sum_values)
    for params in ({"a": np.ones(2)}, {"a": np.ones(2), "b": np.ones(3)}, {"b": np.ones(2)}):
        assert_tree_close(g(params), {k: 2 * v for k, v in params.items()})


def test_generated_code_names_leaves_by_their_keys(rng):
    params = {
        "W_xh": rng.normal(size=(4, 3)),
        "W_hh": rng.normal(size=(4, 4)),
        "b_h": rng.normal(size=4),
        "W_hy": rng.normal(size=(2, 4)),
    }
    g = sourcegrad.grad(rnn_dict)
    g(params, rng.normal(size=(5, 3)))
    assert "dparams_W_xh" in g.source and "dparams_b_h" in g.source
    source = sourcegrad.show(
        sourcegrad.grad(mlp_hidden_then_output),
        layers(rng, [3, 4, 2]),
        np.ones((2, 3)),
        file=open("/dev/null", "w"),
    )
    assert "dparams_0_0" in source and "saved" not in source  # unrolled: no stack


# --- what is refused, located --------------------------------------------------------------


def key_at_run_time(params, x):
    s = 0.0
    keys = ["a", "b"]
    for i in range(2):
        s = s + np.sum(params[keys[i]] * x)
    return s


def dict_as_a_value(params, x):
    return np.sum(params) * x


def dict_rebound_in_a_loop(params, x):
    p = params
    for i in range(2):
        p = {"a": p["a"] * x}
    return np.sum(p["a"])


def changes_its_argument(params, x):
    params["a"] = x
    return np.sum(params["a"])


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
@pytest.mark.parametrize(
    "fn, message",
    [
        (key_at_run_time, "indexed by a value known only at run time"),
        (dict_as_a_value, "a dict is used as a value"),
        (dict_rebound_in_a_loop, "assigned again in a loop or branch"),
        (changes_its_argument, "changing it in place is not supported"),
    ],
    ids=lambda v: getattr(v, "__name__", "message"),
)
def test_unsupported_uses_are_refused_with_the_line(fn, message):
    params = {"a": np.ones(2), "b": np.ones(2)}
    with pytest.raises(sourcegrad.SourcegradError, match=message) as info:
        sourcegrad.grad(fn)(params, np.ones(2))
    assert "test_trees.py" in str(info.value)


def test_an_int_leaf_is_named_by_its_path():
    with pytest.raises(sourcegrad.NonDifferentiableInputError, match=r"params\[\"b\"\]\[1\]"):
        sourcegrad.grad(sum_values)({"a": np.ones(2), "b": [np.ones(2), 3]})


def test_an_empty_tree_is_refused():
    with pytest.raises(sourcegrad.WrtError, match="holds no array"):
        sourcegrad.grad(sum_values)({})


def test_check_grad_and_numeric_grad_take_trees(rng):
    params = {
        "encoder": layers(rng, [3, 4]),
        "head": Linear(rng.normal(size=(4, 2)), 0.5),
        "temperature": 0.7,
    }
    x = rng.normal(size=(2, 3))
    assert sourcegrad.check_grad(nested_mix, params, x) < 1.0
    numeric = numeric_grad(nested_mix, (params, x), 0)
    assert_tree_close(numeric, tree_numeric_grad(nested_mix, (params, x), 0), rtol=1e-12)


@pytest.mark.parametrize("call", ["vjp", "jvp", "grad of grad"])
def test_modes_without_trees_refuse_them(call, rng):
    params = {"a": np.ones(2), "b": np.ones(2)}
    with pytest.raises(sourcegrad.NonDifferentiableInputError, match="parameter trees"):
        if call == "vjp":
            sourcegrad.vjp(sum_values)(params)
        elif call == "jvp":
            sourcegrad.jvp(sum_values, (params,), (params,))
        else:
            sourcegrad.grad(sourcegrad.grad(sum_values))(params)


def enumerate_and_zip_layers(params, scales, xs, x):
    h = x
    for i, (W, b) in enumerate(params):
        h = np.tanh(h @ W + b) * (i + 1.0)
    s = 0.0
    for (W, b), c in zip(params, scales):
        s = s + c * np.sum(W) + np.sum(b)
    for (W, b), row in zip(params, xs):  # xs: an array, known only at run time
        s = s + np.sum(row) * np.sum(b)
    return np.sum(h) + s


def test_enumerate_and_zip_over_layers(rng):
    params = layers(rng, [3, 3, 3])
    args = (params, (0.5, 2.0), rng.normal(size=(2, 4)), rng.normal(size=(2, 3)))
    check(enumerate_and_zip_layers, args)


def rebuilt_dict(params, x):
    scaled = {}
    for k, v in params.items():
        scaled[k] = 2.0 * v
    merged = {**params, "W": scaled["W"] + params["W"]}
    return np.sum(np.tanh(x @ merged["W"] + scaled["b"]) * merged["b"])


def aliased_then_changed(params, x):
    d = {"W": params["W"]}
    e = d
    d["W"] = x
    return np.sum(e["W"])


def test_dicts_rebuilt_from_items_and_merged(rng):
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    check(rebuilt_dict, (params, rng.normal(size=(4, 3))))


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_dict_changed_while_another_name_holds_it_is_refused(rng):
    params = {"W": rng.normal(size=(2,))}
    with pytest.raises(sourcegrad.SourcegradError, match="refers to it too"):
        sourcegrad.grad(aliased_then_changed)(params, np.ones(2))


def weighted(x, coeffs):
    return np.sum(x * coeffs[0]) + np.sum(coeffs[1] * x**2)


def test_a_static_tuple_then_a_tuple_of_arrays_in_one_argument():
    """Regression: the fast entry compared a tuple argument with `==`, which for a tuple of
    arrays given after a tuple of numbers compared arrays elementwise and raised."""
    g = sourcegrad.grad(weighted)
    x = np.array([0.5, -1.0])
    for coeffs in [
        (2.0, 3.0),
        (2.0, 3.0),
        (np.array([1.0, 2.0]), np.array([0.5, 4.0])),
        (2.0, 3.0),
    ]:
        np.testing.assert_allclose(
            g(x, coeffs), numeric_grad(weighted, (x, coeffs), 0), rtol=1e-7, atol=1e-9
        )
    dx, dcoeffs = sourcegrad.grad(weighted, wrt=(0, 1))(x, (2.0, np.array([0.5, 4.0])))
    assert_tree_close(dcoeffs, tree_numeric_grad(weighted, (x, (2.0, np.array([0.5, 4.0]))), 1))


def loss_with_dict_aux(params, x):
    out = np.tanh(x @ params["W"] + params["b"])
    accuracy = np.mean(out > 0)
    return np.sum(out**2), {"accuracy": accuracy, "out": out, "pair": (out, 2.0)}


def test_has_aux_returns_a_dict_aux_as_jax_code_does(rng):
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    g = sourcegrad.grad(loss_with_dict_aux, has_aux=True)
    for _ in range(2):  # (the second call through the fast entry)
        grads, aux = g(params, x)
    first = lambda p, x: loss_with_dict_aux(p, x)[0]  # noqa: E731
    assert_tree_close(grads, tree_numeric_grad(first, (params, x), 0))
    want = loss_with_dict_aux(params, x)[1]
    assert_tree_close(aux, want, rtol=1e-15, atol=0)
    (value, aux), _ = sourcegrad.value_and_grad(loss_with_dict_aux, has_aux=True)(params, x)
    assert value == pytest.approx(first(params, x)) and list(aux) == list(want)
    with pytest.raises(sourcegrad.NonScalarOutputError, match="has_aux=True"):
        sourcegrad.grad(loss_with_dict_aux)(params, x)
