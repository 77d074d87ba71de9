"""Gradient accumulation as training scripts write it for large effective batches: the
loss of each micro-batch divided by accum_steps, backward on each, and every accum_steps
micro-batches clip_grad_value_, optimizer.step() and optimizer.zero_grad(set_to_none=True)
(the gradients become None, not zero); a trailing partial accumulation flushed at the
end of the epoch; torch.randint batches; BatchNorm and a weight-tied decoder."""

# torch_programs: rtol=1e-5

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class TiedAutoencoder(nn.Module):
    def __init__(self, d=12, h=6):
        super().__init__()
        self.enc = nn.Linear(d, h, bias=False)  # (BatchNorm follows: a bias would only be noise)
        self.bn = nn.BatchNorm1d(h)
        self.dec_bias = nn.Parameter(torch.zeros(d))
        self.cls = nn.Linear(h, 2)

    def forward(self, x):
        h = torch.tanh(self.bn(self.enc(x)))
        recon = F.linear(h, self.enc.weight.t(), self.dec_bias)
        return recon, self.cls(h)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--accum_steps", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(3)
    pool_x = torch.sin(torch.arange(64 * 12, dtype=torch.float32).view(64, 12) * 0.21)
    pool_y = (pool_x.sum(1) > 0).long()
    model = TiedAutoencoder()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3, momentum=0.5)
    accum = args.accum_steps
    for epoch in range(2):
        optimizer.zero_grad(set_to_none=True)
        n_micro = 7
        for i in range(n_micro):
            idx = torch.randint(0, 64, (8,))
            x, y = pool_x[idx], pool_y[idx]
            recon, logits = model(x)
            loss = F.mse_loss(recon, x) + F.cross_entropy(logits, y)
            (loss / accum).backward()
            print(f"epoch {epoch} micro {i}: loss {loss.item():.8g} "
                  f"enc grad sum {model.enc.weight.grad.abs().sum().item():.8g}")  # fmt: skip
            if (i + 1) % accum == 0 or i + 1 == n_micro:
                torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
                clipped = max(p.grad.abs().max().item() for p in model.parameters())
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                nones = sum(p.grad is None for p in model.parameters())
                print(f"  step: max |grad| after clipping {clipped:.8g}, {nones} grads None")
        print("running mean", " ".join(f"{v:.8g}" for v in model.bn.running_mean.tolist()))
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
