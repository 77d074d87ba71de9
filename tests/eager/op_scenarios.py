"""Op-by-op scenarios run on torch and on sourcegrad: values, nodes, graph shape, gradients.

`PRELUDE` defines the inputs and `show(expr)`, which prints the result's repr,
the names of its grad_fn and of two levels of next_functions, and after a
backward with fixed weights the gradient of every leaf that received one.
Each entry of `EXPRESSIONS` is one scenario.
"""

PRELUDE = """
import torch
import torch.nn.functional as F

def leaves():
    global x, y, v, M, s, c, idx, B, P
    x = torch.tensor([[1.5, -2., 3.], [0.5, 4., -1.]], requires_grad=True)
    y = torch.tensor([[0.5, 1., -2.], [3., 0.25, 2.]], requires_grad=True)
    v = torch.tensor([1., -2., 0.5], requires_grad=True)
    M = torch.tensor([[1., 2.], [0.5, -1.], [2., 0.]], requires_grad=True)
    s = torch.tensor(1.5, requires_grad=True)
    c = torch.tensor(2.)
    idx = torch.tensor([2, 0])
    B = torch.tensor([[[1., 2.], [3., 4.]], [[0.5, -1.], [2., 1.]]], requires_grad=True)
    P = torch.tensor([[0.25, 0.5, 1.], [2., 1.5, 0.75]], requires_grad=True)

def names(fn, depth=2):
    if fn is None:
        return "None"
    if depth == 0:
        return fn.name()
    inner = ", ".join(f"{names(f, depth - 1)}:{n}" for f, n in fn.next_functions)
    return f"{fn.name()}({inner})"

def show(expr):
    leaves()
    out = eval(expr)
    if isinstance(out, tuple):
        out = out[0]
    print(expr, "->", repr(out))
    print("  dtype", out.dtype, "shape", tuple(out.shape), "requires_grad", out.requires_grad,
          "leaf", out.is_leaf)
    print("  graph", names(out.grad_fn))
    if out.requires_grad and out.dtype.is_floating_point:
        w = torch.arange(1., out.numel() + 1.).reshape(out.shape).to(out.dtype)
        (out * w).sum().backward()
        for name in ("x", "y", "v", "M", "s", "B", "P"):
            g = globals()[name].grad
            if g is not None:
                print("  grad", name, repr(g))
"""

EXPRESSIONS = [
    # arithmetic and broadcasting
    "x + y",
    "x + v",
    "x + 1",
    "2 + x",
    "torch.add(x, y, alpha=2)",
    "x - y",
    "x - 1",
    "1 - x",
    "x * y",
    "x * 2",
    "x * c",
    "x * s",
    "x / y",
    "x / 2",
    "2 / x",
    "x ** 2",
    "P ** 2.5",
    "P ** x",
    "x ** s",
    "x ** c",
    "2 ** x",
    "-x",
    "x.square()",
    "x % 2",
    "x // 2",
    "x * torch.tensor([1, 2, 3])",
    "x * torch.tensor([1., 2., 3.], dtype=torch.float64)",
    "torch.tensor([1, 2]) + 1.5",
    "torch.tensor([1, 2]) / 2",
    "torch.tensor([True, False]) + 1",
    # one-input elementwise
    "P.exp()",
    "P.log()",
    "P.sqrt()",
    "P.rsqrt()",
    "x.sin()",
    "x.cos()",
    "(x / 2).tan()",
    "x.tanh()",
    "x.sigmoid()",
    "torch.relu(x)",
    "F.relu(x)",
    "x.relu()",
    "x.abs()",
    "x.sign()",
    "x.floor()",
    "x.ceil()",
    "x.round()",
    "x.trunc()",
    "P.log1p()",
    "x.expm1()",
    "x.exp2()",
    "P.log2()",
    "P.log10()",
    "x.sinh()",
    "x.cosh()",
    "(x / 5).asin()",
    "(x / 5).acos()",
    "x.atan()",
    "x.asinh()",
    "(P + 1).acosh()",
    "(x / 5).atanh()",
    "x.erf()",
    "P.reciprocal()",
    "torch.atan2(x, y)",
    "torch.maximum(x, y)",
    "torch.minimum(x, y)",
    "torch.max(x, y)",
    "F.leaky_relu(x)",
    # clamp and where
    "x.clamp(min=0)",
    "x.clamp(-1, 1)",
    "x.clamp(max=1)",
    "x.clip(0, 1)",
    "x.clamp(min=y)",
    "torch.clamp(x, max=v)",
    "x.clamp_min(0)",
    "x.clamp_max(0)",
    "torch.where(x > 0, x, y)",
    "torch.where(x > 2, x, 0.)",
    "x.masked_fill(x > 0, 0.)",
    # reductions
    "x.sum()",
    "x.sum(0)",
    "x.sum(dim=1, keepdim=True)",
    "x.sum((0, 1))",
    "x.mean()",
    "x.mean(1)",
    "P.prod()",
    "P.prod(1)",
    "x.max()",
    "x.max(dim=1).values",
    "x.max(1)[1]",
    "x.min()",
    "x.min(dim=0).values",
    "x.amax(1)",
    "x.amin(0)",
    "x.argmax()",
    "x.argmax(1)",
    "x.var()",
    "x.var(1)",
    "x.var(0, unbiased=False)",
    "x.std()",
    "x.std(1, keepdim=True)",
    "x.norm()",
    "x.norm(dim=1)",
    "x.norm(p=1)",
    "x.logsumexp(1)",
    "x.softmax(dim=1)",
    "x.log_softmax(dim=1)",
    "F.softmax(x, dim=0)",
    "F.log_softmax(x, 1)",
    "x.cumsum(1)",
    "P.cumprod(1)",
    "x.all()",
    "(x > 0).any(1)",
    # matrix products
    "x @ M",
    "x.mm(M)",
    "torch.matmul(x, M)",
    "v @ v",
    "x @ v",
    "M.t() @ M",
    "x[0] @ M",
    "x[None] @ M[None]",
    "torch.bmm(x[None], M[None])",
    "B @ B",
    "B @ torch.ones(2, 3)",
    "torch.outer(v, v)",
    "torch.dot(v, v)",
    "torch.mv(x, v)",
    # shapes and views
    "x.reshape(3, 2)",
    "x.view(-1)",
    "x.flatten()",
    "x.t().reshape(-1)",
    "x.transpose(0, 1)",
    "x.t()",
    "x.T",
    "x.permute(1, 0)",
    "x.unsqueeze(0)",
    "x.unsqueeze(0).squeeze(0)",
    "x.unsqueeze(0).squeeze()",
    "v.expand(2, 3)",
    "v.expand_as(x)",
    "v.repeat(2, 1)",
    "x.tile((2,))",
    "x.clone()",
    "x.t().contiguous()",
    "x.contiguous()",
    "x.double()",
    "x.to(torch.float64)",
    "x.float()",
    "x.long()",
    "x.flip(0)",
    "x.roll(1)",
    "x.triu()",
    "x.tril(-1)",
    "x.diagonal()",
    "x.squeeze(0)",
    "torch.flatten(B, 1)",
    # joining and splitting
    "torch.cat([x, y])",
    "torch.diff(x)",
    "torch.diff(x, n=2, dim=0, prepend=y, append=x)",
    "x.diff(dim=0)",
    "torch.cat([x, y], 1)",
    "torch.cat([x, torch.zeros(1, 3)])",
    "torch.stack([x, y])",
    "torch.stack([x, y], 2)",
    "torch.hstack([x, y])",
    "torch.vstack([x, y])",
    "x.split(1)[0]",
    "x.chunk(3, 1)[1]",
    "x.split([1, 2], dim=1)[1]",
    "x.unbind(0)[1]",
    "x.unbind(1)[0] + x.unbind(1)[2]",
    # indexing
    "x[0]",
    "x[-1]",
    "x[:, 1]",
    "x[0, 1]",
    "x[:, 1:]",
    "x[0:1]",
    "x[:, ::2]",
    "x[:, [0, 2]]",
    "x[[0, 1]]",
    "x[torch.tensor([1])]",
    "x[x > 0]",
    "x[None]",
    "x[..., None]",
    "x[0, None]",
    "x[1:, [0, 2]]",
    "x[0, [0, 2]]",
    "x[[0, 1], [2, 0]]",
    "x[idx.clamp(max=1)]",
    "x.narrow(1, 0, 2)",
    "x.select(0, 1)",
    "x.gather(1, torch.tensor([[0], [1]]))",
    "x.index_select(1, torch.tensor([0, 2]))",
    "x.masked_select(x > 2)",
    "x.sort(dim=1).values",
    "torch.median(x)",
    "torch.isposinf(x / 0.0)",
    "torch.median(x, 1)",
    "x.median(0, keepdim=True)",
    "torch.nanmedian(torch.where(x > 3, float('nan'), x), 1)",
    "torch.nanmedian(torch.where(x > 3, float('nan'), x))",
    "torch.median(torch.tensor([[2., 2., 1., 2.], [5., -1., 0.5, 7.]], requires_grad=True))",
    "torch.kthvalue(x, 2)",
    "x.kthvalue(1, 0, True)",
    "x.sort(dim=1).indices",
    "x.topk(2).values",
    "v[[0, 0, 1]]",
    # losses and activations
    "F.mse_loss(x, torch.zeros_like(x))",
    "F.mse_loss(x, y)",
    "F.mse_loss(x, y, reduction='sum')",
    "F.cross_entropy(x, torch.tensor([0, 2]))",
    "F.cross_entropy(x, torch.tensor([0, 2]), reduction='sum')",
    "F.cross_entropy(x, torch.tensor([0, 2]), reduction='none')",
    "F.nll_loss(x.log_softmax(1), torch.tensor([1, 1]))",
    "F.linear(x, M.t(), v[:2])",
    "F.linear(x, M.t())",
]


SEMANTICS = {
    # in-place ops, views and the version counter
    "inplace chain": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
y.add_(1); y.mul_(x); y.sub_(0.5); y.div_(2); y.pow_(2); y.clamp_(max=20)
print(y, y._version, y.grad_fn.name(), y.grad_fn.next_functions[0][0].name())
y.sum().backward(); print(x.grad)
""",
    "views share version": """
import torch
x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
y = x * 1
a, b = y[0], y[:, 1]
t = y.t()
a.mul_(10)
print(y, y.grad_fn.name(), a.grad_fn.name(), b.grad_fn.name(), t.grad_fn.name())
print(y._version, a._version, b._version, t._version)
(y.sum() + b.sum() * 2 + t[0, 1]).backward(); print(x.grad)
""",
    "setitem variants": """
import torch
x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
v = torch.tensor([7., 8.], requires_grad=True)
y = x * 1; y[:, 0] = v; print(y)
y[y > 4] = 0.; print(y, y.grad_fn.name())
y[1] = v.sum(); print(y, y.grad_fn.next_functions)
y.sum().backward(); print(x.grad, v.grad)
t = torch.zeros(3); t[1:] = v; print(t, t.is_leaf, t.grad_fn.name())
t.sum().backward(); print(v.grad)
""",
    "copy_ and detach": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
buf = torch.zeros(3)
buf.copy_(x * 2); print(buf, buf.grad_fn.name(), buf.grad_fn.next_functions)
buf.sum().backward(); print(x.grad)
d = (x * 3).detach(); d += 1; print(d, d.requires_grad)
print(x.detach()._version, x.data.requires_grad)
""",
    "dtype promotion": """
import torch
i32 = torch.tensor([1, 2], dtype=torch.int32)
i64 = torch.tensor([1, 2])
f16 = torch.tensor([1., 2.], dtype=torch.float16)
f32 = torch.tensor([1., 2.])
f64 = torch.tensor([1., 2.], dtype=torch.float64)
b = torch.tensor([True, False])
for name, r in [("i32+1", i32 + 1), ("i32+1.5", i32 + 1.5), ("i32+i64", i32 + i64),
                ("i64+f16", i64 + f16), ("f16+f32", f16 + f32), ("f32+f64", f32 + f64),
                ("f32+f64 0-dim", f32 + torch.tensor(1., dtype=torch.float64)),
                ("i64+f64 0-dim", i64 + torch.tensor(1., dtype=torch.float64)),
                ("b+b", b + b), ("b+1", b + 1), ("b*1.5", b * 1.5), ("i64/i64", i64 / i64),
                ("i64//2", i64 // 2), ("i64**2", i64 ** 2), ("f16*1e3", f16 * 1e3),
                ("i32.sum", i32.sum()), ("b.sum", b.sum()), ("f16.mean", f16.mean()),
                ("i64>1.5", i64 > 1.5), ("exp(i64)", i64.exp()), ("abs(i32)", i32.abs())]:
    print(name, r.dtype, r)
try: i64.add_(1.5)
except RuntimeError as e: print(e)
try: i64.mean()
except RuntimeError as e: print(e)
""",
    "printing": """
import torch
for t in [torch.tensor([0.1, 200.]), torch.tensor([1e-5, 1.]), torch.tensor([123456789.]),
          torch.tensor([-1., 2.5]), torch.arange(10), torch.tensor([[1, -20], [3, 4]]),
          torch.tensor([True, False]), torch.zeros(0, 3), torch.tensor([], dtype=torch.int64),
          torch.ones(2, dtype=torch.int32), torch.tensor(3, dtype=torch.float16),
          torch.arange(2000.).reshape(2, 1000), torch.linspace(0, 1, 30),
          torch.tensor([float('nan'), 1.]), torch.tensor([float('inf'), -1.5]),
          torch.tensor([-0.0, 0.0]), torch.tensor([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]]),
          torch.tensor([1.0e-3, 1.0]), torch.tensor(1e-5), torch.tensor([1.23456e-8, 1]),
          torch.arange(12.).reshape(3, 4) / 7, torch.tensor([1., 2.], dtype=torch.float64) / 3,
          torch.arange(100) * 1000, torch.tensor(7), torch.tensor([[0.5]]),
          torch.tensor([1., 2.], requires_grad=True) * 1e6]:
    print(t)
print(torch.tensor([1., 2.]).shape, torch.float32, torch.int64, torch.Size([2, 3]))
print(f"{torch.tensor(2.5)}", f"{torch.tensor(2.5):.3f}", str(torch.tensor([1.5])))
""",
    "grad modes in threads": """
import threading
import torch
x = torch.tensor([1., 2.], requires_grad=True)
results = {}
def worker():
    results["thread"] = (torch.is_grad_enabled(), (x * 2).requires_grad)
with torch.no_grad():
    t = threading.Thread(target=worker); t.start(); t.join()
    results["main"] = (torch.is_grad_enabled(), (x * 2).requires_grad)
print(results["main"], results["thread"])
""",
    "optimizers": """
import torch
for make in (lambda p: torch.optim.SGD(p, lr=0.1),
             lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
             lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
             lambda p: torch.optim.Adam(p, lr=0.1),
             lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.9), weight_decay=0.1,
                                        amsgrad=True)):
    w = torch.tensor([[1., -2.], [0.5, 3.]], requires_grad=True)
    b = torch.tensor([0.1, -0.2], requires_grad=True)
    opt = make([w, b])
    X = torch.tensor([[1., 2.], [3., -1.], [0.5, 0.5]])
    t = torch.tensor([[1., 0.], [0., 1.], [1., 1.]])
    for step in range(5):
        opt.zero_grad()
        loss = ((X @ w + b - t) ** 2).mean()
        loss.backward()
        opt.step()
    # losses are printed to 5 places: float32 sums differ from torch's in the last bits
    print(type(opt).__name__, round(loss.item(), 5), w, b, w.grad is None)
    opt.zero_grad(); print(w.grad)
""",
    "training loop": """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
X = torch.tensor([[0.2, -1.], [1.5, 0.3], [-0.7, 0.8], [0.1, 0.1]])
labels = torch.tensor([0, 1, 1, 0])
W = torch.nn.Parameter(torch.tensor([[0.1, -0.2], [0.3, 0.4]]))
bias = torch.nn.Parameter(torch.zeros(2))
opt = torch.optim.Adam([W, bias], lr=0.05)
for epoch in range(20):
    opt.zero_grad()
    loss = F.cross_entropy(F.linear(X, W, bias), labels)
    loss.backward()
    opt.step()
print(round(loss.item(), 5))
print(W)
""",
    "higher order": """
import torch
x = torch.tensor([0.5, 1.5], requires_grad=True)
y = (x.sin() * x.exp() + x ** 3 / (1 + x * x)).sum()
g, = torch.autograd.grad(y, x, create_graph=True)
h, = torch.autograd.grad(g.sum(), x, create_graph=True)
t, = torch.autograd.grad(h.sum(), x)
print(g, h, t)
z = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
loss = z.softmax(1).log().sum() + z.norm() + z.var() + (z @ z).trace()
gz, = torch.autograd.grad(loss, z, create_graph=True)
hz, = torch.autograd.grad((gz * gz).sum(), z)
print(gz, hz)
""",
    "hooks order": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3
z = y.exp()
log = []
r = lambda t: [round(v, 3) for v in t.tolist()]  # float32 exp differs from torch's in the last bits
y.register_hook(lambda g: log.append(("y tensor hook", r(g))))
y.grad_fn.register_prehook(lambda go: log.append(("y node prehook", r(go[0]))))
y.grad_fn.register_hook(lambda gi, go: log.append(("y node hook", r(gi[0]))))
x.register_hook(lambda g: log.append(("x hook", r(g))))
x.register_post_accumulate_grad_hook(lambda t: log.append(("x post", r(t.grad))))
z.sum().backward()
for entry in log: print(entry)
""",
    "index": """
import torch
x = torch.arange(24.).reshape(2, 3, 4).requires_grad_()
exprs = ["x[1, :, 2]", "x[:, [0, 2], 1]", "x[0, ..., -1]", "x[..., 1:3]", "x[:, None, 0]",
         "x[[1, 0], :, [2, 3]]", "x[x > 20]", "x[torch.tensor([[0, 1], [1, 0]])]", "x[0][1][2]",
         "x[:, 1:, ::2]", "x[-1, -1]", "x[torch.tensor(1)]", "x[1, [0, 1]][:, 2]",
         "x[:, :, [True, False, True, False]]"]
for e in exprs:
    x.grad = None
    r = eval(e)
    (r * torch.arange(1., r.numel() + 1).reshape(r.shape)).sum().backward()
    print(e, tuple(r.shape), r.grad_fn.name(), [f[0].name() if f[0] else None for f in r.grad_fn.next_functions])
    print(x.grad.reshape(-1).tolist())
try: x[5]
except IndexError as e: print("IndexError", e)
try: x[0, 0, 0, 0]
except IndexError as e: print("IndexError", e)
y = torch.zeros(3, 4)
y[1] = torch.tensor([1., 2., 3., 4.])
y[:, 0] = 9
y[[0, 2], [1, 3]] = torch.tensor([5., 6.])
y[y == 0] = -1
y[..., -1] += 0.5
print(y)
""",
    "numpy": """
import torch, numpy as np
t = torch.tensor([1., 2., 3.])
print(np.asarray(t), np.exp(t), np.add(t, 1))
a = np.array([1., 2., 3.], dtype=np.float32)
print(torch.from_numpy(a) * 2)
r = torch.tensor([1., 2.], requires_grad=True)
try: np.asarray(r)
except RuntimeError as e: print(e)
print(r.detach().numpy(), r.numpy(force=True))
""",
    "views": """
import torch
x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
y = x * 1
v = y.t()[1:]
v.mul_(2)
print(y, y.grad_fn.name(), y.grad_fn.next_functions, v.grad_fn.name())
w = y.view(3, 2)
w[0, 0] = -1.
print(y, x.grad)
(y * torch.tensor([[1., 2., 3.], [4., 5., 6.]])).sum().backward()
print(x.grad)
z = torch.zeros(4)
zz = z[1:3]
zz.add_(torch.tensor([1., 2.], requires_grad=True))
print(z, z.grad_fn.name(), zz.grad_fn.name(), z.requires_grad)
q = torch.ones(3, requires_grad=True).clone()
q2 = q.unsqueeze(0).expand(2, 3)
print(q2._base is q, q2.is_leaf)
d = x.detach()
try: x[:1].detach_()
except RuntimeError as e: print(str(e)[:40])
k = x * 1
print(k.split(1)[0]._base is k, k.unbind()[1]._base is k, k.chunk(2)[0].grad_fn.name())
""",
    "idioms": """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.tensor([[0.5, -1., 2.], [1.5, 0.25, -0.75]], requires_grad=True)
y = torch.tensor([2, 0])
print(x.sum(dim=-1), x.max(-1), torch.max(x, dim=1).indices, x.view(x.size(0), -1).shape)
print((x.argmax(dim=1) == y).float().mean(), x.exp().log(), x.unsqueeze(-1).squeeze(-1).shape)
print(torch.sigmoid(x), torch.tanh(x), torch.softmax(x, -1), x.transpose(-2, -1) @ x)
print(torch.cat((x, x), dim=1).shape, x.masked_fill(x < 0, float('-inf')))
print(torch.zeros(3).uniform_(-1, 1).shape, torch.randint(0, 10, (5,)).dtype, torch.randn(2, 3, requires_grad=True).requires_grad)
with torch.no_grad():
    z = x.clone(); z.clamp_(0, 1); print(z)
print(x.mean(dim=0, keepdim=True), x.std(dim=1), x.abs().max(), x.sum(axis=0))
class M:
    @torch.no_grad()
    def f(self, t): return t * 2
print(M().f(x).requires_grad)
print(x.detach().cpu().numpy().shape, x.data.shape, x.requires_grad, type(x.shape).__name__)
loss = F.cross_entropy(x, y); loss.backward(); print(loss, x.grad)
print(x.grad.norm(), torch.norm(x.grad), x.norm(dim=1, keepdim=True))
print(torch.allclose(x, x.clone()), torch.equal(x, x), (x > 0).sum().item(), x.numel())
print(x.reshape(-1).tolist(), x.T.shape, x.float().dtype, torch.tensor(3.0) ** 2)
print(torch.where(x > 0), torch.nonzero(x > 0), torch.arange(6).view(2, 3).t().flatten())
a = torch.ones(2, 2, requires_grad=True)
b = a * 2
c = b.mean()
c.backward()
print(a.grad, b.grad_fn, c.grad_fn, b.requires_grad)
print(torch.stack([torch.tensor(1.), torch.tensor(2.)]), torch.tensor([[1, 2], [3, 4]]).T)
print(torch.linspace(0, 1, steps=5), torch.arange(0, 1, 0.2), torch.ones(2, 3).sum(0).shape)
q = torch.tensor([1., 2., 3.], requires_grad=True)
s = 0
for v in q:
    s = s + v ** 2
s.backward(); print(q.grad, s)
""",
    "function": """
import torch
from torch.autograd import Function
class Scale(Function):
    @staticmethod
    def forward(ctx, x, k=2.0):
        ctx.k = k
        out = x * k
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * ctx.k, None
x = torch.tensor([1., 2.], requires_grad=True)
y = Scale.apply(x, 3.0)
print(y, y.grad_fn.saved_tensors[0] is y, y.grad_fn.needs_input_grad)
(y * y).sum().backward(); print(x.grad)
class Two(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b, a * b
    @staticmethod
    def backward(ctx, ga, gb):
        return ga + gb, ga - gb
a = torch.tensor([1., 2.], requires_grad=True)
b = torch.tensor([3., 4.])
p, q = Two.apply(a, b)
print(p, q, p.grad_fn is q.grad_fn, q.output_nr)
(p + q).sum().backward(); print(a.grad, b.grad)
q2 = Two.apply(a, b)[1]
q2.sum().backward(); print(a.grad)
with torch.no_grad():
    r = Scale.apply(x)
print(r.requires_grad, r.grad_fn)
class Inplace(Function):
    @staticmethod
    def forward(ctx, t):
        t.mul_(2); ctx.mark_dirty(t); return t
    @staticmethod
    def backward(ctx, g): return g * 2
z = torch.tensor([1., 2., 3.], requires_grad=True)
w = z.clone()
out = Inplace.apply(w)
print(out is w, w, w._version, w.grad_fn.name())
w.sum().backward(); print(z.grad)
class Ident(Function):
    @staticmethod
    def forward(ctx, t): return t.view_as(t)
    @staticmethod
    def backward(ctx, g): return g
print(Ident.apply(z).grad_fn.name())
print(isinstance(y.grad_fn, torch.autograd.graph.Node), isinstance(y.grad_fn, torch.autograd.function.BackwardCFunction))
class F2(Function):
    @staticmethod
    def forward(ctx, x): ctx.save_for_backward(x); return x ** 3
    @staticmethod
    def backward(ctx, g): x, = ctx.saved_tensors; return 3 * x ** 2 * g
g, = torch.autograd.grad(F2.apply(x).sum(), x, create_graph=True)
h, = torch.autograd.grad(g.sum(), x)
print(g, h)
x2 = x * 1
z2 = F2.apply(x2)
x2.add_(1)
try: z2.sum().backward()
except RuntimeError as e: print(e)
class Bad(Function):
    @staticmethod
    def forward(ctx, x): return x * 2
    @staticmethod
    def backward(ctx, g): return torch.ones(1, 2)
x.grad = None
try: Bad.apply(x).sum().backward(); print(x.grad)
except RuntimeError as e: print(e)
class Bad2(Function):
    @staticmethod
    def forward(ctx, x): return x * 2
    @staticmethod
    def backward(ctx, g): return torch.ones(2, 2)
x.grad = None
try: Bad2.apply(x).sum().backward(); print(x.grad)
except RuntimeError as e: print(e)
""",
    "grad api": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
h = x * 2
y = (h ** 2).sum()
print(torch.autograd.grad(y, h, retain_graph=True))
print(torch.autograd.grad(y, [h, x], retain_graph=True))
y.backward(inputs=[h], retain_graph=True); print(h.grad, x.grad)
y.backward(inputs=[x], retain_graph=True); print(x.grad)
a = torch.tensor(3., requires_grad=True)
b = a * a
c = b * a
print(torch.autograd.grad([b, c], [a], grad_outputs=[torch.tensor(1.), torch.tensor(2.)]))
q = torch.tensor([1., 2.], requires_grad=True)
r = q * 3
r.retain_grad()
r.sum().backward(create_graph=True)
print(q.grad, r.grad, q.grad.requires_grad)
torch.autograd.backward(q.sum() * 2)
print(q.grad)
l = torch.tensor([1., 2.], requires_grad=True)
print(torch.autograd.grad(l, l, torch.ones(2)))
""",
    "hooks more": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
calls = []
x.register_hook(lambda g: calls.append(g.tolist()))
(x * x + x).sum().backward()
print(calls, x.grad)
acc1 = (x * 2).grad_fn.next_functions[0][0]
acc2 = (x * 3).grad_fn.next_functions[0][0]
print(acc1 is acc2)
y = x * 2
h1 = y.register_hook(lambda g: g * 2)
h2 = y.register_hook(lambda g: g + 1)
h1.remove()
y.sum().backward(); print(x.grad)
z = x * 1
z.register_hook(lambda g: g.zero_())
z.sum().backward(); print(x.grad)
m = torch.tensor([1., 2.], requires_grad=True)
out = m.exp()
out.register_hook(lambda g: print("hook on exp output", g))
out.retain_grad()
(out * 2).sum().backward()
print(out.grad, out.retains_grad, m.grad)
""",
    "inplace leaves": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
with torch.no_grad():
    x[0] = 10.
    x[1:].mul_(2)
print(x, x._version, x.is_leaf, x.grad_fn)
v = x[1:]
print(v.is_leaf, v.grad_fn.name(), v._base is x, v.requires_grad)
try: v.add_(1)
except RuntimeError as e: print(e)
try: x.exp_()
except RuntimeError as e: print(e)
y = x.detach()
y.add_(1)
print(x, x._version)
z = x * 1
z2 = z[0]
z.add_(1)
print(z2.grad_fn.name())
z.sum().backward(); print(x.grad)
t = torch.ones(2, 3)
t[0, 1] = 5
t[:, 2] += 1
print(t, t._version)
u = torch.tensor([1., 2., 3.], requires_grad=True)
uu = u.sigmoid()
vv = uu[1:]
vv.mul_(2)
try: uu.sum().backward()
except RuntimeError as e: print(e)
""",
    "modes more": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
with torch.inference_mode():
    a = x * 2
    b = torch.ones(2)
    print(a.is_inference(), b.is_inference(), torch.is_inference_mode_enabled(), torch.is_grad_enabled())
    with torch.no_grad():
        print(torch.is_inference_mode_enabled())
    c = a + 1
    c.add_(1)
    print(c, c.is_inference())
print(a.is_inference(), (a + 1).is_inference(), (a + x).requires_grad)
try: (a * x).sum().backward()
except RuntimeError as e: print(e)
@torch.inference_mode(False)
def f(t): return torch.is_inference_mode_enabled(), (t * 2).requires_grad
with torch.inference_mode():
    print(f(x))
with torch.enable_grad():
    with torch.no_grad():
        print(torch.is_grad_enabled())
    print(torch.is_grad_enabled())
g = torch.set_grad_enabled(False)
print(torch.is_grad_enabled())
with g: print(torch.is_grad_enabled())
print(torch.is_grad_enabled())
torch.set_grad_enabled(True)
print(torch.is_grad_enabled())
print(torch.no_grad()(lambda t: (t * 2).requires_grad)(x))
""",
    "print more": """
import torch
print(torch.tensor([1e10, 1.]))
print(torch.tensor([-1e-5, 3.]))
print(torch.tensor([[1.5, -2.25], [1e3, 4.]]))
print(torch.tensor([0.001, 0.0001]))
print(torch.tensor([100000., 1.]))
print(torch.tensor([1000.5, 1.25]))
print(torch.tensor([[1, 2, 3]] * 3, dtype=torch.int16))
print(torch.tensor([2.]) ** 100)
print(torch.arange(30.).reshape(5, 6) * 1.1)
print(torch.arange(3000).reshape(3, 1000))
print(torch.ones(2, 2, 2, 2))
print(torch.tensor([1.5], dtype=torch.float16))
print(torch.tensor([[-0.5, 0.25]], dtype=torch.float64, requires_grad=True))
print(torch.zeros(3, 0, dtype=torch.float64))
print(torch.tensor(-0.))
print(torch.tensor([1e-10, 1e10]))
print(torch.tensor([0.1234567, 123.456789]))
print(torch.randn(0))
x = torch.tensor([1., 2.], requires_grad=True)
print(x.max(0), x.sort(), x.topk(1))
print(torch.tensor([float('nan')]), torch.tensor([float('inf'), float('-inf')]))
print(torch.tensor([1.5, float('nan'), 2.25]))
print(torch.linspace(0, 10, 100))
""",
    "tensor api": """
import torch, copy
import numpy as np
x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
print(len(x), x.size(), x.size(0), x.size(-1), x.dim(), x.numel(), x.shape[1], x.ndim)
print([t for t in x])
print(bool(torch.tensor([1.])), int(torch.tensor(3.7)), float(torch.tensor([2.5])))
try: bool(x)
except RuntimeError as e: print(e)
p = torch.nn.Parameter(torch.tensor([1., 2.]))
print(p, type(p * 2).__name__, (p * 2))
q = copy.deepcopy(p); print(q, q is p, type(q).__name__)
print(torch.Tensor(2, 3).shape, torch.Tensor([1, 2]), torch.Tensor([[1., 2.]]).dtype)
print(x.type(), x.long().type(), x.double().type())
print(x.new_zeros(2), x.new_ones((1, 2)), x.new_full((2,), 7.), x.new_tensor([1, 2]))
print(torch.zeros(2, 3).is_contiguous(), x.t().is_contiguous(), x.t().contiguous().is_contiguous())
print(x.stride(), x.t().stride(), x.device, x.is_cuda, x.element_size())
print(torch.is_tensor(x), torch.numel(x), torch.is_floating_point(x))
print(x.tolist(), x.sum().tolist(), x.detach().numpy().dtype)
print(torch.tensor(5).item(), type(torch.tensor(5).item()), torch.tensor(True).item())
print(x == x, (x == 2).sum(), x != 1, 2 in torch.tensor([1, 2]))
print(x.requires_grad_(False) is x, x.requires_grad)
print(torch.arange(5), torch.arange(1, 4), torch.arange(0., 1., 0.25), torch.arange(0, 10, 3))
print(torch.linspace(-1, 1, 5), torch.eye(2, 3), torch.full((2,), 3), torch.full((2,), 1.5), torch.full((1,), True))
print(torch.zeros(2, dtype=torch.int32), torch.ones((2, 2), dtype=torch.bool), torch.empty(0).shape)
print(torch.tensor([1, 2], dtype=torch.float64), torch.tensor(2.5), torch.tensor([[1]]))
print(torch.as_tensor([1., 2.]), torch.from_numpy(x.detach().numpy()).dtype)
print(torch.tensor(np.array([1., 2.])), torch.tensor(np.array([1, 2], dtype=np.int32)))
print(torch.tensor([torch.tensor(1.), torch.tensor(2.)]))
print(torch.zeros_like(x), torch.ones_like(x, dtype=torch.int64), torch.full_like(x, 2))
""",
}
