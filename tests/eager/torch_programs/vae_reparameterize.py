"""The variational autoencoder of the PyTorch examples (examples/vae): fc1 -> (fc21, fc22)
for mu and logvar, reparameterize as mu + eps * exp(0.5 * logvar), a sigmoid decoder,
the loss F.binary_cross_entropy(recon, x, reduction='sum') plus the KL divergence
-0.5 * sum(1 + logvar - mu^2 - exp(logvar)), Adam, and a test pass under no_grad.

The noise eps is passed in (fixed per batch, computed from the batch index), so that
both libraries draw the same; the data are deterministic grey-level images in [0, 1]."""

# torch_programs: rtol=1e-5

import argparse
import math
import os

import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

D_IN, D_HID, D_LAT = 36, 24, 4


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(D_IN, D_HID)
        self.fc21 = nn.Linear(D_HID, D_LAT)
        self.fc22 = nn.Linear(D_HID, D_LAT)
        self.fc3 = nn.Linear(D_LAT, D_HID)
        self.fc4 = nn.Linear(D_HID, D_IN)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, D_IN))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, D_IN), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD, BCE, KLD


def images(n):
    i = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    j = torch.arange(D_IN, dtype=torch.float32).unsqueeze(0)
    return (torch.sin(0.7 * i + 0.31 * j) * torch.cos(0.13 * i * j / 7) + 1) / 2


def fixed_eps(batch_idx, n):
    k = torch.arange(n * D_LAT, dtype=torch.float32).view(n, D_LAT)
    return torch.sin(k * 12.9898 + batch_idx * 78.233) * math.sqrt(3.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(1)
    data = images(40)
    train_loader = torch.utils.data.DataLoader(data[:32], batch_size=8, shuffle=False)
    test_data = data[32:]
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_loss = 0
        for batch_idx, x in enumerate(train_loader):
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(x, fixed_eps(batch_idx, x.size(0)))
            loss, bce, kld = loss_function(recon_batch, x, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            print(f"epoch {epoch} batch {batch_idx}: loss {loss.item():.8g} "
                  f"bce {bce.item():.8g} kld {kld.item():.8g}")  # fmt: skip
        print(f"====> Epoch: {epoch} Average loss: {train_loss / 32:.8g}")
        model.eval()
        with torch.no_grad():
            recon, mu, logvar = model(test_data, torch.zeros(test_data.size(0), D_LAT))
            test_loss = loss_function(recon, test_data, mu, logvar)[0].item() / len(test_data)
            sample = model.decode(fixed_eps(99, 2))
        print(f"====> Test set loss: {test_loss:.8g} sample mean {sample.mean().item():.8g}")
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
