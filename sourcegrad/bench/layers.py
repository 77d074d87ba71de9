"""The `layers` family of benchmark workloads (`python -m sourcegrad.bench --layers`): code in
the style of published numpy layer libraries and course code, each timed against its own
authors' hand-written backward.

What the family holds, each written the way such libraries write it:

- `dense`: two class-based fully connected layers (a parameter dict, a `hyperparameters`
  property that builds a new dict on every read, `forward` keeping what `backward` reads), a
  leaky ReLU written with a boolean mask (`_z[z < 0] = _z[z < 0] * alpha`), squared error;
- `conv`: a convolution layer by im2col (columns gathered kernel position by kernel
  position, a matrix product, col2im in the backward), a ReLU by mask;
- `batchnorm`, `layernorm`: normalization layers whose epsilon comes from a
  `hyperparameters` property returning a new dict each read;
- `lstm`: an LSTM layer over T steps with the mask-based stable sigmoid of course code
  (`z[pos] = np.exp(-x[pos])`, `z[neg] = np.exp(x[neg])`), backpropagated through time by hand;
- `per_example`: a textbook network whose mini-batch loss loops over the examples one at a
  time (`for x, y in mini_batch`), backward by `backprop(x, y)` per example;
- `rnn_stack`: a vanilla RNN appending each hidden state to a list, `np.stack`-ed after;
- `softmax_naive`: a softmax loss with per-row Python loops, its naive hand gradient.

The hand-written gradient of each is the authors' backward, run as they run it (a forward
that keeps a cache, then `backward`). Everything the runner does with the main table's
workloads it does with these (`workloads.Workload`): the same checking (1e-8 against the
hand-written gradient) and timing; the peers (autograd, torch, jax) are not run on them.

Why one module: the family's layers, losses and sizes, read together.
"""

from __future__ import annotations

import statistics

import numpy as np

from .formatting import fmt_time

# --------------------------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------------------------


class LeakyReLU:
    """Leaky ReLU with a boolean mask, as the layer libraries write it."""

    def __init__(self, alpha=0.3):
        self.alpha = alpha

    def fn(self, z):
        _z = z.copy()
        _z[z < 0] = _z[z < 0] * self.alpha
        return _z

    def grad(self, x):
        out = np.ones_like(x)
        out[x < 0] *= self.alpha
        return out


class Identity:
    def fn(self, z):
        return z

    def grad(self, x):
        return np.ones_like(x)


def relu_mask(x):
    """ReLU by mask (the forward of a course's ReLU layer): the output and the mask."""
    mask = x <= 0
    out = x.copy()
    out[mask] = 0
    return out, mask


def stable_sigmoid(x):
    """The numerically stable sigmoid of course code: exp of minus |x| by two masks."""
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


# --------------------------------------------------------------------------------------------
# dense: two fully connected layers, leaky ReLU by mask, squared error
# --------------------------------------------------------------------------------------------


class FullyConnected:
    def __init__(self, W, b, act_fn):
        self.parameters = {"W": W, "b": b}
        self.act_fn = act_fn
        self._init = "glorot_uniform"
        self.derived_variables = {}

    @property
    def hyperparameters(self):
        return {"layer": "FullyConnected", "init": self._init, "act_fn": str(self.act_fn)}

    def forward(self, X):
        W = self.parameters["W"]
        b = self.parameters["b"]
        Z = X @ W + b
        Y = self.act_fn.fn(Z)
        self.derived_variables["X"] = X
        self.derived_variables["Z"] = Z
        return Y

    def backward(self, dLdy):
        X = self.derived_variables["X"]
        Z = self.derived_variables["Z"]
        W = self.parameters["W"]
        dZ = dLdy * self.act_fn.grad(Z)
        dX = dZ @ W.T
        dW = X.T @ dZ
        dB = dZ.sum(axis=0, keepdims=True)
        return dX, dW, dB


HIDDEN = FullyConnected(None, None, LeakyReLU(0.3))
OUTPUT = FullyConnected(None, None, Identity())


def _dense_forward(W1, b1, W2, b2, X):
    for layer, W, b in ((HIDDEN, W1, b1), (OUTPUT, W2, b2)):
        layer.parameters["W"] = W
        layer.parameters["b"] = b
        X = layer.forward(X)
    return X


def dense(W1, b1, W2, b2, X, T):
    Y = _dense_forward(W1, b1, W2, b2, X)
    return 0.5 * np.sum((Y - T) ** 2)


def dense_hand(W1, b1, W2, b2, X, T):
    Y = _dense_forward(W1, b1, W2, b2, X)
    dH, dW2, db2 = OUTPUT.backward(Y - T)
    _, dW1, db1 = HIDDEN.backward(dH)
    return dW1, db1, dW2, db2


def dense_args(rng, size):
    n, d, h, o = (size.params[k] for k in ("n", "d", "h", "o"))
    return (
        rng.normal(scale=d**-0.5, size=(d, h)),
        rng.normal(scale=0.1, size=(1, h)),
        rng.normal(scale=h**-0.5, size=(h, o)),
        rng.normal(scale=0.1, size=(1, o)),
        rng.normal(size=(n, d)),
        rng.normal(size=(n, o)),
    )


# --------------------------------------------------------------------------------------------
# conv: im2col convolution layer, ReLU by mask, a weighted sum
# --------------------------------------------------------------------------------------------


def im2col(input_data, filter_h, filter_w, stride=1):
    N, C, H, W = input_data.shape
    out_h = (H - filter_h) // stride + 1
    out_w = (W - filter_w) // stride + 1
    col = np.zeros((N, C, filter_h, filter_w, out_h, out_w))
    for y in range(filter_h):
        y_max = y + stride * out_h
        for x in range(filter_w):
            x_max = x + stride * out_w
            col[:, :, y, x, :, :] = input_data[:, :, y:y_max:stride, x:x_max:stride]
    return col.transpose(0, 4, 5, 1, 2, 3).reshape(N * out_h * out_w, -1)


def col2im(col, input_shape, filter_h, filter_w, stride=1):
    N, C, H, W = input_shape
    out_h = (H - filter_h) // stride + 1
    out_w = (W - filter_w) // stride + 1
    col = col.reshape(N, out_h, out_w, C, filter_h, filter_w).transpose(0, 3, 4, 5, 1, 2)
    img = np.zeros((N, C, H, W))
    for y in range(filter_h):
        y_max = y + stride * out_h
        for x in range(filter_w):
            x_max = x + stride * out_w
            img[:, :, y:y_max:stride, x:x_max:stride] += col[:, :, y, x, :, :]
    return img


class Convolution:
    def __init__(self, W, b, stride=1):
        self.W = W
        self.b = b
        self.stride = stride
        self.x = None
        self.col = None
        self.col_W = None

    def forward(self, x):
        FN, C, FH, FW = self.W.shape
        N, C, H, W = x.shape
        out_h = (H - FH) // self.stride + 1
        out_w = (W - FW) // self.stride + 1
        col = im2col(x, FH, FW, self.stride)
        col_W = self.W.reshape(FN, -1).T
        out = np.dot(col, col_W) + self.b
        out = out.reshape(N, out_h, out_w, -1).transpose(0, 3, 1, 2)
        self.x = x
        self.col = col
        self.col_W = col_W
        return out

    def backward(self, dout):
        FN, C, FH, FW = self.W.shape
        dout = dout.transpose(0, 2, 3, 1).reshape(-1, FN)
        db = np.sum(dout, axis=0)
        dW = np.dot(self.col.T, dout)
        dW = dW.transpose(1, 0).reshape(FN, C, FH, FW)
        dcol = np.dot(dout, self.col_W.T)
        dx = col2im(dcol, self.x.shape, FH, FW, self.stride)
        return dx, dW, db


def conv(W, b, x, G):
    layer = Convolution(W, b)
    out, _ = relu_mask(layer.forward(x))
    return np.sum(out * G)


def conv_hand(W, b, x, G):
    layer = Convolution(W, b)
    out, mask = relu_mask(layer.forward(x))
    dout = G.copy()
    dout[mask] = 0
    dx, dW, db = layer.backward(dout)
    return dW, db, dx


def conv_args(rng, size):
    n, c, hw, f, k = (size.params[key] for key in ("n", "c", "hw", "f", "k"))
    out = hw - k + 1
    return (
        rng.normal(scale=(c * k * k) ** -0.5, size=(f, c, k, k)),
        rng.normal(scale=0.1, size=f),
        rng.normal(size=(n, c, hw, hw)),
        rng.normal(size=(n, f, out, out)),
    )


# --------------------------------------------------------------------------------------------
# batchnorm / layernorm: epsilon from a property that builds a new dict on every read
# --------------------------------------------------------------------------------------------


class BatchNorm1D:
    def __init__(self, scaler, intercept, epsilon=1e-5, momentum=0.9):
        self.parameters = {"scaler": scaler, "intercept": intercept}
        self.epsilon = epsilon
        self.momentum = momentum
        self.derived_variables = {}

    @property
    def hyperparameters(self):
        return {"layer": "BatchNorm1D", "epsilon": self.epsilon, "momentum": self.momentum}

    def forward(self, X):
        scaler = self.parameters["scaler"]
        ep = self.hyperparameters["epsilon"]
        intercept = self.parameters["intercept"]
        self.derived_variables["X"] = X
        X_mean, X_var = X.mean(axis=0), X.var(axis=0)
        N = (X - X_mean) / np.sqrt(X_var + ep)
        y = scaler * N + intercept
        return y

    def backward(self, dLdy):
        X = self.derived_variables["X"]
        scaler = self.parameters["scaler"]
        ep = self.hyperparameters["epsilon"]
        n_ex, n_in = X.shape
        X_mean, X_var = X.mean(axis=0), X.var(axis=0)
        N = (X - X_mean) / np.sqrt(X_var + ep)
        dIntercept = dLdy.sum(axis=0)
        dScaler = np.sum(dLdy * N, axis=0)
        dN = dLdy * scaler
        dX = (n_ex * dN - dN.sum(axis=0) - N * (dN * N).sum(axis=0)) / (n_ex * np.sqrt(X_var + ep))
        return dX, dScaler, dIntercept


class LayerNorm1D:
    def __init__(self, scaler, intercept, epsilon=1e-5):
        self.parameters = {"scaler": scaler, "intercept": intercept}
        self.epsilon = epsilon
        self.derived_variables = {}

    @property
    def hyperparameters(self):
        return {"layer": "LayerNorm1D", "epsilon": self.epsilon}

    def forward(self, X):
        scaler = self.parameters["scaler"]
        ep = self.hyperparameters["epsilon"]
        intercept = self.parameters["intercept"]
        self.derived_variables["X"] = X
        X_var = X.var(axis=1, keepdims=True)
        X_mean = X.mean(axis=1, keepdims=True)
        lnorm = (X - X_mean) / np.sqrt(X_var + ep)
        y = scaler * lnorm + intercept
        return y

    def backward(self, dLdy):
        X = self.derived_variables["X"]
        scaler = self.parameters["scaler"]
        ep = self.hyperparameters["epsilon"]
        n_ex, n_in = X.shape
        X_mean, X_var = X.mean(axis=1, keepdims=True), X.var(axis=1, keepdims=True)
        lnorm = (X - X_mean) / np.sqrt(X_var + ep)
        dIntercept = dLdy.sum(axis=0)
        dScaler = np.sum(dLdy * lnorm, axis=0)
        dLnorm = dLdy * scaler
        dX = (
            n_in * dLnorm
            - dLnorm.sum(axis=1, keepdims=True)
            - lnorm * (dLnorm * lnorm).sum(axis=1, keepdims=True)
        ) / (n_in * np.sqrt(X_var + ep))
        return dX, dScaler, dIntercept


# the layers live on (a model's), their parameters set before each pass, as a training loop does
BATCHNORM = BatchNorm1D(None, None)
LAYERNORM = LayerNorm1D(None, None)


def _normed(layer, scaler, intercept, X):
    layer.parameters["scaler"] = scaler
    layer.parameters["intercept"] = intercept
    return np.tanh(layer.forward(X))


def _norm_hand(layer, scaler, intercept, X, G):
    t = _normed(layer, scaler, intercept, X)
    dX, dScaler, dIntercept = layer.backward(G * (1 - t**2))
    return dScaler, dIntercept, dX


def batchnorm(scaler, intercept, X, G):
    return np.sum(_normed(BATCHNORM, scaler, intercept, X) * G)


def batchnorm_hand(scaler, intercept, X, G):
    return _norm_hand(BATCHNORM, scaler, intercept, X, G)


def layernorm(scaler, intercept, X, G):
    return np.sum(_normed(LAYERNORM, scaler, intercept, X) * G)


def layernorm_hand(scaler, intercept, X, G):
    return _norm_hand(LAYERNORM, scaler, intercept, X, G)


def norm_args(rng, size):
    n, d = size.params["n"], size.params["d"]
    return (
        1.0 + rng.normal(scale=0.1, size=d),
        rng.normal(scale=0.1, size=d),
        rng.normal(size=(n, d)),
        rng.normal(size=(n, d)),
    )


# --------------------------------------------------------------------------------------------
# lstm: the course's LSTM step with its stable sigmoid, over T steps, BPTT by hand
# --------------------------------------------------------------------------------------------


class LSTM:
    def __init__(self, Wx, Wh, b):
        self.Wx = Wx
        self.Wh = Wh
        self.b = b
        self.caches = []

    def step_forward(self, x, prev_h, prev_c):
        H = prev_h.shape[1]
        a = x.dot(self.Wx) + prev_h.dot(self.Wh) + self.b
        i = stable_sigmoid(a[:, 0:H])
        f = stable_sigmoid(a[:, H : 2 * H])
        o = stable_sigmoid(a[:, 2 * H : 3 * H])
        g = np.tanh(a[:, 3 * H : 4 * H])
        next_c = f * prev_c + i * g
        next_h = o * np.tanh(next_c)
        self.caches.append((x, prev_h, prev_c, i, f, o, g, next_c))
        return next_h, next_c

    def forward(self, x, h0):
        N, T, D = x.shape
        h = np.zeros((N, T, h0.shape[1]))
        prev_h = h0
        prev_c = np.zeros_like(h0)
        for t in range(T):
            next_h, next_c = self.step_forward(x[:, t, :], prev_h, prev_c)
            prev_h = next_h
            prev_c = next_c
            h[:, t, :] = prev_h
        return h

    def step_backward(self, dnext_h, dnext_c, cache):
        x, prev_h, prev_c, i, f, o, g, next_c = cache
        dnext_c = dnext_c + o * (1 - np.tanh(next_c) ** 2) * dnext_h
        di = dnext_c * g
        df = dnext_c * prev_c
        do = dnext_h * np.tanh(next_c)
        dg = dnext_c * i
        dprev_c = f * dnext_c
        da = np.hstack((i * (1 - i) * di, f * (1 - f) * df, o * (1 - o) * do, (1 - g**2) * dg))
        dx = da.dot(self.Wx.T)
        dprev_h = da.dot(self.Wh.T)
        dWx = x.T.dot(da)
        dWh = prev_h.T.dot(da)
        db = np.sum(da, axis=0)
        return dx, dprev_h, dprev_c, dWx, dWh, db

    def backward(self, dh):
        N, T, H = dh.shape
        dWx = np.zeros_like(self.Wx)
        dWh = np.zeros_like(self.Wh)
        db = np.zeros_like(self.b)
        dprev_h = np.zeros((N, H))
        dprev_c = np.zeros((N, H))
        for t in reversed(range(T)):
            dnext_h = dh[:, t, :] + dprev_h
            _, dprev_h, dprev_c, dWx_t, dWh_t, db_t = self.step_backward(
                dnext_h, dprev_c, self.caches[t]
            )
            dWx += dWx_t
            dWh += dWh_t
            db += db_t
        return dWx, dWh, db


def lstm(Wx, Wh, b, x, h0, G):
    layer = LSTM(Wx, Wh, b)
    return np.sum(layer.forward(x, h0) * G)


def lstm_hand(Wx, Wh, b, x, h0, G):
    layer = LSTM(Wx, Wh, b)
    layer.forward(x, h0)
    return layer.backward(G)


def lstm_args(rng, size):
    n, t, d, h = (size.params[k] for k in ("n", "t", "d", "h"))
    return (
        rng.normal(scale=d**-0.5, size=(d, 4 * h)),
        rng.normal(scale=h**-0.5, size=(h, 4 * h)),
        rng.normal(scale=0.1, size=4 * h),
        rng.normal(size=(n, t, d)),
        rng.normal(scale=0.5, size=(n, h)),
        rng.normal(size=(n, t, h)),
    )


# --------------------------------------------------------------------------------------------
# per_example: the textbook network, a loop over the examples of a mini-batch
# --------------------------------------------------------------------------------------------


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def sigmoid_prime(z):
    return sigmoid(z) * (1 - sigmoid(z))


class QuadraticCost:
    @staticmethod
    def fn(a, y):
        return 0.5 * np.linalg.norm(a - y) ** 2

    @staticmethod
    def delta(z, a, y):
        return (a - y) * sigmoid_prime(z)


class Network:
    def __init__(self, weights, biases, cost=QuadraticCost):
        self.num_layers = len(weights) + 1
        self.weights = weights
        self.biases = biases
        self.cost = cost

    def feedforward(self, a):
        for b, w in zip(self.biases, self.weights):
            a = sigmoid(np.dot(w, a) + b)
        return a

    def backprop(self, x, y):
        nabla_b = [np.zeros(b.shape) for b in self.biases]
        nabla_w = [np.zeros(w.shape) for w in self.weights]
        activation = x
        activations = [x]
        zs = []
        for b, w in zip(self.biases, self.weights):
            z = np.dot(w, activation) + b
            zs.append(z)
            activation = sigmoid(z)
            activations.append(activation)
        delta = self.cost.delta(zs[-1], activations[-1], y)
        nabla_b[-1] = delta
        nabla_w[-1] = np.dot(delta, activations[-2].transpose())
        for layer in range(2, self.num_layers):
            z = zs[-layer]
            sp = sigmoid_prime(z)
            delta = np.dot(self.weights[-layer + 1].transpose(), delta) * sp
            nabla_b[-layer] = delta
            nabla_w[-layer] = np.dot(delta, activations[-layer - 1].transpose())
        return (nabla_b, nabla_w)


def per_example(w1, b1, w2, b2, xs, ys):
    net = Network([w1, w2], [b1, b2])
    cost = 0.0
    for x, y in zip(xs, ys):
        a = net.feedforward(x)
        cost += net.cost.fn(a, y)
    return cost


def per_example_hand(w1, b1, w2, b2, xs, ys):
    net = Network([w1, w2], [b1, b2])
    nabla_b = [np.zeros(b.shape) for b in net.biases]
    nabla_w = [np.zeros(w.shape) for w in net.weights]
    for x, y in zip(xs, ys):
        delta_nabla_b, delta_nabla_w = net.backprop(x, y)
        nabla_b = [nb + dnb for nb, dnb in zip(nabla_b, delta_nabla_b)]
        nabla_w = [nw + dnw for nw, dnw in zip(nabla_w, delta_nabla_w)]
    return nabla_w[0], nabla_b[0], nabla_w[1], nabla_b[1]


def per_example_args(rng, size):
    n, d, h, o = (size.params[k] for k in ("n", "d", "h", "o"))
    return (
        rng.normal(size=(h, d)) / np.sqrt(d),
        rng.normal(size=(h, 1)),
        rng.normal(size=(o, h)) / np.sqrt(h),
        rng.normal(size=(o, 1)),
        rng.normal(size=(n, d, 1)),
        (rng.random(size=(n, o, 1)) > 0.5).astype(float),
    )


# --------------------------------------------------------------------------------------------
# rnn_stack: a vanilla RNN appending its hidden states to a list, stacked after
# --------------------------------------------------------------------------------------------


class VanillaRNN:
    def __init__(self, Wx, Wh, b):
        self.Wx = Wx
        self.Wh = Wh
        self.b = b

    def forward(self, x, h0):
        hs = []
        h = h0
        for t in range(x.shape[0]):
            h = np.tanh(x[t].dot(self.Wx) + h.dot(self.Wh) + self.b)
            hs.append(h)
        self.x, self.h0 = x, h0
        self.hs = hs
        return np.stack(hs)

    def backward(self, dh):
        dWx = np.zeros_like(self.Wx)
        dWh = np.zeros_like(self.Wh)
        db = np.zeros_like(self.b)
        dnext = np.zeros_like(self.h0)
        for t in reversed(range(len(self.hs))):
            h = self.hs[t]
            prev = self.hs[t - 1] if t > 0 else self.h0
            da = (dh[t] + dnext) * (1 - h**2)
            dWx += self.x[t].T.dot(da)
            dWh += prev.T.dot(da)
            db += da.sum(axis=0)
            dnext = da.dot(self.Wh.T)
        return dWx, dWh, db


def rnn_stack(Wx, Wh, b, x, h0, G):
    layer = VanillaRNN(Wx, Wh, b)
    return np.sum(layer.forward(x, h0) * G)


def rnn_stack_hand(Wx, Wh, b, x, h0, G):
    layer = VanillaRNN(Wx, Wh, b)
    layer.forward(x, h0)
    return layer.backward(G)


def rnn_stack_args(rng, size):
    n, t, d, h = (size.params[k] for k in ("n", "t", "d", "h"))
    return (
        rng.normal(scale=d**-0.5, size=(d, h)),
        rng.normal(scale=h**-0.5, size=(h, h)),
        rng.normal(scale=0.1, size=h),
        rng.normal(size=(t, n, d)),
        rng.normal(scale=0.5, size=(n, h)),
        rng.normal(size=(t, n, h)),
    )


# --------------------------------------------------------------------------------------------
# softmax_naive: the softmax loss with per-row loops, and its naive hand gradient
# --------------------------------------------------------------------------------------------


def softmax_naive(W, X, y, reg):
    loss = 0.0
    num_train = X.shape[0]
    for i in range(num_train):
        scores = X[i].dot(W)
        scores = scores - np.max(scores)
        p = np.exp(scores) / np.sum(np.exp(scores))
        loss += -np.log(p[y[i]])
    loss /= num_train
    loss += reg * np.sum(W * W)
    return loss


def softmax_naive_hand(W, X, y, reg):
    dW = np.zeros_like(W)
    num_train = X.shape[0]
    num_classes = W.shape[1]
    for i in range(num_train):
        scores = X[i].dot(W)
        scores -= np.max(scores)
        p = np.exp(scores) / np.sum(np.exp(scores))
        for j in range(num_classes):
            dW[:, j] += (p[j] - (j == y[i])) * X[i]
    dW /= num_train
    dW += 2 * reg * W
    return (dW,)


def softmax_naive_args(rng, size):
    n, d, c = size.params["n"], size.params["d"], size.params["c"]
    return (
        rng.normal(scale=1e-1, size=(d, c)),
        rng.normal(size=(n, d)),
        rng.integers(0, c, size=n),
        0.05,
    )


# --------------------------------------------------------------------------------------------
# the registry (built by `workloads`, whose `Workload` and `Size` it uses)
# --------------------------------------------------------------------------------------------

#: the family's targets (issue 39): each workload at most WORST_TARGET x its hand-written
#: backward, the median over the family at most MEDIAN_TARGET x
WORST_TARGET = 1.5
MEDIAN_TARGET = 1.0
#: the per-example-loop network at batch 64: its first call compiles within this
PER_EXAMPLE_COMPILE_S = 0.5


def _no_peer(xp, *args):
    raise NotImplementedError("the layers family is run for hand, sourcegrad and numba only")


#: the variants the family runs (the peers have no spelling of these programs)
VARIANTS = ("hand", "sourcegrad", "numba")


def workloads(Workload, s):
    """The family's `Workload`s; `s(name, label, **params)` makes a size."""

    def w(name, title, f, wrt, args, hand, size, quick, **kw):
        return Workload(
            name,
            title,
            f,
            wrt,
            args,
            hand,
            _no_peer,
            sizes=(size,),
            quick=(quick,),
            ratio_target=WORST_TARGET,
            family="layers",
            **kw,
        )

    return _layer_workloads(w, s) + _loop_workloads(w, s)


def _layer_workloads(w, s):
    """The layers without a loop: dense, convolution, the two normalizations."""
    return (
        w(
            "dense",
            "2 FullyConnected layers, leaky ReLU by mask, squared error",
            dense,
            ("W1", "b1", "W2", "b2"),
            dense_args,
            dense_hand,
            s("default", "batch 64, 32-64-10", n=64, d=32, h=64, o=10),
            s("quick", "batch 6, 4-5-3", n=6, d=4, h=5, o=3),
        ),
        w(
            "conv",
            "Convolution by im2col/col2im, ReLU by mask",
            conv,
            ("W", "b", "x"),
            conv_args,
            conv_hand,
            s("default", "8x3x16x16, 8 filters 3x3", n=8, c=3, hw=16, f=8, k=3),
            s("quick", "2x2x5x5, 3 filters 3x3", n=2, c=2, hw=5, f=3, k=3),
        ),
        w(
            "batchnorm",
            "BatchNorm1D (epsilon from a hyperparameters property), tanh",
            batchnorm,
            ("scaler", "intercept", "X"),
            norm_args,
            batchnorm_hand,
            s("default", "64x128", n=64, d=128),
            s("quick", "6x4", n=6, d=4),
        ),
        w(
            "layernorm",
            "LayerNorm1D (epsilon from a hyperparameters property), tanh",
            layernorm,
            ("scaler", "intercept", "X"),
            norm_args,
            layernorm_hand,
            s("default", "64x128", n=64, d=128),
            s("quick", "6x4", n=6, d=4),
        ),
    )


def _loop_workloads(w, s):
    """The programs written with Python loops: over time steps, examples or rows."""
    return (
        w(
            "lstm",
            "LSTM layer, mask-based stable sigmoid, BPTT",
            lstm,
            ("Wx", "Wh", "b"),
            lstm_args,
            lstm_hand,
            s("default", "T=20, batch 16, 16->32", n=16, t=20, d=16, h=32),
            s("quick", "T=4, batch 3, 3->2", n=3, t=4, d=3, h=2),
        ),
        w(
            "per_example",
            "textbook network, for x, y in mini_batch: backprop(x, y)",
            per_example,
            ("w1", "b1", "w2", "b2"),
            per_example_args,
            per_example_hand,
            s("default", "batch 64, 64-32-10", n=64, d=64, h=32, o=10),
            s("quick", "batch 5, 4-3-2", n=5, d=4, h=3, o=2),
            compile_target_s=PER_EXAMPLE_COMPILE_S,
        ),
        w(
            "rnn_stack",
            "vanilla RNN, hidden states appended, np.stack",
            rnn_stack,
            ("Wx", "Wh", "b"),
            rnn_stack_args,
            rnn_stack_hand,
            s("default", "T=50, batch 16, 16->32", n=16, t=50, d=16, h=32),
            s("quick", "T=4, batch 3, 3->2", n=3, t=4, d=3, h=2),
        ),
        w(
            "softmax_naive",
            "softmax loss, a Python loop over rows",
            softmax_naive,
            ("W",),
            softmax_naive_args,
            softmax_naive_hand,
            s("default", "64 rows, 128 features, 10 classes", n=64, d=128, c=10),
            s("quick", "5 rows, 4 features, 3 classes", n=5, d=4, c=3),
        ),
    )


def summary(results):
    """The family's table: per workload, ours, hand and the ratio (median × hand), whether a
    repeated call compiled again; then the median and worst ratios against the targets."""

    lines = [
        "| workload | size | ours | hand | × hand | first call (compile) | compiles on repeat |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    ratios = []
    for res in results:
        recs = {r["variant"]: r for r in res["variants"]}
        hand, sg = recs.get("hand", {}), recs.get("sourcegrad", {})
        ratio = sg.get("ratio_to_hand")
        if ratio is not None:
            ratios.append(ratio)
        first = (
            f"{fmt_time(sg['first_call_s'])} ({fmt_time(sg.get('compile_s'))})"
            if sg.get("first_call_s") is not None
            else "-"
        )
        lines.append(
            f"| {res['workload']} | {res['size']} | "
            f"{fmt_time(sg.get('median_s')) if ratio is not None else sg.get('status', '-')} | "
            f"{fmt_time(hand.get('median_s'))} | "
            f"{f'{ratio:.2f}' if ratio is not None else '-'} | {first} | "
            f"{sg.get('recompiles', '-')} |"
        )
    if ratios:
        median, worst = statistics.median(ratios), max(ratios)
        lines += [
            "",
            f"median {median:.2f}× hand (target ≤ {MEDIAN_TARGET:g}×: "
            f"{'met' if median <= MEDIAN_TARGET else 'not met'}), "
            f"worst {worst:.2f}× (target ≤ {WORST_TARGET:g}×: "
            f"{'met' if worst <= WORST_TARGET else 'not met'}), "
            f"{len(ratios)} of {len(results)} workloads timed",
        ]
    return "\n".join(lines) + "\n"
