"""Constrained weights through torch.nn.utils.parametrize as the "Parametrizations"
tutorial and GAN code write them: parametrizations.weight_norm on a linear layer,
parametrizations.spectral_norm (power iteration buffers _u, _v) on another,
orthogonal on a square one, and a custom Symmetric parametrization registered with
register_parametrization; trained with Adam, the state_dict (with the
parametrizations' original tensors and buffers) saved to an io.BytesIO with torch.save,
loaded with torch.load into a fresh model, and training continued in both."""

# torch_programs: rtol=1e-5

import argparse
import io
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = parametrizations.weight_norm(nn.Linear(6, 8))
        self.sym = nn.Linear(8, 8)
        P.register_parametrization(self.sym, "weight", Symmetric())
        self.orth = parametrizations.orthogonal(nn.Linear(8, 8, bias=False))
        self.out = parametrizations.spectral_norm(nn.Linear(8, 3))

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        h = F.gelu(self.sym(h))
        h = self.orth(h)
        return self.out(h)


def data(step):
    t = torch.arange(10 * 6, dtype=torch.float32).view(10, 6)
    x = torch.sin(t * 0.3 + step)
    y = (torch.arange(10) + step) % 3
    return x, y


def train(model, optimizer, steps, start, tag):
    model.train()
    for step in range(start, start + steps):
        x, y = data(step)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"{tag} step {step}: loss {loss.item():.8g}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = Net()
    print("parametrized:", P.is_parametrized(model.sym), P.is_parametrized(model.sym, "bias"))
    print("state keys:", sorted(model.state_dict().keys()))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    train(model, optimizer, 5, 0, "first")
    w = model.sym.weight
    print("symmetric:", torch.allclose(w, w.T), "orthogonal error",
          f"{(model.orth.weight.T @ model.orth.weight - torch.eye(8)).abs().max().item() < 1e-5}")  # fmt: skip
    model.eval()
    with torch.no_grad():
        sigma = torch.linalg.matrix_norm(model.out.weight, ord=2)
    print(f"spectral norm of the normalised weight {sigma.item():.6f}")
    model.train()

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh = Net()
    fresh.load_state_dict(torch.load(buffer))
    fresh_optimizer = torch.optim.Adam(fresh.parameters(), lr=5e-3)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    x, _ = data(0)
    model.eval(), fresh.eval()
    with torch.no_grad():
        print("reloaded computes the same:", torch.allclose(model(x), fresh(x), atol=1e-6))
    train(model, optimizer, 3, 5, "continued")
    train(fresh, fresh_optimizer, 3, 5, "reloaded")
    with P.cached():
        print(f"cached forward {model(x).sum().item():.8g}")
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
