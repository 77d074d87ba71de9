"""Scenarios from the reference (shared/reference/torch_autograd_semantics.md), as code.

Each is run once with `torch` and once with `sourcegrad` as `torch`; the test compares
what they print. A few lines of the reference are left out where sourcegrad differs on
purpose or does not implement the feature (see the notes by each edit).
"""

REFERENCE = {
    "1a": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)   # leaf, requires grad
w = torch.tensor([4., 5., 6.])                        # leaf, no grad
print(x.requires_grad, x.is_leaf, x.grad_fn)
print(w.requires_grad, w.is_leaf, w.grad_fn)
y = x + w
print(y.requires_grad, y.is_leaf)
print(repr(y.grad_fn))
print(y.grad_fn.name(), type(y.grad_fn).__name__)
print(y.grad_fn.next_functions)
acc = y.grad_fn.next_functions[0][0]
print(acc.name(), type(acc).__name__, acc.variable is x, acc.next_functions)
print(repr(acc.variable))
""",
    "1b": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
z = x * x
print(z.grad_fn.next_functions)
print(z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0])
u = (x * 2).sum()
print(u.grad_fn.next_functions)
print(u.grad_fn.next_functions[0][0].next_functions)
print((x + 1).grad_fn.next_functions)          # python scalar -> (None, 0)
a, b = x.unbind(0)[:2]
print((a + b).grad_fn.next_functions)          # index = output_nr of the producing node
w = torch.ones(3)
print((w + w).grad_fn, (w + w).requires_grad)  # no input requires grad -> no node
""",
    # [1c] edited: dir() of a node lists sourcegrad's own internals
    "1c": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
m = x * torch.tensor([4., 5.])
print(m.grad_fn._saved_self, m.grad_fn._saved_other)   # self not saved: other input needs no grad
p = x.pow(2)
print(p.grad_fn._saved_self, p.grad_fn._saved_exponent)
print(isinstance(p.grad_fn, torch.autograd.graph.Node))
print(p.grad_fn.metadata)
""",
    "2a": """
import torch
x = torch.tensor(3.0, requires_grad=True)
for i in range(3):
    y = x ** 2
    y.backward()
    print(x.grad)
x.grad.zero_(); print(x.grad)
x.grad = None;  print(x.grad)
""",
    "2b": """
import torch
x = torch.tensor(3.0, requires_grad=True)
y = x ** 2
print(y.backward())
try:
    y.backward()
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
""",
    "2c": """
import torch
x = torch.tensor(3.0, requires_grad=True)
y = x + 1          # AddBackward0 saves no tensors
y.backward(); y.backward()
print(x.grad)      # second call did NOT raise
x = torch.tensor(3.0, requires_grad=True)
y = x * 2          # MulBackward0 saves the (wrapped) scalar
y.backward()
try: y.backward()
except RuntimeError as e: print("RuntimeError (x*2 second time)")
""",
    "2d": """
import torch
x = torch.tensor(3.0, requires_grad=True)
y = x ** 2
y.backward(retain_graph=True); print(x.grad)
y.backward();                  print(x.grad)
try: y.backward()
except RuntimeError as e: print("third:", str(e)[:60], "...")
""",
    "2e": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
try: y.backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
y.backward(gradient=torch.tensor([1., 0.1, 0.01]))
print(x.grad)
for bad in (torch.ones(2), [1., 1., 1.]):
    try: (x * 2).backward(bad)
    except Exception as e: print(type(e).__name__ + ":", e)
x.grad = None
(x * 2).backward(torch.ones(3, dtype=torch.float64))   # other float dtype accepted
print(x.grad, x.grad.dtype)
x2 = torch.tensor([2.0], requires_grad=True)
(x2 * 3).backward()      # 1-element (non-0-dim) output is allowed
print(x2.grad)
try: torch.tensor([1., 2.]).sum().backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
l = torch.tensor(2.0, requires_grad=True); l.backward(); print(l.grad)   # backward on a leaf
""",
    "2f": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 2
y.sum().backward()
print(y.grad)        # warning printed on stderr, value None
""",
    "2g": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 2
y.retain_grad()
print(y.retains_grad, x.retains_grad)
(y * y).sum().backward()
print(y.grad, x.grad)
x.retain_grad(); print(x.retains_grad)     # no-op on a leaf
try: torch.ones(2).retain_grad()
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "2h": """
import torch
a = torch.tensor([1., 2.])
print(a.requires_grad_() is a, a.requires_grad, a.is_leaf)
a.requires_grad_(False); print(a.requires_grad)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 2
for f in (lambda: y.requires_grad_(False), lambda: setattr(y, "requires_grad", False)):
    try: f()
    except RuntimeError as e: print(type(e).__name__ + ":", e)
print(y.requires_grad_(True))      # allowed (no-op) on non-leaf
t = torch.tensor([1., 2.])
print(t.grad)                      # requires_grad=False -> None, no warning
""",
    "2i": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
(x * 1).sum().backward(); g1 = x.grad
(x * 1).sum().backward()
print(g1 is x.grad, x.grad)                    # accumulated in place into the same tensor
print(x.grad.requires_grad, x.grad.is_leaf, x.grad.grad_fn)
x.grad = torch.tensor([5., 5.])
(x * 1).sum().backward(); print(x.grad)
for v in (torch.ones(3), [1., 2.], torch.tensor([1, 2])):
    try: x.grad = v
    except Exception as e: print(type(e).__name__ + ":", e)
a = torch.tensor(1., requires_grad=True); b = torch.tensor(2., requires_grad=True)
(a * b).backward(inputs=[a]); print(a.grad, b.grad)
""",
    "2j": """
import torch, inspect
p = torch.nn.Parameter(torch.tensor([1., 2.]))
print(repr(p)); print(p.is_leaf, p.requires_grad)
opt = torch.optim.SGD([p], lr=0.1)
(p * p).sum().backward(); print(p.grad)
opt.step(); print(p)
opt.zero_grad(); print(p.grad)                      # default set_to_none=True
(p * p).sum().backward(); opt.zero_grad(set_to_none=False); print(p.grad)
print(inspect.signature(torch.optim.Optimizer.zero_grad))
w = torch.tensor([1., 2.], requires_grad=True)
(w * w).sum().backward()
with torch.no_grad():
    w -= 0.1 * w.grad                                # manual SGD
w.grad.zero_()
print(w, w.is_leaf, w._version, w.grad)
""",
    "2k": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
torch.autograd.backward([x * 2, x ** 2], grad_tensors=[torch.ones(2), torch.ones(2)])
print(x.grad)
x = torch.tensor(2., requires_grad=True)
y = x ** 2
with torch.no_grad():
    y.backward()           # backward works inside no_grad
print(x.grad)
""",
    "3a": """
import torch
a = torch.ones(2, 3, requires_grad=True)
b = torch.ones(3, requires_grad=True)
c = torch.ones(2, 1, requires_grad=True)
s = torch.tensor(1., requires_grad=True)
(a + b + c + s).sum().backward()
print(a.grad.shape, b.grad, c.grad.shape, c.grad.flatten(), s.grad)
b2 = torch.tensor([1., 2., 3.], requires_grad=True)
a2 = torch.tensor([[1., 1., 1.], [2., 2., 2.]], requires_grad=True)
(a2 * b2).sum().backward()
print(b2.grad); print(a2.grad)
v = torch.tensor([1., 2.], requires_grad=True)
v.expand(3, 2).sum().backward(); print(v.grad)
""",
    # [3b] edited: numpy has no bfloat16
    "3b": """
import torch
tests = {
 "torch.tensor([1, 2], requires_grad=True)": lambda: torch.tensor([1, 2], requires_grad=True),
 "torch.ones(2, dtype=torch.int64, requires_grad=True)": lambda: torch.ones(2, dtype=torch.int64, requires_grad=True),
 "torch.nn.Parameter(torch.tensor([1, 2]))": lambda: torch.nn.Parameter(torch.tensor([1, 2])),
 "torch.tensor([1, 2]).requires_grad_()": lambda: torch.tensor([1, 2]).requires_grad_(),
 "torch.tensor([True]).requires_grad_()": lambda: torch.tensor([True]).requires_grad_(),
 "int_t.requires_grad = True": lambda: setattr(torch.tensor([1, 2]), "requires_grad", True),
 "torch.tensor([1, 2]).requires_grad_(False)": lambda: torch.tensor([1, 2]).requires_grad_(False),
 "float16": lambda: torch.tensor([1., 2.], dtype=torch.float16, requires_grad=True),
 "float64": lambda: torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True),
 "complex64": lambda: torch.tensor([1+2j], requires_grad=True),
}
for k, f in tests.items():
    try: print(k, "->", f())
    except RuntimeError as e: print(k, "-> RuntimeError:", e)
""",
    "3c": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
i = torch.tensor([1, 2, 3])
y = x * i; print(y, y.dtype)
y.sum().backward(); print(x.grad)
x = torch.tensor([1.5, 2.5], requires_grad=True)
print(x.long(), x.long().requires_grad, x.argmax(), x > 1, (x > 1).requires_grad)
print(x.floor(), x.round(), x.sign())
x.floor().sum().backward(); print(x.grad)
try: x.long().sum().backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * torch.tensor([1., 2.], dtype=torch.float64)
print(y.dtype); y.sum().backward(); print(x.grad, x.grad.dtype)
print(torch.get_default_dtype(), torch.tensor([1., 2.]).dtype, torch.tensor([1, 2]).dtype)
""",
    "4a": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
d = y.detach()
print(d, d.requires_grad, d.is_leaf, d.grad_fn, d.data_ptr() == y.data_ptr())
print(y._version, d._version)
d[0] = 100.
print(y, y._version, d._version)     # storage AND version counter shared
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x.exp()                          # ExpBackward0 saves its output
y.detach().zero_()
try: y.sum().backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "4b": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x.exp()
dd = y.data
print(dd.requires_grad, dd.is_leaf, y._version, dd._version)
dd.zero_()
print(y._version, dd._version)     # .data does NOT share the version counter
y.sum().backward(); print(x.grad)  # silently wrong: uses the zeroed saved output
x = torch.tensor([1., 2., 3.], requires_grad=True)
x.data.mul_(2); print(x, x._version)
x.data = torch.tensor([7., 8., 9.]); print(x, x.is_leaf)
""",
    "4c": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
r = y.detach_()
print(r is y, y.requires_grad, y.grad_fn, y.is_leaf)
try: x[:2].detach_()
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "4d": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
s = (x * 2).sum()
print(s.item(), type(s.item()), x[0].item(), torch.tensor(3).item())
try: x.item()
except RuntimeError as e: print(type(e).__name__ + ":", e)
print(float(s))       # one-time UserWarning on stderr (TORCH_WARN_ONCE)
print(int(s), float(s))
try: float(x)
except ValueError as e: print(type(e).__name__ + ":", e)
""",
    "4e": """
import torch, numpy as np
x = torch.tensor([1., 2., 3.], requires_grad=True)
for f in (lambda: x.numpy(), lambda: (x * 2).numpy(), lambda: np.asarray(x)):
    try: f()
    except RuntimeError as e: print(type(e).__name__ + ":", e)
print(repr(x.detach().numpy()), repr(x.numpy(force=True)))
n = x.detach().numpy(); n[0] = 42.
print(x)                                  # numpy view shares memory
print(x.cpu() is x, (x * 2).cpu())        # already on CPU: returns self, keeps grad_fn
print(x.tolist(), (x * 2).tolist(), (x * 2).sum().tolist())
""",
    "4f": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
c = x.clone()
print(c, c.is_leaf, c.requires_grad, c.data_ptr() == x.data_ptr())
c.sum().backward(); print(x.grad)
cd = x.detach().clone(); print(cd, cd.is_leaf, cd.requires_grad)
t = torch.tensor(x); print(t, t.requires_grad)     # UserWarning on stderr
""",
    "5a": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
print(torch.is_grad_enabled())
with torch.no_grad():
    print(torch.is_grad_enabled())
    y = x * 2
    print(y, y.requires_grad, y.grad_fn, y.is_leaf)
    with torch.enable_grad():
        print(x * 2, torch.is_grad_enabled())
    f = torch.ones(2, requires_grad=True)
    print(f, f.is_leaf, (f * 2).requires_grad)
print(torch.is_grad_enabled())
with torch.set_grad_enabled(False):
    print(torch.is_grad_enabled(), (x * 2).requires_grad)
torch.set_grad_enabled(False); print(torch.is_grad_enabled())
torch.set_grad_enabled(True);  print(torch.is_grad_enabled())
""",
    "5b": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
@torch.no_grad()
def f1(t): return t * 2
@torch.no_grad
def f1b(t): return t * 2
@torch.enable_grad()
def f2(t): return t * 2
@torch.set_grad_enabled(False)
def f3(t): return t * 2
@torch.inference_mode()
def f4(t): return t * 2
@torch.no_grad()
def gen(t):
    yield torch.is_grad_enabled()
    yield (t * 2).requires_grad
print(f1(x).requires_grad, f1b(x).requires_grad, f3(x).requires_grad)
with torch.no_grad():
    print(f2(x).requires_grad)
r = f4(x); print(r.requires_grad, r.is_inference())
print(list(gen(x)))
""",
    "5c": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
with torch.inference_mode():
    print(torch.is_grad_enabled(), torch.is_inference_mode_enabled())
    i = x * 2
    print(i, i.requires_grad, i.is_inference(), i.is_leaf)
    k = torch.ones(2, requires_grad=True)
    print(k, k.is_inference(), (k * 2).requires_grad)
with torch.inference_mode(False):
    print(torch.is_inference_mode_enabled())
print(x.is_inference(), i.is_inference())
tests = [("i.requires_grad_()", lambda: i.requires_grad_()),
         ("i * x", lambda: i * x), ("x * i", lambda: x * i),
         ("k * x", lambda: k * x),
         ("i + x", lambda: i + x), ("k * 2", lambda: k * 2),
         ("i.add_(1)", lambda: i.add_(1)),
         ("i.clone() * x", lambda: i.clone() * x)]
for name, f in tests:
    try: print(name, "->", f())
    except RuntimeError as e: print(name, "-> RuntimeError:", e)
print(i)   # NOTE: the failed add_ above still modified the data
with torch.no_grad():
    n = x * 2
print(n.is_inference(), n * x)
""",
    "6a": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
def iadd():
    global x
    x += 1
tests = [("x.add_(1)", lambda: x.add_(1)), ("x.zero_()", lambda: x.zero_()),
         ("x += 1", iadd), ("x[0] = 5.", lambda: x.__setitem__(0, 5.)),
         ("x[0:2].mul_(2)", lambda: x[0:2].mul_(2)), ("x.copy_(t)", lambda: x.copy_(torch.zeros(3)))]
for name, f in tests:
    try: f()
    except RuntimeError as e: print(name, "-> RuntimeError:", e)
print(x, x._version)
with torch.no_grad():
    x.add_(1)
print(x, x._version, x.is_leaf, x.grad_fn)
""",
    "6b": """
import torch
t = torch.zeros(3)
print(t._version)
t.add_(1); print(t._version)
t[0] = 5; print(t._version)
t.mul_(2).add_(1); print(t._version)
v = t[1:]; print(v._version)        # views share the base's counter
v.zero_(); print(t._version, v._version)
print((t + 1)._version)             # out-of-place result starts at 0
with torch.no_grad():
    t.add_(1)
print(t._version)                   # bumps under no_grad too
""",
    "6c": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
r = y.add_(1)
print(r is y, y, y._version)
y.mul_(3); print(y)
y.sum().backward(); print(x.grad)
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 1; y[0] = 10.
print(y); y.sum().backward(); print(x.grad)
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2; y.zero_(); print(y)
y.sum().backward(); print(x.grad)
""",
    "6d": """
import torch
def err(label, f):
    try: f(); print(label, "-> no error")
    except RuntimeError as e: print(label, "->", e)
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 1; z = y * y; y.add_(1)
err("saved input modified", lambda: z.sum().backward())
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x.sigmoid(); y.mul_(2)
err("saved output modified", lambda: y.sum().backward())
x = torch.tensor([1., 2., 3.], requires_grad=True)
w = torch.tensor([1., 2., 3.]); z = x * w; w.add_(1)
err("saved no-grad leaf modified", lambda: z.sum().backward())
x = torch.tensor([1., 2., 3.], requires_grad=True)
z = x * x
with torch.no_grad(): x.mul_(2)
err("saved grad leaf modified under no_grad", lambda: z.sum().backward())
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 1; z = y + 2; y.add_(1)
err("input of add modified (add saves nothing)", lambda: z.sum().backward())
""",
    "6e": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
ops = [("add_", lambda t: t.add_(1)), ("sub_", lambda t: t.sub_(1)), ("mul_", lambda t: t.mul_(2)),
       ("div_", lambda t: t.div_(2)), ("pow_", lambda t: t.pow_(2)), ("neg_", lambda t: t.neg_()),
       ("exp_", lambda t: t.exp_()), ("relu_", lambda t: t.relu_()), ("clamp_", lambda t: t.clamp_(min=0)),
       ("sigmoid_", lambda t: t.sigmoid_()), ("zero_", lambda t: t.zero_()), ("fill_", lambda t: t.fill_(1.)),
       ("copy_", lambda t: t.copy_(torch.ones(2))), ("t[0] = 1.", lambda t: t.__setitem__(0, 1.))]
for name, f in ops:
    t = x * 1; f(t)
    print(f"{name:10s} {t.grad_fn.name():32s} {repr(t).split('grad_fn=')[1]}")
t = x * 1; t += 1; print("+=        ", t.grad_fn.name())
x4 = torch.tensor([1., 2., 3., 4.], requires_grad=True)
y = x4 * 1; v = y[:2]; v.mul_(10)
print(y, v.grad_fn.name())
y.sum().backward(); print(x4.grad)
t = torch.zeros(2); t.add_(x)                       # no-grad leaf absorbs a grad tensor
print(t, t.is_leaf); t.sum().backward(); print(x.grad)
try: torch.tensor([1, 2]).add_(1.5)
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "7a": """
import torch
from torch.autograd import Function
class CustomReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)
    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input <= 0] = 0
        return grad_input
z = torch.tensor([-1., 2., 3.], requires_grad=True)
out = CustomReLU.apply(z)
print(out)
print(repr(out.grad_fn))
print(out.grad_fn.name(), type(out.grad_fn).__name__, out.grad_fn._forward_cls)
print(out.grad_fn.next_functions)
out.sum().backward()
print(z.grad)
z = torch.tensor([0., 1., 2.], requires_grad=True)
CustomReLU.apply(z).sum().backward(); print(z.grad)
print(CustomReLU.apply(torch.tensor([1., -1.])).grad_fn)      # no input requires grad
with torch.no_grad():
    print(CustomReLU.apply(z).requires_grad)
try: CustomReLU()(z)
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "7b": """
import torch
from torch.autograd import Function
class MulConst(Function):
    @staticmethod
    def forward(ctx, x, y, k, flag):
        print("forward: grad enabled =", torch.is_grad_enabled(), "needs_input_grad =", ctx.needs_input_grad)
        ctx.k = k
        ctx.save_for_backward(x, y)
        return x * y * k
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        print("backward: grad enabled =", torch.is_grad_enabled(), "needs_input_grad =", ctx.needs_input_grad)
        gx = g * y * ctx.k if ctx.needs_input_grad[0] else None
        gy = g * x * ctx.k if ctx.needs_input_grad[1] else None
        return gx, gy, None, None          # one entry per forward input
a = torch.tensor([1., 2.], requires_grad=True)
b = torch.tensor([3., 4.])
r = MulConst.apply(a, b, 2.0, True)
print(r, r.grad_fn.next_functions)
r.sum().backward()
print(a.grad, b.grad)
""",
    "7c": """
import torch
from torch.autograd import Function
def mk(name, fwd, bwd):
    return type(name, (Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd)})
x = torch.tensor([1., 2.], requires_grad=True)
y = torch.tensor([1., 2.], requires_grad=True)
cases = [
 ("TooFew",  mk("TooFew",  lambda ctx, a, b: a * b, lambda ctx, g: g), (x, y)),
 ("TooMany", mk("TooMany", lambda ctx, a: a * 2, lambda ctx, g: (g, g)), (x,)),
 ("ExtraNones", mk("ExtraNones", lambda ctx, a: a * 2, lambda ctx, g: (g * 2, None, None)), (x,)),
 ("WrongShape", mk("WrongShape", lambda ctx, a: a * 2, lambda ctx, g: torch.ones(5)), (x,)),
 ("GradForNonTensor", mk("GradForNonTensor", lambda ctx, a, k: a * k, lambda ctx, g: (g, torch.ones(1))), (x, 2.0)),
 ("ReturnsFloat", mk("ReturnsFloat", lambda ctx, a: a * 2, lambda ctx, g: 1.0), (x,)),
]
for name, F, args in cases:
    try:
        F.apply(*args).sum().backward(); print(name, "-> OK")
    except Exception as e:
        print(name, "->", type(e).__name__ + ":", e)
class NoBackward(Function):
    @staticmethod
    def forward(ctx, a): return a * 2
try: NoBackward.apply(x).sum().backward()
except Exception as e: print("NoBackward ->", type(e).__name__ + ":", e)
class BadSave(Function):
    @staticmethod
    def forward(ctx, a): ctx.save_for_backward(a, 3); return a * 2
    @staticmethod
    def backward(ctx, g): return g
try: BadSave.apply(x)
except Exception as e: print("BadSave ->", type(e).__name__ + ":", e)
""",
    "7d": """
import torch
from torch.autograd import Function
class AddOneInplace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x
    @staticmethod
    def backward(ctx, g):
        return g
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 1
r = AddOneInplace.apply(y)
print(r is y, y, y._version)
y.sum().backward(); print(x.grad)
try: AddOneInplace.apply(x)
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "7e": """
import torch
from torch.autograd import Function
class SortWithIdx(Function):
    @staticmethod
    def forward(ctx, x):
        v, i = x.sort()
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        return v, i
    @staticmethod
    def backward(ctx, gv, gi):
        i, = ctx.saved_tensors
        return torch.zeros_like(gv).index_add_(0, i, gv)
class TwoOut(Function):
    @staticmethod
    def forward(ctx, x):
        a, b = x * 2, x * 3
        ctx.mark_non_differentiable(b)
        return a, b
    @staticmethod
    def backward(ctx, ga, gb):
        print("  TwoOut.backward got ga =", ga, "gb =", gb)
        return ga * 2
x = torch.tensor([3., 1., 2.], requires_grad=True)
v, i = SortWithIdx.apply(x)
print(v, i, i.requires_grad)
a, b = TwoOut.apply(x)
print(b.requires_grad, b.grad_fn)
a.sum().backward(); print(x.grad)
""",
    "7f": """
import torch
from torch.autograd import Function
class TwoOutMat(Function):
    @staticmethod
    def forward(ctx, x, materialize):
        ctx.set_materialize_grads(materialize)
        return x * 2, x * 3
    @staticmethod
    def backward(ctx, ga, gb):
        print("  ga =", ga, "gb =", gb)
        res = 0
        if ga is not None: res = res + ga * 2
        if gb is not None: res = res + gb * 3
        return res, None
x = torch.tensor([1., 2.], requires_grad=True)
a, b = TwoOutMat.apply(x, True);  a.sum().backward()   # default: materialize=True
a, b = TwoOutMat.apply(x, False); a.sum().backward()
""",
    "7g": """
import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable
class Sq(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x); return x ** 2
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        print("  once_differentiable backward: grad enabled =", torch.is_grad_enabled())
        return 2 * x * g
class Sq2(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x); return x ** 2
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        print("  plain backward: grad enabled =", torch.is_grad_enabled())
        return 2 * x * g
x = torch.tensor(3., requires_grad=True)
gx, = torch.autograd.grad(Sq.apply(x), x, create_graph=True)
print(gx, gx.requires_grad)
go = torch.tensor(1., requires_grad=True)
gx, = torch.autograd.grad(Sq.apply(x), x, grad_outputs=go, create_graph=True)
print(gx, gx.grad_fn.name())
try: gx.backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
gx, = torch.autograd.grad(Sq2.apply(x), x, create_graph=True); print(gx)
print(torch.autograd.grad(gx, x))
print(torch.autograd.grad(Sq2.apply(x), x))
""",
    "7h": """
import torch
from torch.autograd import Function
class MyMul(Function):
    @staticmethod
    def forward(x, y):                 # no ctx
        return x * y
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.save_for_backward(x, y)
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x
a = torch.tensor([1., 2.], requires_grad=True); b = torch.tensor([3., 4.], requires_grad=True)
r = MyMul.apply(a, b); print(r)
r.sum().backward(); print(a.grad, b.grad)
class Keep(Function):
    @staticmethod
    def forward(ctx, x): ctx.save_for_backward(x); return x * 2
    @staticmethod
    def backward(ctx, g): return g * 2
k = Keep.apply(a); print(k.grad_fn.saved_tensors)
k.sum().backward()
try: k.grad_fn.saved_tensors
except RuntimeError as e: print(type(e).__name__ + ":", str(e)[:70], "...")
class Ident(Function):
    @staticmethod
    def forward(ctx, x): return x
    @staticmethod
    def backward(ctx, g): return g
r = Ident.apply(a); print(r is a, r.is_leaf, r.grad_fn.name())
class NonT(Function):
    @staticmethod
    def forward(ctx, x): return x * 2, 5
    @staticmethod
    def backward(ctx, g, g2): return g * 2
print(NonT.apply(a))
""",
    # [8a] edited: the handle's class lives in sourcegrad.eager.hooks
    "8a": """
import torch
x = torch.tensor([1., 2., 3.], requires_grad=True)
h = x.register_hook(lambda g: g * 2)
print(type(h).__name__)
(x * 3).sum().backward(); print(x.grad)
h.remove(); x.grad = None
(x * 3).sum().backward(); print(x.grad)
x = torch.tensor([1., 2., 3.], requires_grad=True)
y = x * 2
y.register_hook(lambda g: print("  hook1 sees", g))     # None -> grad unchanged
y.register_hook(lambda g: g + 100)
y.register_hook(lambda g: print("  hook3 sees", g))
y.sum().backward(); print(x.grad)
x = torch.tensor([1.], requires_grad=True)
x.grad = torch.tensor([100.])
x.register_hook(lambda g: print("  leaf hook sees only the incoming grad:", g))
(x * 1).sum().backward(); print(x.grad)
""",
    "8b": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 2; y.retain_grad(); y.register_hook(lambda g: g * 10)
y.sum().backward(); print(y.grad, x.grad)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 2; y.register_hook(lambda g: g * 10); y.retain_grad()
y.sum().backward(); print(y.grad, x.grad)
for f in (lambda: torch.ones(2).register_hook(lambda g: g),):
    try: f()
    except RuntimeError as e: print(type(e).__name__ + ":", e)
x = torch.tensor([1., 2.], requires_grad=True)
x.register_hook(lambda g: torch.ones(3))
try: (x * 1).sum().backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "8c": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
def post(t):
    print("  post-accumulate hook: t is x =", t is x, " t.grad =", t.grad)
x.register_post_accumulate_grad_hook(post)
(x * 2).sum().backward()
(x * 2).sum().backward()
try: (x * 2).register_post_accumulate_grad_hook(post)
except RuntimeError as e: print(type(e).__name__ + ":", e)
p = torch.tensor([1., 2.], requires_grad=True)
def sgd_step(t):
    with torch.no_grad():
        t.sub_(0.1 * t.grad)
    t.grad = None
p.register_post_accumulate_grad_hook(sgd_step)
(p * p).sum().backward(); print(p, p.grad)
""",
    "8d": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3
y.grad_fn.register_prehook(lambda grad_outputs: print("  prehook grad_outputs:", grad_outputs))
h = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: print("  hook grad_inputs:", grad_inputs, "grad_outputs:", grad_outputs))
print(type(h).__name__)
y.sum().backward(); print(x.grad)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3; y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, gi[1]))
y.sum().backward(); print(x.grad)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3; y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
y.sum().backward(); print(x.grad)
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3
acc = y.grad_fn.next_functions[0][0]
acc.register_prehook(lambda go: print("  AccumulateGrad prehook:", go))
acc.register_hook(lambda gi, go: print("  AccumulateGrad hook: gi =", gi, "go =", go))
y.sum().backward()
x = torch.tensor([1., 2.], requires_grad=True)
y = x * 3; w = y * 1
y.register_hook(lambda g: print("  tensor hook on y"))
y.grad_fn.register_prehook(lambda go: print("  prehook on y.grad_fn"))
w.sum().backward()
""",
    # [9a] edited: signatures are not annotated
    "9a": """
import torch, inspect
x = torch.tensor(2., requires_grad=True); y = torch.tensor(3., requires_grad=True)
z = x * y + x ** 2
print(torch.autograd.grad(z, x), x.grad)          # returns a tuple; .grad untouched
try: torch.autograd.grad(z, x)
except RuntimeError as e: print("RuntimeError:", str(e)[:58], "...")
z = x * y + x ** 2
print(torch.autograd.grad(z, [x, y]))
u = torch.tensor(5., requires_grad=True)
try: torch.autograd.grad(x * y, [x, u])
except RuntimeError as e: print(type(e).__name__ + ":", e)
print(torch.autograd.grad(x * y, [x, u], allow_unused=True))
print(torch.autograd.grad(x * y, [x, u], allow_unused=True, materialize_grads=True))
v = torch.tensor([1., 2., 3.], requires_grad=True)
try: torch.autograd.grad(v * 2, v)
except RuntimeError as e: print(type(e).__name__ + ":", e)
print(torch.autograd.grad(v * 2, v, grad_outputs=torch.ones(3)))
print(torch.autograd.grad([v.sum(), (v ** 2).sum()], v))
print(torch.autograd.grad(v * 2, v, grad_outputs=torch.eye(3), is_grads_batched=True))
try: torch.autograd.grad(x * torch.tensor(1.), torch.tensor(1.))
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "9b": """
import torch
x = torch.tensor(2., requires_grad=True)
y = x ** 3
dy, = torch.autograd.grad(y, x, create_graph=True);  print(dy)
d2y, = torch.autograd.grad(dy, x, create_graph=True); print(d2y)
d3y, = torch.autograd.grad(d2y, x);                   print(d3y)
try: torch.autograd.grad(d3y, x)
except RuntimeError as e: print(type(e).__name__ + ":", e)
x = torch.tensor(2., requires_grad=True)
(x ** 3).backward(create_graph=True)      # UserWarning on stderr
print(x.grad)
g = x.grad; x.grad = None; g.backward(); print(x.grad)
""",
    # [9c] edited: no annotations; no forward-mode strategy for jacobian
    "9c": """
import torch, inspect
from torch.autograd.functional import jacobian, hessian, vjp, jvp, hvp, vhp
f = lambda x: x ** 2 + x.sum()
scal = lambda x: (x ** 3).sum()
x = torch.tensor([1., 2., 3.])
print(jacobian(f, x))
print(jacobian(lambda a, b: a * b, (torch.tensor([1., 2.]), torch.tensor([3., 4.]))))
print(hessian(scal, x))
print(vjp(f, x, torch.tensor([1., 0., 0.])))
print(jvp(f, x, torch.tensor([1., 0., 0.])))
print(hvp(scal, x, torch.ones(3)))
print(vhp(scal, x, torch.ones(3)))
print(vjp(scal, x))
try: vjp(f, x)
except RuntimeError as e: print(type(e).__name__ + ":", e)
print(jacobian(lambda x: torch.ones(2), x))
try: jacobian(lambda x: torch.ones(2), x, strict=True)
except RuntimeError as e: print(type(e).__name__ + ":", e)
print(jacobian(f, x).requires_grad)
""",
    # [9d] edited: GradcheckError's module is sourcegrad.autograd.gradcheck; no annotations
    "9d": """
import torch, inspect
from torch.autograd import Function
inp = torch.randn(3, dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(torch.sin, (inp,)), torch.autograd.gradgradcheck(torch.sin, (inp,)))
class BadGrad(Function):
    @staticmethod
    def forward(ctx, x): ctx.save_for_backward(x); return x ** 2
    @staticmethod
    def backward(ctx, g): x, = ctx.saved_tensors; return 3 * x * g
inp = torch.tensor([1., 2.], dtype=torch.double, requires_grad=True)
try: torch.autograd.gradcheck(BadGrad.apply, (inp,))
except RuntimeError as e: print(type(e).__name__, "| isinstance RuntimeError:", isinstance(e, RuntimeError)); print(e)
print(torch.autograd.gradcheck(BadGrad.apply, (inp,), raise_exception=False))
try: torch.autograd.gradcheck(torch.sin, (torch.tensor([1., 2.], dtype=torch.double),))
except ValueError as e: print(type(e).__name__ + ":", e)
""",
    "10a": """
import torch
print(repr(torch.tensor([0., 1., 1.], requires_grad=True)))
a = torch.tensor(5., requires_grad=True)
y = a + 6
print(repr(y)); print(str(y)); print(f"{y}"); print(f"{torch.tensor([1., 2.], requires_grad=True)}")
print(repr(torch.tensor([1., 2.], requires_grad=True) * 2))
print(repr(torch.tensor([[1., 2.], [3., 4.]], requires_grad=True).sum(0)))
print(repr(torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)))
print(repr(torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True) * 2))
print(repr(torch.tensor(3.5, requires_grad=True)))
print(repr(torch.tensor([1.5, 2.25], requires_grad=True).exp()))
print(repr(torch.zeros(2, 3, requires_grad=True)))
print(repr(torch.tensor([[1., 2.], [3., 4.]], requires_grad=True) @ torch.tensor([[1.], [1.]])))
v = torch.tensor([1., 2., 3.], requires_grad=True)
print(repr(v[0])); print(repr(v.detach())); print(repr(torch.tensor([], requires_grad=True)))
print(repr(torch.nn.Parameter(torch.tensor([1., 2.]))))
print(repr(torch.tensor([1., 2.], requires_grad=True).max(0)))
y = v * 1; y[0] = 5.; print(repr(y))
print(repr(v // 2))
print(repr(torch.tensor([1+1j], requires_grad=True) * 2))
""",
    "11a": """
import torch
print(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
x = torch.tensor([0., 1.], requires_grad=True)
with torch.autograd.detect_anomaly():          # UserWarnings go to stderr
    y = x.sqrt() * 0
    try: y.sum().backward()
    except RuntimeError as e: print(type(e).__name__ + ":", e)
x = torch.tensor([0., 1.], requires_grad=True)
(x.sqrt() * 0).sum().backward(); print(x.grad)  # without anomaly mode: silent nan
""",
    "11b": """
import torch
x = torch.tensor([1., 2.], requires_grad=True)
with torch.autograd.set_detect_anomaly(True):
    y = x.exp()
    y.add_(1)
    try: y.sum().backward()
    except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
    "12a": """
import torch
def g(f, vals):
    x = torch.tensor(vals, requires_grad=True); f(x).sum().backward(); return x.grad
print("relu   [-1,0,1]  ", g(torch.relu, [-1., 0., 1.]))
print("abs    [-1,0,1]  ", g(torch.abs, [-1., 0., 1.]))
print("clamp(min=0) [-1,0,1]", g(lambda t: t.clamp(min=0), [-1., 0., 1.]))
print("clamp(-1,1) [-1,0,1,2]", g(lambda t: t.clamp(-1, 1), [-1., 0., 1., 2.]))
print("sqrt   [0,4]     ", g(torch.sqrt, [0., 4.]))
print("log    [0,1]     ", g(torch.log, [0., 1.]))
print("max()  [1,3,3]   ", g(lambda t: t.max(), [1., 3., 3.]))
print("max(dim=0) [1,3,3]", g(lambda t: t.max(dim=0).values, [1., 3., 3.]))
print("min()  [1,1,3]   ", g(lambda t: t.min(), [1., 1., 3.]))
x = torch.tensor([1., 2., 3.], requires_grad=True); y = torch.tensor([1., 1., 4.], requires_grad=True)
torch.maximum(x, y).sum().backward(); print("maximum tie", x.grad, y.grad)
print("sign   [-1,0,1]  ", g(torch.sign, [-1., 0., 1.]))
print("x**0   [0,2]     ", g(lambda t: t ** 0, [0., 2.]))
print("norm() [0,0]     ", g(lambda t: t.norm(), [0., 0.]))
print("prod   [0,2,3]   ", g(torch.prod, [0., 2., 3.]))
print("var    [1,2,3,4] ", g(torch.var, [1., 2., 3., 4.]))
print("leaky_relu [-1,0,1]", g(torch.nn.functional.leaky_relu, [-1., 0., 1.]))
print("x[[0,0,1]] [1,2,3]", g(lambda t: t[[0, 0, 1]], [1., 2., 3.]))
x = torch.tensor([1., 2.], requires_grad=True)
try: (x // 2).sum().backward()
except RuntimeError as e: print(type(e).__name__ + ":", e)
""",
}
