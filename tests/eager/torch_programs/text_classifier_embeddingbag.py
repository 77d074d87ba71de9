"""The text classifier of the torchtext tutorial ("Text classification with the torchtext
library"): nn.EmbeddingBag in mean mode over a flat tensor of token ids with offsets
marking where each text starts, a linear head, init_weights with uniform_ and zero_,
collate_batch building label/text/offsets (cumsum of the lengths), SGD with StepLR at
gamma 0.1, clip_grad_norm_ at 0.1, and the accuracy of the evaluate loop."""

# torch_programs: rtol=1e-5

import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader

VOCAB = 40
TEXTS = [
    (0, [1, 5, 7, 9, 3]),
    (1, [11, 12, 30, 31]),
    (2, [20, 21, 22]),
    (3, [33, 34, 35, 36, 37, 38]),
    (0, [2, 5, 9]),
    (1, [12, 13, 14, 30, 15, 16, 17]),
    (2, [21, 23, 24, 25]),
    (3, [35, 39, 36]),
    (0, [4, 6, 8, 1]),
    (1, [31, 11]),
    (2, [22, 26, 27, 28, 29]),
    (3, [37, 38, 39, 34, 33]),
]


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(_label)
        processed_text = torch.tensor(_text, dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def train(model, dataloader, optimizer, criterion, epoch):
    model.train()
    total_acc, total_count = 0, 0
    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        print(f"epoch {epoch} batch {idx}: loss {loss.item():.8g} grad norm {norm.item():.8g}")
    return total_acc / total_count


def evaluate(model, dataloader, criterion):
    model.eval()
    total_acc, total_count, total_loss = 0, 0, 0.0
    with torch.no_grad():
        for label, text, offsets in dataloader:
            predicted_label = model(text, offsets)
            total_loss += criterion(predicted_label, label).item() * label.size(0)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count, total_loss / total_count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(1)
    model = TextClassificationModel(VOCAB, 16, 4)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    train_loader = DataLoader(TEXTS, batch_size=4, shuffle=True, collate_fn=collate_batch)
    valid_loader = DataLoader(TEXTS[::2], batch_size=3, shuffle=False, collate_fn=collate_batch)
    total_accu = None
    for epoch in range(1, 5):
        train_acc = train(model, train_loader, optimizer, criterion, epoch)
        accu_val, loss_val = evaluate(model, valid_loader, criterion)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        print(f"end of epoch {epoch}: train acc {train_acc:.3f} valid acc {accu_val:.3f} "
              f"valid loss {loss_val:.8g} lr {scheduler.get_last_lr()[0]:.6g}")  # fmt: skip
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
