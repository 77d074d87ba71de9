"""A parameter group's update as one array operation per formula step (torch's `foreach`).

The single-tensor rules (`Optimizer._update`) run a dozen numpy calls per parameter; for a
small model's many small parameters (a GPT's biases and norms: 64 numbers each) those
calls' overhead is the whole update. `gathered` gives the group's gradients end to end in
one array and its state buffers as arrays laid out the same way, so that a rule runs its
formulas once over the group, then each parameter takes its slice of the update.

The state stays per parameter, as torch keeps it (`optimizer.state[p]['exp_avg']` is a
Tensor of p's shape): each such Tensor's array is made a view into the group's buffer, once,
and checked to still be that view on every step (a `load_state_dict`, a deep copy or a
user's assignment gives another array: the buffer is then gathered again from the state's
values). Elementwise arithmetic rounds each element alike however the arrays are laid out,
so the numbers are those of the single-tensor rules.

Only the common case goes this way (a group's small parameters, `small_ones`; host float
arrays of one dtype, gradients of their
parameters' shape and dtype, every state made by an earlier step, one step count, no
parameter listed twice); anything else takes the single-tensor rule (`gathered` is None).
"""

from __future__ import annotations

import numpy as np

# Only small parameters are updated together, into buffers of at most this many elements:
# a larger buffer (and each temporary of the formulas over it) is a fresh mmap from malloc
# every step, whose page faults cost more than the calls saved (a GPT's 108k weights in one
# buffer made its step slower); a large parameter's calls are a small part of its update.
SMALL = 4096
BUFFER = 16384


def small_ones(params):
    """(the parameters updated together: each of at most SMALL elements, BUFFER in all, in
    order; the others)."""
    small, rest, total = [], [], 0
    for p in params:
        size = p._data.size
        if size <= SMALL and total + size <= BUFFER:
            small.append(p)
            total += size
        else:
            rest.append(p)
    return small, rest


class _Layout:
    """A group's flat state buffers: the parameters they were laid out for, their bounds in
    the buffers, and the views each state Tensor was given."""

    __slots__ = ("group", "params", "bounds", "buffers", "views")

    def __init__(self, group, params, bounds, buffers, views):
        self.group, self.params, self.bounds = group, params, bounds
        self.buffers, self.views = buffers, views  # {name: flat}, {name: [view per param]}

    def holds(self, group, params, states, names):
        """Are these still the buffers of `states` (the same parameters, each state's
        array the view it was given)?"""
        if self.group is not group or len(self.params) != len(params):
            return False
        for p, q, (a, b) in zip(self.params, params, self.bounds):
            if p is not q or b - a != q._data.size:  # (`p.data = ...` may resize it)
                return False
        for name in names:
            for st, view in zip(states, self.views[name]):
                if st[name]._data is not view:
                    return False
        return True


def gathered(optimizer, group, params, names):
    """(the gradients end to end, {name: the state buffer laid out alike}, the step count
    after this step's bump, the parameters' bounds in those arrays), or None where the
    group takes the single-tensor rule. `names`: the state's buffers the rule updates;
    each state's `step` is bumped here (as the single-tensor rule's `bump` does)."""
    if len(params) < 2:
        return None
    first = params[0]._data
    dtype = first.dtype
    if type(first) is not np.ndarray or dtype.kind != "f":
        return None
    states = []
    step = None
    grads = []
    for p in params:
        data, grad = p._data, p._grad._data
        if (
            type(data) is not np.ndarray
            or type(grad) is not np.ndarray
            or data.dtype != dtype
            or grad.dtype != dtype
            or grad.shape != data.shape
        ):
            return None
        st = optimizer.state.get(p)
        if not st or "step" not in st or any(st.get(name) is None for name in names):
            return None  # (the single-tensor rule makes the state on the first step)
        count = float(st["step"]._data)
        if step is None:
            step = count
        elif count != step:
            return None
        states.append(st)
        grads.append(grad.reshape(-1))
    if len({id(p) for p in params}) != len(params):
        return None
    layout = optimizer.__dict__.setdefault("_together", {}).get(id(group))
    if layout is None or not layout.holds(group, params, states, names):
        layout = _lay_out(optimizer, group, params, states, names, dtype)
        if layout is None:
            return None
    for st in states:
        counter = st["step"]._data
        counter += np.float32(1)  # (bump's float32 count)
    step = float(states[0]["step"]._data)
    return np.concatenate(grads), layout.buffers, step, layout.bounds


def _lay_out(optimizer, group, params, states, names, dtype):
    """New flat buffers holding the states' current values, each state Tensor's array
    replaced by its view into them (the same values)."""
    bounds, start = [], 0
    for p in params:
        bounds.append((start, start + p._data.size))
        start += p._data.size
    buffers, views = {}, {}
    for name in names:
        arrays = [st[name]._data for st in states]
        if any(
            type(a) is not np.ndarray or a.dtype != dtype or a.shape != p._data.shape
            for a, p in zip(arrays, params)
        ):
            return None
        flat = np.concatenate([a.reshape(-1) for a in arrays])
        buffers[name] = flat
        views[name] = []
        for st, p, (a, b) in zip(states, params, bounds):
            view = flat[a:b].reshape(p._data.shape)
            st[name]._data = view
            views[name].append(view)
    layout = _Layout(group, list(params), bounds, buffers, views)
    cache = optimizer.__dict__["_together"]
    # (a group load_state_dict replaced: its buffers go with it)
    for key in [
        k for k, v in cache.items() if not any(v.group is g for g in optimizer.param_groups)
    ]:
        del cache[key]
    cache[id(group)] = layout
    return layout


def scatter(params, bounds, update):
    """Each parameter -= its slice of the flat `update`."""
    for p, (a, b) in zip(params, bounds):
        data = p._data
        data -= update[a:b].reshape(data.shape)
