"""nn.utils.weight_norm / spectral_norm (torch's hook-based forms) and their removal, against
torch (float64, torch's g, v, u, orig copied in through state_dict).

Three SGD steps through a Conv2d, a ConvTranspose2d (spectral_norm's default dim 1) and a
Linear: outputs, gradients wrt the new parameters, the state dict (the power iteration's
u and v updated in place in training only), eval, parameter names, the error of a second
registration, and the weight baked back in by remove_* must be torch's.
"""

import itertools
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

X = np.sin(np.arange(2 * 4 * 5 * 5) * 0.7).reshape(2, 4, 5, 5)


def program(lib, kind, dim, which, weights):
    nn = lib.nn
    if which == "conv":
        m = nn.Conv2d(4, 3, 3)
    elif which == "conv_transpose":
        m = nn.ConvTranspose2d(4, 3, 3)
    else:
        m = nn.Linear(100, 6)
    m = m.double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # weight_norm is deprecated in torch
        if kind == "weight_norm":
            nn.utils.weight_norm(m, dim=dim)
        else:
            nn.utils.spectral_norm(m, n_power_iterations=2, **({} if dim is None else {"dim": dim}))
    if weights:
        m.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    else:
        weights.update({k: v.detach().numpy().copy() for k, v in m.state_dict().items()})
    out = [" ".join(m.state_dict()), " ".join(n for n, _ in m.named_parameters()), repr(m)]
    x = lib.tensor(X if which != "linear" else X.reshape(2, 100))
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.5)
    for i in range(3):
        y = m(x * (i + 1))
        opt.zero_grad()
        (y * y.detach().cos()).sum().backward()
        opt.step()
        out.append(y)
    out += [p.grad for p in m.parameters()] + list(m.state_dict().values())
    m.eval()
    out += [m(x), m.weight]
    again = nn.utils.weight_norm if kind == "weight_norm" else nn.utils.spectral_norm
    with pytest.raises(RuntimeError) as error, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        again(m)
    out.append(str(error.value))
    remove = getattr(nn.utils, "remove_" + kind)
    remove(m)
    out += [" ".join(m.state_dict()), m.weight, isinstance(m.weight, nn.Parameter)]
    with pytest.raises(ValueError) as error:
        remove(m)
    out.append(str(error.value).split(" not found")[0])
    return out


@pytest.mark.parametrize(
    "kind, dim, which",
    [
        *itertools.product(["weight_norm"], [0, 1, None], ["conv", "conv_transpose", "linear"]),
        *itertools.product(["spectral_norm"], [None, 1], ["conv", "conv_transpose", "linear"]),
    ],
)
def test_weight_and_spectral_norm_match_torch(kind, dim, which):
    weights = {}
    expected = program(torch, kind, dim, which, weights)
    got = program(sg, kind, dim, which, weights)
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        if isinstance(a, (str, bool)):
            assert a == b
        else:
            np.testing.assert_allclose(
                b.detach().numpy(), a.detach().numpy(), rtol=1e-9, atol=1e-12
            )
