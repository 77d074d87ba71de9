"""What names stand for while lowering, besides IR atoms: modules, functions and methods
(called by inlining), compile-time containers (`Record`, `Static`) of parameter trees and
dict displays, objects read when compiling; the `Context` all functions lowered into one IR
share; and the small tables the lowering consults.
"""

from __future__ import annotations

import functools
import operator
import types
from dataclasses import dataclass, field

import gast
import numpy as np

from ... import errors, trees
from .. import random_draws
from ..ir import Const, Tup
from ..names import Namer


@dataclass(frozen=True)
class ModuleRef:
    module: object


@dataclass(frozen=True)
class CallableRef:
    obj: object


@dataclass(frozen=True)
class Record:
    """A dict, NamedTuple or dataclass known at compile time: its keys (or field names) and
    the atoms (or nested containers) it holds. It costs no code: `d["W"]`, `p.w`, unpacking,
    `.items()` and loops over it are resolved while lowering, so each item keeps its own
    adjoint. It never reaches the IR (`Lowerer.refuse_records`). `local`: made by a dict
    display in this function (only such a dict may be changed by `d[k] = v`)."""

    kind: str
    cls: object
    keys: tuple
    values: tuple
    local: bool = field(default=False, compare=False)

    def describe(self) -> str:
        if self.kind == trees.DICT:
            return "a dict"
        return (
            f"a {'NamedTuple' if self.kind == trees.NAMEDTUPLE else 'dataclass'} "
            f"({self.cls.__name__})"
        )

    def with_item(self, key, value) -> "Record":
        if key in self.keys:
            values = tuple(value if k == key else v for k, v in zip(self.keys, self.values))
            return Record(self.kind, self.cls, self.keys, values, True)
        return Record(self.kind, self.cls, self.keys + (key,), self.values + (value,), True)


@dataclass(frozen=True)
class Static:
    """A sequence only a loop or `len` may use: `d.items()`, `d.values()`, `d.keys()`,
    iterated at compile time (its keys are strings, its items may be containers)."""

    items: tuple
    what: str


def holds_record(atom) -> bool:
    """Whether an atom is, or a compile-time tuple holds, a Record or a Static."""
    if isinstance(atom, (Record, Static)):
        return True
    return isinstance(atom, Tup) and any(holds_record(a) for a in atom.items)


def nests_containers(atom) -> bool:
    """A compile-time tuple of containers (`[(W1, b1), (W2, b2)]` passed as a parameter
    tree, a tuple of tuples): a loop over it is unrolled, so each layer keeps its shapes
    and its own adjoints, as straight-line code."""
    return isinstance(atom, Tup) and any(isinstance(a, (Tup, Record)) for a in atom.items)


def contains(atom, record) -> bool:
    """Whether `atom` is `record` or holds it (in a tuple or another record). The same
    object: two dicts with equal items (`a, b = {}, {}`) are two dicts."""
    if atom is record:
        return True
    if isinstance(atom, Tup):
        return any(contains(a, record) for a in atom.items)
    if isinstance(atom, Record):
        return any(contains(a, record) for a in atom.values)
    return False


def first_record(atom):
    if isinstance(atom, (Record, Static)):
        return atom
    if isinstance(atom, Tup):
        return next((r for r in map(first_record, atom.items) if r is not None), None)
    return None


def closure_values(fn) -> dict:
    cells = fn.__closure__ or ()
    values = {}
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable is assigned later in the outer function
            pass
    return values


def static_value(value):
    """The `Const` a global or closure value inlines as, or None if it must stay a name."""
    if isinstance(value, (bool, int, float, str)) or value is None or value is Ellipsis:
        return Const(value)
    if isinstance(value, np.generic) and value.ndim == 0 and value.dtype.kind in "biuf":
        return Const(value.item())
    if isinstance(value, tuple) and all(
        isinstance(v, (int, float, bool, str)) or v is None for v in value
    ):
        return Const(value)
    return None


# Methods on arrays: the op each calls is the registry's (`ops.op_for_method`); here, how a
# method's arguments map onto it.
VARARG_METHODS = {"reshape": "shape", "transpose": "axes"}  # x.reshape(2, 3) == x.reshape((2, 3))


ATTRS = {
    "T": "T",
    "shape": "shape",
    "ndim": "ndim",
    "size": "size",
    "dtype": "dtype",
    "real": "real_attr",
    "imag": "imag_attr",
}


class Context:
    """What every function lowered into one IR shares: names, free values, the output blocks."""

    def __init__(self):
        self.namer = Namer(reserved={"np", "math"})
        self.free: dict = {}
        self.user_names: set = set()
        self.blocks: list = [[]]  # the statement list being written, innermost last
        self.inline_depth = 0
        self.parsed_cache: dict = {}
        self.dependencies: list = []  # (kind, globals dict or closure cell, name, value read)
        self.generators: set = set()  # names of random generators made in the code
        # the tuples of parameter trees: their names, and their values once made (tuple_value)
        self.tuple_names: dict = {}
        self.tuple_values: dict = {}
        # those of them that are lists (an item may be assigned: `p[0] *= 2`)
        self.list_tuples: set = set()
        self.issued: set = set()  # user names (prefixed) that have been given a value
        self.active_prefixes: list = []  # of the functions being inlined, outermost first

    @property
    def out(self) -> list:
        return self.blocks[-1]


@dataclass
class LocalFunction:
    """A nested def or lambda: its node, the scope it closes over, its default atoms."""

    node: object
    scope: object
    defaults: dict


@dataclass(frozen=True)
class MethodRef:
    """A method of an object known when compiling (`model.predict`): its function, inlined
    with `self` bound to the object's atom."""

    fn: object
    receiver: object


@dataclass(frozen=True)
class PartialRef:
    """`functools.partial(f, *args, **kwargs)` (made in the code, or a global or closure
    partial object): the function value `f` with leading arguments and keywords (atoms),
    called as `f(*args, *more, **{**kwargs, **more_kwargs})` where the code calls it."""

    target: object
    args: tuple
    kwargs: tuple


# what a name may stand for at compile time besides an IR atom: a function, called by
# inlining where the code calls it (never a value of the generated code)
FUNCTION_VALUES = (CallableRef, LocalFunction, MethodRef, PartialRef)


def function_label(value) -> str:
    if isinstance(value, PartialRef):
        return f"functools.partial({function_label(value.target)}, ...)"
    if isinstance(value, (CallableRef, MethodRef)):
        obj = value.obj if isinstance(value, CallableRef) else value.fn
        return getattr(obj, "__qualname__", None) or repr(obj)
    return getattr(value.node, "name", "lambda")


NOT_AN_OBJECT = object()


_VALUE_TYPES = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    tuple,
    list,
    dict,
    set,
    frozenset,
    type(None),
    np.ndarray,
    np.generic,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    np.ufunc,
)


def is_plain_object(value) -> bool:
    """An instance of a user class (a model, a config), whose attributes are read when
    compiling: not a number, container, array, module, function or random generator, nor
    an object of a library (scipy.stats.t: its methods have rules, or no rule)."""
    return (
        not isinstance(value, _VALUE_TYPES + random_draws.GENERATOR_TYPES)
        and not hasattr(value, "__array_interface__")
        and not hasattr(value, "__cuda_array_interface__")
        and type(value).__module__.split(".")[0] not in LIBRARIES + ("numpy",)
    )


@dataclass
class Loop:
    brk: str | None
    cont: str | None


MAX_INLINE_DEPTH = 32

# the operator module's in-place functions: `a = operator.iadd(a, x)` is `a += x`
IN_PLACE_OPERATORS = {
    operator.iadd: gast.Add,
    operator.isub: gast.Sub,
    operator.imul: gast.Mult,
    operator.itruediv: gast.Div,
    operator.ifloordiv: gast.FloorDiv,
    operator.imod: gast.Mod,
    operator.ipow: gast.Pow,
    operator.imatmul: gast.MatMult,
    operator.ior: gast.BitOr,
    operator.iand: gast.BitAnd,
    operator.ixor: gast.BitXor,
}


# builtins whose calls are lowered by a method of the Lowerer, not by a derivative rule
COMPILE_TIME_BUILTINS = {
    slice: "slice_call",
    callable: "callable_call",
    isinstance: "isinstance_call",
    tuple: "sequence_builtin_call",
    list: "sequence_builtin_call",
    functools.partial: "partial_call",
    divmod: "divmod_call",
    np.divmod: "divmod_call",
}


def as_dtype(atom):
    """A type passed to an operation (`x.astype(np.float32)`, `dtype=float`) is a constant
    of the code, not a function value."""
    if (
        isinstance(atom, CallableRef)
        and isinstance(atom.obj, type)
        and (issubclass(atom.obj, np.generic) or atom.obj in (float, int, bool, complex))
    ):
        return Const(atom.obj)
    return atom


def function_stand_in():
    """What isinstance sees for a function defined in the differentiated code."""


def structure_atom(treedef, leaves, path, names, lists=None):
    """The compile-time container of a tree argument: a `Tup` for a list or tuple (a
    `Const` when empty; `names` gets its path as a name, and `lists`, where given, the Tups
    that stand for lists), a `Record` for a dict, NamedTuple or dataclass."""
    if treedef.kind == trees.LEAF:
        return next(leaves)
    if treedef.kind == trees.CUSTOM:  # (its methods know its fields: a trace reads them)
        raise errors.UnsupportedSyntaxError(
            f"{path} is a {treedef.cls.__name__} (registered with sourcegrad.register_tree), "
            "which the source front end does not read"
        )
    keys = treedef.keys or range(len(treedef.children))
    items = tuple(
        structure_atom(
            c,
            leaves,
            f"{path}_{k}" if str(k).isidentifier() or str(k).isdigit() else f"{path}_{i}",
            names,
            lists,
        )
        for i, (k, c) in enumerate(zip(keys, treedef.children))
    )
    if treedef.kind in (trees.LIST, trees.TUPLE):
        if not items:
            return Const([] if treedef.kind == trees.LIST else ())
        names.setdefault(Tup(items), path)
        if lists is not None and treedef.kind == trees.LIST:
            lists.add(Tup(items))
        return Tup(items)
    return Record(treedef.kind, treedef.cls, treedef.keys, items)


PY_OPS = {
    "add_op": lambda a, b: a + b,
    "sub_op": lambda a, b: a - b,
    "mul_op": lambda a, b: a * b,
    "div_op": lambda a, b: a / b,
    "pow_op": lambda a, b: a**b,
    "mod_op": lambda a, b: a % b,
    "floordiv_op": lambda a, b: a // b,
    "matmul_op": lambda a, b: a @ b,
    "or_op": lambda a, b: a | b,
    "and_op": lambda a, b: a & b,
    "xor_op": lambda a, b: a ^ b,
}

# Libraries whose Python functions are never inlined from their own source: a function of
# theirs is a primitive with a rule (sourcegrad.ops) or a NoRuleError.
LIBRARIES = ("scipy",)

# min(a, b) / max(a, b) / sum(...) with several arguments: elementwise forms
BUILTIN_REDUCTIONS = {"min_builtin": "min_builtin", "max_builtin": "max_builtin"}


def joined_tuples(op, left, right):
    """`a + b` of two tuples known while compiling (a `Tup` or a constant tuple), else None."""

    def items(atom):
        if isinstance(atom, Tup):
            return atom.items
        if isinstance(atom, Const) and type(atom.value) is tuple:
            return tuple(Const(v) for v in atom.value)
        return None

    first, second = items(left), items(right)
    if (
        op != "add_op"
        or first is None
        or second is None
        or not (isinstance(left, Tup) or isinstance(right, Tup))
    ):
        return None
    return Tup(first + second)


def unique_dependencies(deps):
    seen, out = set(), []
    for kind, container, name, value in deps:
        key = (id(container), name)
        if key not in seen:
            seen.add(key)
            out.append((kind, container, name, value))
    return out


def pack(args):
    if all(isinstance(a, Const) for a in args):
        return Const(tuple(a.value for a in args))
    return Tup(tuple(args))
