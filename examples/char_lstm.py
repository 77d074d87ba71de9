"""A character-level LSTM language model on a bundled public-domain paragraph, written as a
PyTorch user writes it (nn.Module, DataLoader, optimizer, scheduler, torch.save), run by
sourcegrad's eager mode.

The same file runs with real PyTorch (--torch), and with the model compiled by
`torch.compile` -- sourcegrad's: the embedding, the LSTM's loop over time and the output
layer run as generated numpy code, one node in the graph (--compile).
examples/compare_training.py runs all three and draws the loss curves.

Run: python examples/char_lstm.py [--torch | --compile] [--epochs 4] [--json out.json]
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
        from torch.utils.data import DataLoader, Dataset
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
    from sourcegrad.utils.data import DataLoader, Dataset

# The opening of Lewis Carroll's "Alice's Adventures in Wonderland" (1865, public domain).
TEXT = (
    "Alice was beginning to get very tired of sitting by her sister on the bank, and of "
    "having nothing to do: once or twice she had peeped into the book her sister was "
    "reading, but it had no pictures or conversations in it, 'and what is the use of a "
    "book,' thought Alice 'without pictures or conversations?' So she was considering in "
    "her own mind (as well as she could, for the hot day made her feel very sleepy and "
    "stupid), whether the pleasure of making a daisy-chain would be worth the trouble of "
    "getting up and picking the daisies, when suddenly a White Rabbit with pink eyes ran "
    "close by her. There was nothing so very remarkable in that; nor did Alice think it so "
    "very much out of the way to hear the Rabbit say to itself, 'Oh dear! Oh dear! I shall "
    "be late!' (when she thought it over afterwards, it occurred to her that she ought to "
    "have wondered at this, but at the time it all seemed quite natural); but when the "
    "Rabbit actually took a watch out of its waistcoat-pocket, and looked at it, and then "
    "hurried on, Alice started to her feet, for it flashed across her mind that she had "
    "never before seen a rabbit with either a waistcoat-pocket, or a watch to take out of "
    "it, and burning with curiosity, she ran across the field after it, and fortunately was "
    "just in time to see it pop down a large rabbit-hole under the hedge."
)


class CharDataset(Dataset):
    """Windows of `length` characters, each with the next character at every position."""

    def __init__(self, text, length, stride):
        self.chars = sorted(set(text))
        self.ids = np.array([self.chars.index(c) for c in text], dtype=np.int64)
        self.starts = list(range(0, len(text) - length - 1, stride))
        self.length = length

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        s = self.starts[i]
        chunk = torch.from_numpy(self.ids[s : s + self.length + 1])
        return chunk[:-1], chunk[1:]


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed_size=16, hidden_size=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


def sample(model, dataset, start="Alice ", length=60):
    """Greedy continuation of `start` (the model reruns on the whole prefix: it is short)."""
    model.eval()
    ids = [dataset.chars.index(c) for c in start]
    with torch.no_grad():
        for _ in range(length):
            logits = model(torch.tensor([ids]))
            ids.append(int(logits[0, -1].argmax()))
    return "".join(dataset.chars[i] for i in ids)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", action="store_true", help="run with real PyTorch")
    parser.add_argument("--compile", action="store_true", help="compile the model")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument(
        "--max-batches",
        type=int,
        default=None,
        help="stop each epoch after this many batches (smoke tests)",
    )
    parser.add_argument("--json", help="write the losses and epoch times here")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    dataset = CharDataset(TEXT, length=24, stride=3)
    loader = DataLoader(
        dataset,
        batch_size=32,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(0),
    )
    vocab = len(dataset.chars)

    model = CharLSTM(vocab)
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)

    losses, epoch_times = [], []
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        for i, (x, y) in enumerate(loader):
            if args.max_batches is not None and i >= args.max_batches:
                break
            optimizer.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        epoch_times.append(time.perf_counter() - start)
        print(f"epoch {epoch}  loss {np.mean(losses[-5:]):.4f}  {epoch_times[-1]:.2f} s")

    print("sample:", repr(sample(model, dataset)))
    path = os.path.join(tempfile.mkdtemp(), "char_lstm.pt")
    torch.save({"model": model.state_dict(), "chars": "".join(dataset.chars)}, path)
    print(f"saved the model to {path}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"losses": losses, "epoch_times": epoch_times}, f)
    return losses, epoch_times


if __name__ == "__main__":
    main()
