"""Saving and reloading as programs do it: the whole model with torch.save(model), loaded
back with weights_only=True (refused, then allowed class by class with
torch.serialization.safe_globals, as the error message says) and with weights_only=False;
a checkpoint of state dicts (model, optimizer, epoch) reloaded into fresh objects; training
continued from each, which must give the same losses as the model that was never saved."""

import argparse
import importlib
import os
import pickle
import re

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, n_in=6, hidden=16, n_out=3):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        self.head = nn.Linear(hidden, n_out)
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.seen += x.shape[0]
        return self.head(F.gelu(self.body(x)))


def data():
    x = torch.linspace(-2, 2, 48).reshape(8, 6)
    y = (torch.arange(8) * 5) % 3
    return x, y


def train(model, optimizer, steps, tag):
    x, y = data()
    model.train()
    for step in range(steps):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"{tag} step {step}: loss {loss.item():.6f}")


def load_allowing_what_is_refused(path):
    """torch.load(path) with weights_only=True, allowing each global it refuses (the user
    who trusts the file does this by hand, from the error message)."""
    allowed = []
    while True:
        try:
            with torch.serialization.safe_globals(allowed):
                return torch.load(path), allowed
        except pickle.UnpicklingError as e:
            name = re.search(r"GLOBAL (\S+) was not an allowed global", str(e)).group(1)
            print("weights_only=True refuses", name)
            module, _, attr = name.rpartition(".")
            allowed.append(getattr(importlib.import_module(module), attr))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(model, optimizer, 4, "original")

    path = os.path.join(args.out_dir, "model.pt")
    torch.save(model, path)
    whole, allowed = load_allowing_what_is_refused(path)
    print("allowed", len(allowed), "globals; loaded a", type(whole).__name__)
    trusted = torch.load(path, weights_only=False)
    x, _ = data()
    model.eval(), whole.eval(), trusted.eval()
    with torch.no_grad():
        same = torch.equal(model(x), whole(x)) and torch.equal(model(x), trusted(x))
    print("the reloaded models compute the same:", same, "seen", int(whole.seen))

    ckpt = os.path.join(args.out_dir, "ckpt.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 4}, ckpt)
    checkpoint = torch.load(ckpt)  # weights_only=True: state dicts need nothing allowed
    fresh = Net()
    fresh.load_state_dict(checkpoint["model"])
    fresh_optimizer = torch.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9)
    fresh_optimizer.load_state_dict(checkpoint["optimizer"])
    print("resuming at epoch", checkpoint["epoch"], "momentum buffers",
          len(checkpoint["optimizer"]["state"]))  # fmt: skip
    train(model, optimizer, 3, "continued")
    train(fresh, fresh_optimizer, 3, "resumed")


if __name__ == "__main__":
    main()
