"""The eager benchmark's models, written as PyTorch code (`import sourcegrad as torch`).

bench/eager.py runs this file twice: as it is (sourcegrad, eager and `sourcegrad.compile`d)
and with its import line swapped for `import torch` (the reference), so both libraries run
the same lines. Small on purpose: at these sizes a training step is mostly dispatch.

* `MLP`: 64-128-128-10 with ReLUs, batch 32, cross-entropy, SGD with momentum;
* `LSTMLM`: an LSTM language model (vocabulary 50, embedding 32, hidden 64, 20 steps,
  batch 16), Adam;
* `GPT`: a nanoGPT-style transformer (vocabulary 65, 2 layers, 4 heads, 64 wide, context 32,
  batch 8), AdamW with parameter groups (no weight decay for biases and norms).
"""

import math

import sourcegrad as torch

nn = torch.nn
F = torch.nn.functional


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=128, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class LSTMLM(nn.Module):
    def __init__(self, vocab=50, emb=32, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return self.fc(out)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        mask = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("bias", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class FeedForward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = FeedForward(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=65, block_size=32, n_layer=2, n_head=4, n_embd=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x)


def gpt_optimizer(model, lr=1e-3):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def workloads():
    """name -> (make model, make optimizer, (input shape, input kind), target's)."""
    return {
        "MLP": (
            MLP,
            lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9),
            ((32, 64), "float", None),
            ((32,), "int", 10),
        ),
        "LSTM LM": (
            LSTMLM,
            lambda m: torch.optim.Adam(m.parameters(), lr=1e-3),
            ((16, 20), "int", 50),
            ((16, 20), "int", 50),
        ),
        "GPT": (
            GPT,
            gpt_optimizer,
            ((8, 32), "int", 65),
            ((8, 32), "int", 65),
        ),
    }


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss
