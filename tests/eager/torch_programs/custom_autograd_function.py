"""Custom autograd Functions as the "Extending PyTorch" notes write them: a LinearFunction
(forward saves input, weight, bias with ctx.save_for_backward and backward computes only
the gradients ctx.needs_input_grad asks for), a top-k pooling Function that returns the
values and the (non-differentiable, ctx.mark_non_differentiable) indices, and a
straight-through clamp; each checked with torch.autograd.gradcheck in float64, then used
inside a model trained with SGD."""

# torch_programs: rtol=1e-5

import argparse
import os

import torch
import torch.nn as nn
from torch.autograd import Function, gradcheck


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class TopKPool(Function):
    """The k largest values along the last dimension and where they were."""

    @staticmethod
    def forward(ctx, x, k):
        values, indices = x.topk(k, dim=-1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape)
        grad.scatter_(-1, indices, grad_values)
        return grad, None


class StraightThroughClamp(Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None, None


class Linear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in).uniform_(-0.3, 0.3))
        self.bias = nn.Parameter(torch.empty(n_out).uniform_(-0.1, 0.1))

    def forward(self, x):
        return LinearFunction.apply(x, self.weight, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(8, 16)
        self.fc2 = Linear(4, 2)

    def forward(self, x):
        h = StraightThroughClamp.apply(self.fc1(x), -1.0, 1.0)
        top, idx = TopKPool.apply(h, 4)
        return self.fc2(top), idx


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    x64 = torch.linspace(-1, 1, 20, dtype=torch.double).view(4, 5).requires_grad_()
    w64 = torch.cos(torch.arange(15, dtype=torch.double)).view(3, 5).requires_grad_()
    b64 = torch.sin(torch.arange(3, dtype=torch.double)).requires_grad_()
    print(
        "gradcheck linear:", gradcheck(LinearFunction.apply, (x64, w64, b64), eps=1e-6, atol=1e-4)
    )
    w_only = torch.cos(torch.arange(15, dtype=torch.double)).view(3, 5).requires_grad_()
    print("gradcheck linear, weight only:",
          gradcheck(LinearFunction.apply, (x64.detach(), w_only, None)))  # fmt: skip
    y64 = torch.sin(torch.arange(12, dtype=torch.double) * 1.3).view(2, 6).requires_grad_()
    print("gradcheck topk:", gradcheck(lambda t: TopKPool.apply(t, 3)[0], (y64,)))

    values, indices = TopKPool.apply(y64, 2)
    print("indices require grad:", indices.requires_grad, "values:", values.requires_grad)
    out = LinearFunction.apply(x64.detach(), w_only)
    out.sum().backward()
    print("needs_input_grad gave a weight grad:", w_only.grad.sum().item())

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.8)
    data = torch.tanh(torch.arange(32 * 8, dtype=torch.float32).view(32, 8) * 0.05 - 3)
    target = (data[:, :4].sum(1) > data[:, 4:].sum(1)).long()
    for step in range(8):
        logits, idx = model(data)
        loss = nn.functional.cross_entropy(logits, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.8g} top index sum {idx.sum().item()} "
              f"fc1 grad {model.fc1.weight.grad.norm().item():.8g}")  # fmt: skip
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
