"""A network written the way code for HIPS autograd is: parameters as a list of (W, b)
tuples flattened into one vector by a ``flatten`` helper built from generators and closures
(its ``unflatten`` rebuilds the tree from the vector), layers composed with
``functools.reduce``, the activation fixed with ``functools.partial``, a generator yielding
each layer's output, a ``*args``/``**kwargs`` wrapper that logs, and ``if y is None``.

The objective is a function of the flat vector, as optimisers of that library take it.
"""

import functools
import logging

import numpy as np

# (a log, not a list of calls: a traced function's change to a global list is refused, since
# the code made from one run of it would not make it again)
LOG = logging.getLogger(__name__)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        LOG.debug("calling %s", fn.__name__)
        return fn(*args, **kwargs)

    return wrapper


def flatten(tree):
    """A flat vector of the tree's leaves and a function rebuilding the tree from one."""
    shapes = [[np.shape(leaf) for leaf in pair] for pair in tree]
    sizes = [int(np.prod(s)) for pair in shapes for s in pair]

    def leaves():
        for pair in tree:
            yield from (np.ravel(leaf) for leaf in pair)

    def unflatten(vector):
        pieces = np.split(vector, np.cumsum(sizes)[:-1])
        it = iter(pieces)
        return [tuple(next(it).reshape(s) for s in pair) for pair in shapes]

    return np.concatenate(list(leaves())), unflatten


def activation(z, slope):
    return np.tanh(z) + slope * z


def layer_outputs(params, x, act):
    for W, b in params:
        x = act(x @ W + b)
        yield x


def apply_layer(x, params, act):
    W, b = params
    return act(x @ W + b)


@logged
def predict(params, inputs, act=None, **options):
    if act is None:
        act = functools.partial(activation, slope=options.get("slope", 0.01))
    return functools.reduce(lambda x, p: apply_layer(x, p, act), params, inputs)


RS = np.random.RandomState(4)
PARAMS = [(RS.randn(3, 4) * 0.5, RS.randn(4) * 0.1), (RS.randn(4, 2) * 0.5, RS.randn(2) * 0.1)]
INPUTS = RS.randn(5, 3)
TARGETS = RS.randn(5, 2)
FLAT, UNFLATTEN = flatten(PARAMS)


def objective(vector, y=None):
    params = UNFLATTEN(vector)
    out = predict(params, INPUTS, slope=0.05)
    if y is None:
        y = TARGETS
    hidden = list(layer_outputs(params, INPUTS, np.tanh))
    return np.mean((out - y) ** 2) + 1e-2 * sum(np.sum(h**2) for h in hidden)


def make_args():
    return (FLAT.copy(),)
