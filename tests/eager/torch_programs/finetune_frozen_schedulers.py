"""Fine-tuning as the transfer-learning tutorial and real fine-tuning scripts do it: a
"pretrained" backbone (trained briefly here, then saved and reloaded) whose early layers
are frozen with requires_grad_(False), a new head, the optimizer given only parameters
that require grad in param groups with different learning rates (backbone lr / 10),
then the schedules real code uses: StepLR, CosineAnnealingLR, OneCycleLR (per batch)
and LambdaLR (warm-up), with clip_grad_norm_ and the learning rates printed each step."""

# torch_programs: rtol=1e-5

import argparse
import io
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(10, 32), nn.LayerNorm(32), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Linear(32, 32), nn.Tanh())
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        return self.fc(self.layer2(self.layer1(x)))


def batches(step, n=16):
    t = torch.arange(n * 10, dtype=torch.float32).view(n, 10)
    x = torch.cos(t * 0.37 + step * 1.7)
    y = (torch.arange(n) + step) % 3
    return x, y


def make_optimizer(model, kind):
    head = [p for p in model.fc.parameters()]
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("fc.")]
    groups = [{"params": body, "lr": 1e-3}, {"params": head}]
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=1e-2, momentum=0.9, weight_decay=1e-4)
    return torch.optim.AdamW(groups, lr=1e-2, weight_decay=0.05)


def run(model, optimizer, scheduler, per_batch, steps, tag):
    for step in range(steps):
        x, y = batches(step)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        total = torch.nn.utils.clip_grad_norm_(
            [p for p in model.parameters() if p.requires_grad], max_norm=0.5
        )
        optimizer.step()
        if per_batch:
            scheduler.step()
        lrs = " ".join(f"{lr:.8g}" for lr in scheduler.get_last_lr())
        print(f"{tag} step {step}: loss {loss.item():.8g} norm {total.item():.8g} lr {lrs}")
    if not per_batch:
        scheduler.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    pretrained = Backbone()
    opt = torch.optim.SGD(pretrained.parameters(), lr=0.1)
    for step in range(3):
        x, y = batches(100 + step)
        loss = F.cross_entropy(pretrained(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    buffer = io.BytesIO()
    torch.save(pretrained.state_dict(), buffer)
    buffer.seek(0)

    model = Backbone()
    model.load_state_dict(torch.load(buffer))
    for param in model.layer1.parameters():
        param.requires_grad_(False)
    model.fc = nn.Linear(32, 3)
    nn.init.zeros_(model.fc.weight)  # a zero-initialised new head, as fine-tuning recipes do
    nn.init.zeros_(model.fc.bias)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    print(
        "frozen", frozen, "trainable", sum(p.numel() for p in model.parameters() if p.requires_grad)
    )

    optimizer = make_optimizer(model, "sgd")
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    for epoch in range(3):
        run(model, optimizer, scheduler, False, 2, f"steplr epoch {epoch}")
    optimizer = make_optimizer(model, "sgd")
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4, eta_min=1e-5)
    for epoch in range(3):
        run(model, optimizer, scheduler, False, 2, f"cosine epoch {epoch}")
    optimizer = make_optimizer(model, "adamw")
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=[1e-3, 1e-2], total_steps=8, pct_start=0.25
    )
    run(model, optimizer, scheduler, True, 8, "onecycle")
    optimizer = make_optimizer(model, "adamw")
    warmup = 3
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda=[lambda s: min(1.0, (s + 1) / warmup), lambda s: 0.9**s]
    )
    run(model, optimizer, scheduler, True, 5, "lambda")
    unchanged = all(
        torch.equal(a, b) for a, b in zip(model.layer1.parameters(), pretrained.layer1.parameters())
    )
    print("frozen layer unchanged:", unchanged, "grad", model.layer1[0].weight.grad)
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
