"""A character-level language model as char-rnn ports write it: nn.Embedding -> nn.GRU
(two layers, batch_first) -> nn.Linear over the vocabulary, trained with truncated
backpropagation through time (the hidden state carried across consecutive chunks and
detached between them: `hidden = hidden.detach()`), Adam and clip_grad_norm_; then text
generated under torch.no_grad with a temperature and torch.multinomial.

The two libraries draw different samples, so generation feeds back the most likely
character (what it does at temperature -> 0) and checks the multinomial draw only for
its range; the logits at each generated position are what must agree."""

# torch_programs: rtol=1e-5

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = (
    "the quick brown fox jumps over the lazy dog. "
    "a stitch in time saves nine. the early bird catches the worm. "
) * 3


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size=24, n_layers=2):
        super().__init__()
        self.n_layers, self.hidden_size = n_layers, hidden_size
        self.encoder = nn.Embedding(vocab_size, 16)
        self.rnn = nn.GRU(16, hidden_size, n_layers, batch_first=True)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden):
        output, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden_size)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--bptt", type=int, default=12)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    batch_size = 4
    n = (data.size(0) - 1) // batch_size
    inputs = data[: n * batch_size].view(batch_size, n)
    targets = data[1 : n * batch_size + 1].view(batch_size, n)

    model = CharRNN(len(chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        hidden = model.init_hidden(batch_size)
        for i, start in enumerate(range(0, n - 1, args.bptt)):
            x = inputs[:, start : start + args.bptt]
            y = targets[:, start : start + args.bptt]
            hidden = hidden.detach()
            logits, hidden = model(x, hidden)
            loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            print(f"epoch {epoch} chunk {i}: loss {loss.item():.8g} hidden norm "
                  f"{hidden.norm().item():.8g} requires_grad {hidden.requires_grad}")  # fmt: skip

    model.eval()
    generator = torch.Generator().manual_seed(42)
    with torch.no_grad():
        hidden = model.init_hidden(1)
        prime = torch.tensor([[stoi[c] for c in "the "]])
        logits, hidden = model(prime, hidden)
        out = "the "
        for _ in range(10):
            last = logits[0, -1] / 0.8
            probs = F.softmax(last, dim=-1)
            drawn = torch.multinomial(probs, num_samples=1, generator=generator)
            assert 0 <= drawn.item() < len(chars)
            print("logits", " ".join(f"{v:.7g}" for v in last.tolist()[:8]),
                  "max", f"{last.max().item():.8g}")  # fmt: skip
            nxt = torch.argmax(probs).item()
            out += chars[nxt]
            logits, hidden = model(torch.tensor([[nxt]]), hidden)
        print("generated", repr(out), "grad enabled", torch.is_grad_enabled())
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
