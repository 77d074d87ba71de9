"""Models built on nn.Transformer as the tutorials and real code build them: the language
model of PyTorch's "nn.Transformer" tutorial (PositionalEncoding, TransformerEncoder with a
square subsequent mask, SGD with StepLR and gradient clipping, batchify/get_batch), with its
encoder layers a subclass that overrides a block; and a sequence-to-sequence model that
subclasses nn.Transformer itself (batch_first, norm_first, gelu, padding masks), trained
with Adam and decoded greedily."""

import argparse
import math

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import TransformerEncoder, TransformerEncoderLayer


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class ScaledResidualLayer(TransformerEncoderLayer):
    """An encoder layer whose feed-forward block is scaled down (a subclass that overrides
    one of the layer's blocks, as real models do)."""

    def __init__(self, *args, ff_scale=0.5, **kwargs):
        super().__init__(*args, **kwargs)
        self.ff_scale = ff_scale

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.ff_scale * super()._ff_block(x)


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = ScaledResidualLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(
            encoder_layers, nlayers, enable_nested_tensor=False
        )
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[: seq_len * bsz]
    return data.view(bsz, seq_len).t().contiguous()


def get_batch(source: Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


PAD, BOS, EOS = 0, 1, 2


class CopyTransformer(nn.Transformer):
    """A sequence-to-sequence model that is an nn.Transformer, with its own embeddings and
    generator, and a forward that builds the masks."""

    def __init__(self, vocab, d_model=16, nhead=2, layers=1):
        super().__init__(
            d_model=d_model,
            nhead=nhead,
            num_encoder_layers=layers,
            num_decoder_layers=layers,
            dim_feedforward=32,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.src_emb = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        tgt_mask = self.generate_square_subsequent_mask(tgt.size(1))
        out = super().forward(
            self.src_emb(src),
            self.tgt_emb(tgt),
            tgt_mask=tgt_mask,
            src_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src == PAD,
        )
        return self.generator(out)

    @torch.no_grad()
    def greedy(self, src, steps):
        ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
        for _ in range(steps):
            logits = self(src, ys)
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return ys


def language_model(args):
    torch.manual_seed(0)
    ntokens = 29
    stream = (torch.arange(1200) * 5 + torch.arange(1200) // 7) % ntokens
    train_data = batchify(stream[:1000], 4)
    val_data = batchify(stream[1000:], 2)
    bptt = 12
    model = TransformerModel(ntokens, 16, 2, 32, 2, dropout=0.0)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    for epoch in range(1, 3):
        model.train()
        total_loss = 0.0
        for batch, i in enumerate(range(0, args.steps * bptt, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            loss = criterion(output_flat, targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            total_loss += loss.item()
            print(f"| epoch {epoch:3d} | batch {batch:3d} | lr {scheduler.get_last_lr()[0]:02.2f} "
                  f"| loss {loss.item():5.4f} | ppl {math.exp(loss.item()):8.4f}")  # fmt: skip
        model.eval()
        eval_loss = 0.0
        with torch.no_grad():
            for i in range(0, val_data.size(0) - 1, bptt):
                data, targets = get_batch(val_data, i, bptt)
                seq_len = data.size(0)
                output = model(data)
                eval_loss += seq_len * criterion(output.view(-1, ntokens), targets).item()
        print(f"| end of epoch {epoch:3d} | valid loss {eval_loss / (len(val_data) - 1):5.4f}")
        scheduler.step()


def copy_task(args):
    torch.manual_seed(0)
    vocab = 12
    model = CopyTransformer(vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    lengths = [5, 4, 5, 3]
    src = torch.full((4, 6), PAD, dtype=torch.long)
    for row, n in enumerate(lengths):
        src[row, :n] = (torch.arange(n) * (row + 2)) % (vocab - 3) + 3
        src[row, n] = EOS
    tgt_in = torch.cat([torch.full((4, 1), BOS, dtype=torch.long), src[:, :-1]], dim=1)
    for step in range(args.steps):
        model.train()
        logits = model(src, tgt_in)
        loss = criterion(logits.reshape(-1, vocab), src.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"copy step {step}: loss {loss.item():.5f}")
    model.eval()
    decoded = model.greedy(src, 6)
    print("decoded shape", tuple(decoded.shape), "first row", decoded[0].tolist()[:3])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    language_model(args)
    copy_task(args)


if __name__ == "__main__":
    main()
