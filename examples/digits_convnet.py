"""A small convnet on scikit-learn's 8x8 digits, written as a PyTorch user writes it
(nn.Module, DataLoader, optimizer, scheduler, torch.save), run by sourcegrad's eager mode.

The same file runs with real PyTorch (--torch), and with the model compiled by
`torch.compile` -- sourcegrad's, which runs the forward as generated numpy code with one
node in the graph (--compile). examples/compare_training.py runs all three and draws the
loss curves.

Needs scikit-learn: pip install -e ".[examples]"
Run: python examples/digits_convnet.py [--torch | --compile] [--epochs 3] [--json out.json]
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

if "--torch" in sys.argv:
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
    except ImportError:
        sys.exit(
            '--torch needs PyTorch, which is not installed: pip install -e ".[oracle]" '
            "(torch 2.13.0; CPU only: first pip install torch==2.13.0 "
            "--index-url https://download.pytorch.org/whl/cpu)"
        )
else:
    import sourcegrad as torch
    import sourcegrad.nn as nn
    import sourcegrad.nn.functional as F
    from sourcegrad.utils.data import DataLoader, TensorDataset


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))  # 8 x 4 x 4
        x = self.pool(F.relu(self.conv2(x)))  # 16 x 2 x 2
        x = torch.flatten(x, 1)
        x = self.dropout(F.relu(self.fc1(x)))
        return self.fc2(x)


def load_digits(seed=0):
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        sys.exit(
            "this example needs scikit-learn, which is not installed: "
            'pip install -e ".[examples]" (or pip install "sourcegrad[examples]")'
        )

    digits = sklearn_digits()
    X = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(X))
    split = int(0.8 * len(X))
    train, test = order[:split], order[split:]
    return (
        TensorDataset(torch.from_numpy(X[train]), torch.from_numpy(y[train])),
        TensorDataset(torch.from_numpy(X[test]), torch.from_numpy(y[test])),
    )


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
            total += len(y)
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", action="store_true", help="run with real PyTorch")
    parser.add_argument("--compile", action="store_true", help="compile the model")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--max-batches",
        type=int,
        default=None,
        help="stop each epoch after this many batches (smoke tests)",
    )
    parser.add_argument("--json", help="write the losses and epoch times here")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    train_set, test_set = load_digits()
    generator = torch.Generator().manual_seed(0)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, generator=generator)
    test_loader = DataLoader(test_set, batch_size=256)

    model = ConvNet()
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    losses, epoch_times = [], []
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        for i, (x, y) in enumerate(train_loader):
            if args.max_batches is not None and i >= args.max_batches:
                break
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        epoch_times.append(time.perf_counter() - start)
        accuracy = evaluate(model, test_loader)
        print(
            f"epoch {epoch}  loss {np.mean(losses[-10:]):.4f}  test accuracy "
            f"{accuracy:.1%}  {epoch_times[-1]:.2f} s"
        )

    path = os.path.join(tempfile.mkdtemp(), "convnet.pt")
    torch.save(model.state_dict(), path)
    state = torch.load(path)
    print(f"saved {len(state)} tensors to {path}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"losses": losses, "epoch_times": epoch_times, "accuracy": accuracy}, f)
    return losses, epoch_times


if __name__ == "__main__":
    main()
