"""The ops of the program itself: reads without gradient (shapes, argmax, constants),
builtins, lists and mutation as values, and the helpers generated backward code calls.

Why one module: these entries describe the program's own constructs rather than a numpy
family, and share the container and mutation conventions (`append`, `store_item`, the
run-time VJP/JVP helpers) that the front end lowers those constructs to."""

from __future__ import annotations

import operator

import numpy as np

from .. import runtime
from ..runtime import (
    cast_like,
    concatenate_items,
    dot_grad,
    einsum_grad,
    einsum_grad_jvp,
    einsum_grad_operands,
    einsum_swap,
    index_may_repeat,
    inner_grad,
    inverse_permutation,
    last_writes,
    list_slice_write,
    max_grad,
    part_index,
    prod_grad,
    prod_grad_jvp,
    reduced_count,
    select_grad,
    select_tangent,
    setitem,
    slice_of_list_adjoint,
    stack_items,
    sum_list_grad,
    take_part,
    tensordot_grad,
    unbroadcast,
    unconcatenate_list,
    unindex,
    unindex_list,
    unslice_list,
    unstack_list,
    untake,
    zero_at,
    zeros_adjoint,
)
from .examples import arg, ex
from .registry import (
    RULES,
    Spelling,
    alias,
    defjvp,
    deflinear,
    defnondiff,
    defprimitive,
    defvjp,
    mark,
)
from .registry import func as _func
from .registry import helper as _helper

# Reads that carry no gradient: shapes, comparisons, rounding, argmax, constants like zeros_like.
# (np.full and np.linspace are differentiable in their values: ops/numpy_functions.py)
for _name in ("shape", "ndim", "size", "dtype"):
    defnondiff(_name, operator.attrgetter(_name), Spelling("attr", _name), params=("x",))
    RULES[_name].static_result = True
for _name in (
    "argmax",
    "argmin",
    "argsort",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "zeros",
    "ones",
    "empty",
    "eye",
    "identity",
    "arange",
    "shape",
    "ndim",
    "size",
    "broadcast_shapes",
    "count_nonzero",
    "nonzero",
):
    defnondiff(
        f"np_{_name}",
        getattr(np, _name),
        _func(_name),
        pure=_name not in ("empty_like", "empty"),
        methods=(_name,) if _name in ("argmax", "argmin") else (),
    )
mark("data_shaped", "np_nonzero")  # (as many indices as the data select)
# (no gradient, but values made from these arguments: refused where one carries a gradient)
RULES["np_full_like"].values_from = (1,)
RULES["np_arange"].values_from = (0, 1, 2)
mark("fresh", "np_zeros_like", "np_zeros")
mark("owned", "np_zeros_like", "np_zeros")
for _name, _number in (("zeros_like", 0.0), ("zeros", 0.0), ("ones_like", 1.0), ("ones", 1.0)):
    RULES[f"np_{_name}"].fill = _number
defnondiff("len", len, Spelling("builtin", "len"))
for _name in ("len", "np_shape", "np_ndim", "np_size"):
    RULES[_name].static_result = True
defnondiff("int_builtin", int, Spelling("builtin", "int"))
defnondiff("bool_builtin", bool, Spelling("builtin", "bool"))
defnondiff("range", range, Spelling("builtin", "range"))
# isinstance(x, T) on a computed value: types are part of the signature, so it is known
# before the function runs (and `branches.decide_branches` keeps only the branch taken)
defnondiff("isinstance_builtin", isinstance, Spelling("builtin", "isinstance"), register_fn=False)
RULES["isinstance_builtin"].static_result = True
# the user's `assert test, message`, checked in the forward pass
defnondiff("check_assert", runtime.check_assert, _helper("check_assert"), pure=False)
# a decision of a traced function, checked by the code made from the trace (compiler.trace)
defnondiff("trace_guard", runtime.trace_guard, _helper("trace_guard"), pure=False)
defnondiff("inverse_permutation", inverse_permutation, _helper("inverse_permutation"), complex=True)
defnondiff("reduced_count", reduced_count, _helper("reduced_count"))
# a loop checkpointed with revolve asks its schedule where snapshots go (stateful: never merged)
for _name in ("revolve_schedule", "revolve_next", "revolve_taken", "revolve_restart"):
    defnondiff(_name, getattr(runtime, _name), _helper(_name), pure=False)

# Mutation and lists, as values: the compiler turns `a[i] = v` into `a = setitem(a, i, v)`
# and `xs.append(v)` into `xs = list_append(xs, v)`, so no value changes after it is made.
# An index that names one element twice writes it twice and the last write stays (for
# `a[i] += v` too: it is `a[i] = a[i] + v`), so only the last write's value gets gradient.
defvjp(
    "setitem",
    runtime.setitem,
    _helper("setitem"),
    lambda g, ans, x, index, value: (
        unslice_list(g, x, index, value) if list_slice_write(x, index) else zero_at(g, index)
    ),
    None,
    lambda g, ans, x, index, value: (
        slice_of_list_adjoint(g, x, index, value)
        if list_slice_write(x, index)
        else unbroadcast(
            np.where(last_writes(g, index), g[index], 0.0) if index_may_repeat(index) else g[index],
            value,
        )
    ),
    complex=True,
)
# A slice of a Python list replaced (`lst[1:3] = [a, b]`, which may change its length): the
# two adjoints above and their transposes, setitem of zeros into g and of g into zeros.
defnondiff("list_slice_write", runtime.list_slice_write, _helper("list_slice_write"))
RULES["list_slice_write"].static_result = True
RULES["list_slice_write"].type_fact = True
defvjp(
    "unslice_list",
    runtime.unslice_list,
    _helper("unslice_list"),
    lambda g, ans, h, x, index, value: setitem(g, index, zeros_adjoint(value)),
    None,
    None,
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "slice_of_list_adjoint",
    runtime.slice_of_list_adjoint,
    _helper("slice_of_list_adjoint"),
    lambda g, ans, h, x, index, value: setitem(zeros_adjoint(x), index, g),
    None,
    None,
    None,
    linear=(0,),
    complex=True,
)
# np.add.at(x, index, values) and np.subtract.at, as values: `x = add_at(x, index, values)`
# (the front end rebinds x, an update in place). Every occurrence of an index adds, so each
# of `values` gets the gradient at its own position, g[index], repeated or not.
defvjp(
    "add_at",
    runtime.add_at,
    _helper("add_at"),
    lambda g, ans, x, index, values: unbroadcast(g, x),
    None,
    lambda g, ans, x, index, values: unbroadcast(g[index], values),
    linear=(0, 2),
)
defvjp(
    "subtract_at",
    runtime.subtract_at,
    _helper("subtract_at"),
    lambda g, ans, x, index, values: unbroadcast(g, x),
    None,
    lambda g, ans, x, index, values: -unbroadcast(g[index], values),
    linear=(0, 2),
)
defnondiff("index_may_repeat", runtime.index_may_repeat, _helper("index_may_repeat"))
RULES["index_may_repeat"].static_result = True
RULES["index_may_repeat"].type_fact = True
defnondiff("last_writes", runtime.last_writes, _helper("last_writes"))
defvjp(
    "cast_like",
    runtime.cast_like,
    _helper("cast_like"),
    lambda g, ans, h, x: cast_like(g, h),
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "make_list",
    runtime.make_list,
    Spelling("list"),
    lambda g, ans, *items, argnum: g[argnum],
    complex=True,
)
alias(
    "make_tuple",
    runtime.make_tuple,
    Spelling("tuple"),
    like="make_list",
    family="make_tuple",
    complex=True,
)


def sequence_grad(g, x):
    """Adjoint of tuple(x) or list(x) for x: g holds one adjoint per item; of a list or tuple x,
    they are its adjoint as they are; of an array, its rows', stacked back into its shape."""
    if isinstance(x, (list, tuple)):
        return list(g)
    return np.reshape(np.stack(g), np.shape(x)) if len(g) else np.zeros_like(x)


# tuple(x) and list(x) of a value computed at run time (a function's tuple result, a list built
# at run time, an array's rows); of a tuple known while compiling, the front end keeps it
defvjp(
    "tuple_builtin",
    tuple,
    Spelling("builtin", "tuple"),
    lambda g, ans, x: sequence_grad(g, x),
    register_fn=False,
    linear="joint",
    props={"view"},  # (the items themselves)
    complex=True,
)


def sequence_items(x):
    """list(x): the function object rule templates call for it (generated code writes list)."""
    return list(x)


defvjp(
    "list_builtin",
    sequence_items,
    Spelling("builtin", "list"),
    lambda g, ans, x: sequence_grad(g, x),
    linear="joint",
    props={"view"},
    complex=True,
)
# sequence_grad is linear in g; its transpose hands the result's items (rows) back as a list
defvjp(
    "sequence_grad",
    sequence_grad,
    Spelling("module", "sourcegrad.ops.program.sequence_grad"),
    lambda g, ans, h, x: sequence_items(g),
    None,
    linear=(0,),
    props={"view"},
    complex=True,
)
defvjp(
    "list_append",
    runtime.list_append,
    _helper("list_append"),
    lambda g, ans, items, item: g[:-1],
    lambda g, ans, items, item: g[-1],
    complex=True,
)
defvjp(
    "getitem_list",
    None,
    Spelling("getitem"),
    lambda g, ans, x, index: unindex_list(g, x, index),
    None,
    props={"view"},  # (the item itself, which other names may hold)
    complex=True,
)
defvjp(
    "stack_list",
    np.stack,
    _func("stack"),
    lambda g, ans, items, axis=0: unstack_list(g, items, axis),
    register_fn=False,
    complex=True,
)
defvjp(
    "concatenate_list",
    np.concatenate,
    _func("concatenate"),
    lambda g, ans, items, axis=0: unconcatenate_list(g, items, axis),
    register_fn=False,
    complex=True,
)
defvjp(
    "sum_builtin",
    sum,
    Spelling("builtin", "sum"),
    lambda g, ans, items: sum_list_grad(g, items),
    complex=True,
)
defvjp(
    "min_builtin",
    min,
    Spelling("builtin", "min"),
    lambda g, ans, *xs, argnum: select_grad(g, ans, xs, argnum),
)
defvjp(
    "max_builtin",
    max,
    Spelling("builtin", "max"),
    lambda g, ans, *xs, argnum: select_grad(g, ans, xs, argnum),
)
alias("np_array", np.array, _func("array"), like="stack_list", complex=True)
defvjp(
    "add_adjoints",
    runtime.add_adjoints,
    _helper("add_adjoints"),
    lambda g, ans, a, b: g,
    lambda g, ans, a, b: g,
    complex=True,
)
defnondiff("zeros_adjoint", runtime.zeros_adjoint, _helper("zeros_adjoint"))
# In-place accumulation of adjoints (`d_W += part`), emitted only for arrays the backward owns.
defprimitive(
    "iadd_op",
    operator.iadd,
    Spelling("augassign", "+"),
    pure=False,
    props={"owned"},
    shape="in_place",
    complex=True,
)
defprimitive(
    "isub_op",
    operator.isub,
    Spelling("augassign", "-"),
    pure=False,
    props={"owned"},
    shape="in_place",
    complex=True,
)
# `d_x[i] += g` instead of `d_x += unindex(g, x, i)`: the same sum, without a full-size array
defprimitive(
    "iadd_item",
    runtime.iadd_item,
    Spelling("augassign_item", "+"),
    pure=False,
    props={"owned"},
    shape="in_place",
    complex=True,
)
defnondiff("not_op", operator.not_, Spelling("unaryop", "not"), params=("x",))
defnondiff("pycall", None, Spelling("pycall"), pure=False)

# The fence (DESIGN.md): a call with no rule, made for its effect (`print(loss)`,
# `np.copyto(a, x)`), runs in the forward pass only, which is right only where it neither
# writes into a differentiated array nor hands a differentiated value to code that might.
# The calls below are known to do neither (they read their arguments, or none of the
# function's arrays): the compiler lets them see differentiated values. Any other such call
# is refused, located, when a differentiated value is among its arguments
# (`analysis.check_unmodelled_calls`); with none there, no gradient can pass through it.
FORWARD_ONLY_CALLS = frozenset(
    {print, repr, str, format, np.set_printoptions, np.seterr, np.random.seed}
)
# modules whose every function only reports: logging's and warnings' calls, timers
FORWARD_ONLY_MODULES = frozenset({"logging", "warnings", "_warnings", "time", "pprint"})


def runs_forward_only(fn) -> bool:
    """May `fn` be called, for its effect, with differentiated values as arguments?"""
    try:
        if fn in FORWARD_ONLY_CALLS:
            return True
    except TypeError:  # (an unhashable callable)
        return False
    module = getattr(fn, "__module__", None)
    if module is None and hasattr(fn, "__self__"):  # a builtin's bound method
        module = type(fn.__self__).__module__
    return (module or "").split(".")[0] in FORWARD_ONLY_MODULES


# Helpers that only backward code calls, differentiated again by higher-order derivatives.
# Each is linear in its adjoint input (renamed `h` here: `g` is the VJP's own adjoint), so
# its VJP for `h` is its transpose: scatter <-> gather, slice <-> pad with zeros, expand <->
# sum. Indices, shapes, axes and the forward values a helper reads only to choose where `h`
# goes (max_grad's ans and x, select_grad's xs) get None: the derivative is zero almost
# everywhere. A helper with no VJP at all (defprimitive) raises NoRuleError instead of
# giving zero.
# prod_grad(h, x, ...) = h (along the reduced axes) times the product of the other elements:
# linear in h; in x its derivative is prod's Hessian, applied by prod_grad_jvp (symmetric, so
# the VJP and the JVP with respect to x are the same call).
defvjp(
    "prod_grad",
    runtime.prod_grad,
    _helper("prod_grad"),
    lambda g, ans, h, x, axis, keepdims: np.sum(
        g * prod_grad(np.ones_like(h), x, axis, keepdims), axis=axis, keepdims=keepdims
    ),
    lambda g, ans, h, x, axis, keepdims: prod_grad_jvp(h, x, g, axis, keepdims),
    props={"fresh", "owned"},
)
defprimitive("prod_grad_jvp", runtime.prod_grad_jvp, _helper("prod_grad_jvp"))
# unindex scatters (adds) h into zeros at index: gathering g at index is its transpose, also
# for repeated integer indices and masks. h may broadcast against x[index].
defvjp(
    "unindex",
    unindex,
    _helper("unindex"),
    lambda g, ans, h, x, index: unbroadcast(g[index], h),
    None,
    None,
    props={"fresh", "owned"},
    complex=True,
)
defvjp(
    "untake",
    untake,
    _helper("untake"),
    lambda g, ans, h, x, indices, axis=None: unbroadcast(np.take(g, indices, axis=axis), h),
    None,
    None,
    None,
    props={"owned"},
    complex=True,
)
# take_part slices h: its transpose pads g with zeros around the same slice.
defvjp(
    "take_part",
    take_part,
    _helper("take_part"),
    lambda g, ans, h, xs, part, axis=0: unindex(
        g if axis is not None else np.ravel(g), h, part_index(xs, part, axis)
    ),
    None,
    None,
    None,
    complex=True,
)
defnondiff("part_index", part_index, _helper("part_index"))
defvjp(
    "expand_reduced",
    runtime.expand_reduced,
    _helper("expand_reduced"),
    lambda g, ans, h, x, axis, keepdims: np.reshape(g, np.shape(h)),
    None,
    None,
    None,
    complex=True,
)
# max_grad(h, m, x, ...) = h (along the reduced axes) * hits / count: the transpose sums
# g * hits / count back over those axes.
defvjp(
    "max_grad",
    max_grad,
    _helper("max_grad"),
    lambda g, ans, h, m, x, axis, keepdims: unbroadcast(
        np.sum(g * max_grad(np.ones_like(m), m, x, axis, keepdims), axis=axis, keepdims=keepdims), h
    ),
    None,
    None,
    None,
    None,
    props={"fresh", "owned"},
    complex=True,
)
# zero_at(h, index) is a projection (h with a part zeroed): its own transpose.
defvjp(
    "zero_at",
    zero_at,
    _helper("zero_at"),
    lambda g, ans, h, index: zero_at(g, index),
    None,
    props={"owned"},
    complex=True,
)
# select_grad passes h through or zeroes it (puts it at the item chosen, for one iterable
# argument: `max(x)`); select_tangent reads the chosen one's back: each is the other's transpose.
defvjp(
    "select_grad",
    select_grad,
    _helper("select_grad"),
    lambda g, ans, h, m, xs, part: select_tangent(g, m, xs, part),
    None,
    None,
    None,
    complex=True,
)
defvjp(
    "select_tangent",
    select_tangent,
    _helper("select_tangent"),
    lambda g, ans, t, m, xs, part: select_grad(g, m, xs, part),
    None,
    None,
    None,
    complex=True,
)
# dot_grad(h, x, y, 0) = d<h, dot(x, y)>/dx is bilinear in (h, y) and reads x only for its
# shape (part 1: in (h, x), y for its shape). Its dot product with g is <h, dot(g, y)>, so
# its VJP for h is dot(g, y) and for y dot_grad(h, g, y, 1); the input read for its shape
# gets zeros. The same holds for inner and tensordot.
defvjp(
    "dot_grad",
    dot_grad,
    _helper("dot_grad"),
    lambda g, ans, h, x, y, part: np.dot(g, y) if part == 0 else np.dot(x, g),
    lambda g, ans, h, x, y, part: np.zeros_like(x) if part == 0 else dot_grad(h, x, g, 0),
    lambda g, ans, h, x, y, part: dot_grad(h, g, y, 1) if part == 0 else np.zeros_like(y),
    None,
    complex=True,
)
defvjp(
    "inner_grad",
    inner_grad,
    _helper("inner_grad"),
    lambda g, ans, h, x, y, part: np.inner(g, y) if part == 0 else np.inner(x, g),
    lambda g, ans, h, x, y, part: np.zeros_like(x) if part == 0 else inner_grad(h, x, g, 0),
    lambda g, ans, h, x, y, part: inner_grad(h, g, y, 1) if part == 0 else np.zeros_like(y),
    None,
    complex=True,
)
defvjp(
    "tensordot_grad",
    tensordot_grad,
    _helper("tensordot_grad"),
    lambda g, ans, h, x, y, axes, part: (
        np.tensordot(g, y, axes) if part == 0 else np.tensordot(x, g, axes)
    ),
    lambda g, ans, h, x, y, axes, part: (
        np.zeros_like(x) if part == 0 else tensordot_grad(h, x, g, axes, 0)
    ),
    lambda g, ans, h, x, y, axes, part: (
        tensordot_grad(h, g, y, axes, 1) if part == 0 else np.zeros_like(y)
    ),
    None,
    None,
    complex=True,
)
# einsum_grad(h, s, operands, k) is the gradient of <h, einsum(s, *operands)> for operand k:
# for h, it is einsum_grad with operand k and the output trading places in s; for the
# operands, see einsum_grad_operands.
defvjp(
    "einsum_grad",
    einsum_grad,
    _helper("einsum_grad"),
    lambda g, ans, h, subscripts, operands, part: einsum_grad(
        g, einsum_swap(subscripts, part), operands, part
    ),
    None,
    lambda g, ans, h, subscripts, operands, part: einsum_grad_operands(
        g, h, subscripts, operands, part
    ),
    None,
    complex=True,
)
defnondiff("einsum_swap", einsum_swap, _helper("einsum_swap"))
defprimitive(
    "einsum_grad_operands", einsum_grad_operands, _helper("einsum_grad_operands"), complex=True
)
defprimitive("einsum_grad_jvp", einsum_grad_jvp, _helper("einsum_grad_jvp"), complex=True)
# The list helpers: the adjoint of a list is a list.
defvjp(
    "unindex_list",
    unindex_list,
    _helper("unindex_list"),
    lambda g, ans, h, items, index: g[index],
    None,
    None,
    complex=True,
)
defvjp(
    "unstack_list",
    unstack_list,
    _helper("unstack_list"),
    lambda g, ans, h, items, axis=0: stack_items(g, axis),
    None,
    None,
    complex=True,
)
defvjp(
    "unconcatenate_list",
    unconcatenate_list,
    _helper("unconcatenate_list"),
    lambda g, ans, h, items, axis=0: concatenate_items(g, axis),
    None,
    None,
    complex=True,
)
defvjp(
    "stack_items",
    stack_items,
    _helper("stack_items"),
    lambda g, ans, items, axis=0: unstack_list(g, items, axis),
    None,
    complex=True,
)
defvjp(
    "concatenate_items",
    concatenate_items,
    _helper("concatenate_items"),
    lambda g, ans, items, axis=0: unconcatenate_list(g, items, axis),
    None,
    complex=True,
)
# sum_list_grad hands h to every item (reduced to its shape): the transpose sums them.
defvjp(
    "sum_list_grad",
    sum_list_grad,
    _helper("sum_list_grad"),
    lambda g, ans, h, items: unbroadcast(sum(g), h),
    None,
    complex=True,
)

# Writing one row of a buffer the optimizer made (optimize.rank_one.batch_rank_one_updates): the only
# in-place store generated code does, into an array no other name refers to.
defprimitive("store_item", runtime.store_item, Spelling("store"), pure=False, complex=True)


def vjp_at_run_time(op, argnum, g, ans, *inputs, **kwargs):
    """Rule `op`'s VJP for input `argnum`, chosen when it runs. Generated code calls this where
    the rule picks its formula by a fact the compiler cannot know (the rank of a value whose
    shape changes between loop trips); elsewhere the formula is inlined. It lives here, not in
    runtime, because it reads the rule table (runtime imports nothing of sourcegrad)."""
    rule = RULES[op]
    if rule.varargs is not None and argnum >= len(rule.params):
        kwargs = dict(kwargs, argnum=argnum)  # the one VJP of every *varargs input
    # A value whose type changes at run time may arrive as a Python number (`x = float(...)`
    # on one branch): the rules read arrays (`x.size`), and a Python number's adjoint is a
    # number (the code may update it, `dx += ...`, which a 0-d view would refuse)
    number = argnum < len(inputs) and type(inputs[argnum]) in (float, int, complex)
    inputs = tuple(np.asarray(v) if type(v) in (float, int, complex) else v for v in inputs)
    result = rule.vjp_for(argnum)(g, ans, *inputs, **kwargs)
    if number and np.ndim(result) == 0:
        return result.item() if isinstance(result, (np.ndarray, np.generic)) else result
    return result


def jvp_at_run_time(op, argnum, t, ans, *inputs, **kwargs):
    """Rule `op`'s explicit JVP for input `argnum`, chosen when it runs (see vjp_at_run_time)."""
    rule = RULES[op]
    if rule.varargs is not None and argnum >= len(rule.params):
        kwargs = dict(kwargs, argnum=argnum)  # the one JVP of every *varargs input
    return rule.jvp_for(argnum)(t, ans, *inputs, **kwargs)


# A rule whose formula depends on a rank known only at run time, called then (see templates);
# generated code writes `sourcegrad.ops.vjp_at_run_time(...)`.
defprimitive(
    "vjp_at_run_time", vjp_at_run_time, Spelling("module", "sourcegrad.ops.vjp_at_run_time")
)
defprimitive(
    "jvp_at_run_time", jvp_at_run_time, Spelling("module", "sourcegrad.ops.jvp_at_run_time")
)

# --- forward mode ----------------------------------------------------------------------------

deflinear(
    "joint",
    "make_list",
    "make_tuple",
    "list_append",
    "stack_list",
    "concatenate_list",
    "sum_builtin",
    "setitem",
    "add_adjoints",
    "getitem_list",
)
for _name in (
    "unindex",
    "untake",
    "take_part",
    "expand_reduced",
    "zero_at",
    "unindex_list",
    "unstack_list",
    "unconcatenate_list",
    "sum_list_grad",
    "select_grad",
    "select_tangent",
    "max_grad",
    "stack_items",
    "concatenate_items",
):
    RULES[_name].linear = (0,)
for _name in ("dot_grad", "inner_grad", "tensordot_grad"):
    RULES[_name].linear = (0, 1, 2)  # bilinear in g and the other operand: see defjvp below
RULES["einsum_grad"].linear = (0,)
# Bilinear, not jointly linear: the JVP is the sum over inputs with one replaced by its
# tangent (the input read only for its shape contributes zeros). These explicit rules take
# precedence over the marks above.
defjvp(
    "dot_grad",
    lambda t, ans, h, x, y, part: dot_grad(t, x, y, part),
    lambda t, ans, h, x, y, part: np.zeros_like(ans) if part == 0 else dot_grad(h, t, y, 1),
    lambda t, ans, h, x, y, part: dot_grad(h, x, t, 0) if part == 0 else np.zeros_like(ans),
)
defjvp(
    "inner_grad",
    lambda t, ans, h, x, y, part: inner_grad(t, x, y, part),
    lambda t, ans, h, x, y, part: np.zeros_like(ans) if part == 0 else inner_grad(h, t, y, 1),
    lambda t, ans, h, x, y, part: inner_grad(h, x, t, 0) if part == 0 else np.zeros_like(ans),
)
defjvp(
    "tensordot_grad",
    lambda t, ans, h, x, y, axes, part: tensordot_grad(t, x, y, axes, part),
    lambda t, ans, h, x, y, axes, part: (
        np.zeros_like(ans) if part == 0 else tensordot_grad(h, t, y, axes, 1)
    ),
    lambda t, ans, h, x, y, axes, part: (
        tensordot_grad(h, x, t, axes, 0) if part == 0 else np.zeros_like(ans)
    ),
)
defjvp(
    "einsum_grad",
    lambda t, ans, h, subscripts, operands, part: einsum_grad(t, subscripts, operands, part),
    None,
    lambda t, ans, h, subscripts, operands, part: einsum_grad_jvp(h, subscripts, operands, t, part),
)
defjvp(
    "prod_grad",
    lambda t, ans, h, x, axis, keepdims: prod_grad(t, x, axis, keepdims),
    lambda t, ans, h, x, axis, keepdims: prod_grad_jvp(h, x, t, axis, keepdims),
)
defjvp("min_builtin", lambda t, ans, *xs, argnum: select_tangent(t, ans, xs, argnum))
RULES["max_builtin"].jvps = RULES["min_builtin"].jvps
defprimitive("max_jvp", runtime.max_jvp, _helper("max_jvp"))
defprimitive("var_jvp", runtime.var_jvp, _helper("var_jvp"))


# The compiler's transforms of a function of the user's, for the ops that call one and
# differentiate it when they run (scipy.integrate.odeint: its VJP solves the adjoint ODE with
# the compiled VJP of the user's dynamics): `sourcegrad.api` puts its `vjp` and `jvp` here
# when it is imported (the ops import nothing of the api).
USER_FUNCTION_TRANSFORMS: dict = {}


def call_gradient(gradient, *args):
    """`sourcegrad.grad(f)(x)` called inside differentiated code: the gradient runs as it
    runs anywhere (its own compiled code)."""
    return gradient(*args)


# A gradient called inside differentiated code (a Newton step, meta-learning): its VJP is
# the gradient's own pullback (a Hessian-vector product for grad(f)), computed when the
# backward runs by the compiled second-order code of the gradient
defvjp(
    "call_gradient",
    call_gradient,
    Spelling("pycall"),
    None,
    lambda g, ans, gradient, *args, argnum: gradient.pullback_of_gradient(argnum - 1, g, args),
    pure=False,
    run_time_vjp=True,
)


def traced_call(callee, *args):
    """A call the source front end does not read (an object with `__call__`, a function a C
    decorator wraps): Python runs it in the forward pass."""
    return callee(*args)


_TRACED_VJPS: dict = {}  # (id of the callee, argument) -> (callee, the compiler's vjp of it)


def traced_call_vjp(g, callee, argnum, args):
    """The VJP of `callee(*args)` for its argument `argnum`: the compiler's vjp of the callee
    (made from a trace of it where its source is not read, once per signature), at args."""
    if not USER_FUNCTION_TRANSFORMS:
        import sourcegrad  # noqa: F401  (puts the compiler's transforms in place)
    key = (id(callee), argnum)
    made = _TRACED_VJPS.get(key)
    if made is None or made[0] is not callee:
        if len(_TRACED_VJPS) >= 256:
            _TRACED_VJPS.clear()
        made = _TRACED_VJPS[key] = (callee, USER_FUNCTION_TRANSFORMS["vjp"](callee, wrt=argnum))
    _, pullback = made[1](*args)
    return pullback(g)


# A call of what the source front end does not read, inside code it reads (the loop around
# it stays a loop): run as it is in the forward pass, its derivative its traced VJP when the
# backward runs
defvjp(
    "traced_call",
    traced_call,
    Spelling("pycall"),
    None,
    lambda g, ans, callee, *args, argnum: traced_call_vjp(g, callee, argnum - 1, args),
    pure=False,
    run_time_vjp=True,
)


def primitive_call(primitive, *args):
    """A function of the user's made a primitive (`sourcegrad.extend.primitive`, autograd's
    `autograd.extend.primitive`): not read, Python runs it in the forward pass."""
    return primitive.fun(*args)


# A user's primitive: its derivative is the VJP (or JVP) the user gave it with
# `sourcegrad.extend.defvjp` / `defjvp`, called when the backward (or the forward-mode
# pass) runs; the primitive object says which input has one and checks what it returns
defvjp(
    "primitive_call",
    primitive_call,
    Spelling("pycall"),
    None,
    lambda g, ans, primitive, *args, argnum: primitive.vjp(argnum - 1, g, ans, args),
    jvps=(None, lambda t, ans, primitive, *args, argnum: primitive.jvp(argnum - 1, t, ans, args)),
    pure=False,
    run_time_vjp=True,
)


# Example inputs for the registry's test grid (ops/examples.py): lists as user code builds them.
EXAMPLES = {
    "getitem_list": [ex([arg(3), arg(3)], 1)],
    "stack_list": [ex([arg(3, 4), arg(3, 4)]), ex([arg(3), arg(3)], axis=1)],
    "concatenate_list": [ex([arg(2, 4), arg(1, 4)]), ex([arg(3, 1), arg(3, 2)], axis=1)],
    "sum_builtin": [ex([arg(3), arg(3), arg(3)])],
    "min_builtin": [ex(arg(py=True), arg(domain="large", py=True))],
    "max_builtin": [ex(arg(py=True), arg(domain="large", py=True))],
    "np_array": [ex([arg(py=True), arg(py=True)]), ex([arg(3), arg(3)])],
    "tuple_builtin": [ex([arg(3), arg(2)]), ex(arg(2, 3))],
    "list_builtin": [ex([arg(3), arg(2)]), ex(arg(2, 3))],
    "sequence_grad": [ex([arg(3), arg(3)], arg(2, 3)), ex([arg(3), arg(2)], [arg(3), arg(2)])],
}
