"""Parameter trees: nested lists, tuples, dicts, NamedTuples and dataclasses of leaves.

`flatten(value)` takes an argument and returns `(leaves, treedef)`: the leaves (arrays,
numbers, anything that is not one of those containers) in a fixed order, and a hashable
`TreeDef` saying how they nest. `treedef.unflatten(leaves)` rebuilds a value of the same
structure (a gradient shaped like its parameters). `treedef.leaf_names(base)` names each
leaf for generated code (`params_W1`, `params_0_1`, `params_w`), `treedef.paths(base)`
spells each as the user would (`params["W1"]`, `params[0][1]`, `params.w`) for messages.
The front end (`frontend.Lowerer.lower`) binds a tree argument to compile-time containers
of its leaves' names.

Why a small module of our own rather than a pytree library (optree, JAX's tree_util):
the core dependencies stay numpy, gast and astor; the compiler needs only the five
container kinds Python numerical code uses for parameters; and the front end needs the
structure itself (keys, field names, order), not just flatten/unflatten, to lower
`params["W1"]`, `p.w`, `for W, b in params` and `.items()` at compile time. A dict
keeps its insertion order (JAX sorts keys; the user's order reads better in generated
code and rebuilds the dict the user passed). A dataclass is rebuilt without calling its
`__init__` or `__post_init__` (a gradient need not pass the class's validation).
"""

from __future__ import annotations

import dataclasses
import keyword
from dataclasses import dataclass

LIST, TUPLE, DICT, NAMEDTUPLE, DATACLASS, CUSTOM, LEAF = (
    "list",
    "tuple",
    "dict",
    "namedtuple",
    "dataclass",
    "custom",
    "leaf",
)

# classes registered by `register_tree`: class -> (flatten, unflatten)
_REGISTERED: dict = {}


def register_tree(cls, flatten, unflatten) -> None:
    """Make instances of `cls` parameter trees, as JAX's `register_pytree_node`:
    `flatten(obj) -> (children, aux)` gives the values it holds (arrays, numbers, or trees
    themselves) and hashable data that is not differentiated; `unflatten(aux, children)`
    makes an object of the class again (the gradient, shaped like the argument). A function
    taking one is differentiated through its trace (`sourcegrad.compiler.trace`): Python
    runs the class's own methods on traced values."""
    if not isinstance(cls, type):
        raise TypeError(f"register_tree takes a class, got {cls!r}")
    _REGISTERED[cls] = (flatten, unflatten)


def kind_of(value) -> str:
    """The node kind of a value (LEAF for anything that is not a container of the tree)."""
    t = type(value)
    if t is list:
        return LIST
    if t is dict:
        return DICT
    if t is tuple:
        return TUPLE
    if isinstance(value, tuple) and hasattr(t, "_fields"):
        return NAMEDTUPLE
    if _REGISTERED and t in _REGISTERED:
        return CUSTOM
    # (dataclasses.is_dataclass, without its call: asked for every leaf of every call)
    if hasattr(t, "__dataclass_fields__") and not isinstance(value, type):
        return DATACLASS
    return LEAF


@dataclass(frozen=True, eq=True)
class TreeDef:
    """One node: its kind, its class (NamedTuple and dataclass), its keys (dict keys or field
    names) and its children's TreeDefs. Equal structures are equal and hash alike."""

    kind: str
    cls: object = None
    keys: tuple = ()
    children: tuple = ()

    def __hash__(self):
        # (a TreeDef keys the compiled code of each call: its hash is computed once)
        known = self.__dict__.get("_hash")
        if known is None:
            known = hash((self.kind, self.cls, self.keys, self.children))
            object.__setattr__(self, "_hash", known)
        return known

    @property
    def num_leaves(self) -> int:
        if self.kind == LEAF:
            return 1
        return sum(c.num_leaves for c in self.children)

    def unflatten(self, leaves):
        """The value of this structure holding `leaves` (any iterable, consumed in order)."""
        return self._build(iter(leaves))

    def _build(self, it):
        if self.kind == LEAF:
            return next(it)
        items = [c._build(it) for c in self.children]
        if self.kind == LIST:
            return items
        if self.kind == TUPLE:
            return tuple(items)
        if self.kind == DICT:
            return dict(zip(self.keys, items))
        if self.kind == NAMEDTUPLE:
            return self.cls(*items)
        if self.kind == CUSTOM:  # (keys holds the class's aux data: register_tree)
            return _REGISTERED[self.cls][1](self.keys[0], items)
        obj = object.__new__(self.cls)  # (see the module docstring: no __init__)
        for k, v in zip(self.keys, items):
            object.__setattr__(obj, k, v)
        return obj

    def _steps(self):
        """Per leaf, the path to it: a tuple of (kind, key, position) steps."""
        if self.kind == LEAF:
            return [()]
        return [
            ((self.kind, k, i),) + rest
            for i, (k, c) in enumerate(zip(self._child_keys(), self.children))
            for rest in c._steps()
        ]

    def _child_keys(self):
        return (
            self.keys
            if self.kind in (DICT, NAMEDTUPLE, DATACLASS)
            else tuple(range(len(self.children)))  # (a list's, a tuple's, a registered class's)
        )

    def paths(self, base: str) -> list:
        """Each leaf spelled as the user reaches it: `params["W1"]`, `params[0][1]`, `p.w`."""
        out = []
        for steps in self._steps():
            text = base
            for kind, key, _ in steps:
                text += (
                    f".{key}"
                    if kind in (NAMEDTUPLE, DATACLASS)
                    else f'["{key}"]'
                    if isinstance(key, str) and '"' not in key
                    else f"[{key!r}]"
                )
            out.append(text)
        return out

    def leaf_names(self, base: str) -> list:
        """Each leaf as a Python name: `params_W1`, `params_0_1`, `p_w` (a key that is not
        a name part, such as "layer 1", by its position)."""
        out = []
        for steps in self._steps():
            parts = [base]
            for _kind, key, position in steps:
                word = str(key)
                parts.append(
                    word
                    if (word.isidentifier() or word.isdigit()) and not keyword.iskeyword(word)
                    else str(position)
                )
            out.append("_".join(parts))
        return out


class Rebuild:
    """`Rebuild(treedef)(*leaves)`: the value of that structure holding the leaves (how
    generated code makes a dict it returns as has_aux's aux)."""

    def __init__(self, treedef: TreeDef):
        self.treedef = treedef

    def __call__(self, *leaves):
        return self.treedef.unflatten(leaves)

    def __repr__(self):
        return f"Rebuild({self.treedef!r})"


def flatten(value):
    """(leaves, TreeDef) of a value; a value that is no container is one leaf."""
    leaves = []
    return leaves, _flatten(value, leaves)


def _flatten(value, leaves) -> TreeDef:
    kind = kind_of(value)
    if kind == LEAF:
        leaves.append(value)
        return TreeDef(LEAF)
    if kind in (LIST, TUPLE):
        return TreeDef(kind, None, (), tuple(_flatten(v, leaves) for v in value))
    if kind == DICT:
        keys = tuple(value)
        for k in keys:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"a parameter dict's keys must be strings or ints, got {k!r}")
        return TreeDef(DICT, None, keys, tuple(_flatten(value[k], leaves) for k in keys))
    if kind == NAMEDTUPLE:
        cls = type(value)
        return TreeDef(
            NAMEDTUPLE, cls, tuple(cls._fields), tuple(_flatten(v, leaves) for v in value)
        )
    if kind == CUSTOM:
        children, aux = _REGISTERED[type(value)][0](value)
        return TreeDef(CUSTOM, type(value), (aux,), tuple(_flatten(v, leaves) for v in children))
    fields = tuple(f.name for f in dataclasses.fields(value))
    return TreeDef(
        DATACLASS, type(value), fields, tuple(_flatten(getattr(value, f), leaves) for f in fields)
    )


def _is_static_leaf(value) -> bool:
    return isinstance(value, (bool, int, str, type(None)))


def is_static(value) -> bool:
    """A container of ints, bools, strings and None (a shape, a list of indices): passed as
    it is, as before parameter trees (an int list indexes as numpy's fancy index)."""
    kind = kind_of(value)
    if kind == LEAF:
        return _is_static_leaf(value)
    if kind in (LIST, TUPLE):
        return all(is_static(v) for v in value)
    return False


def needs_flattening(value, differentiated: bool) -> bool:
    """Whether an argument is passed to generated code as its leaves: a container that is
    differentiated, or that holds an array, a float or any other object. A hashable tuple
    of floats stays one argument (the signature holds its values, as it did)."""
    kind = kind_of(value)
    if kind == LEAF:
        return False
    if differentiated:
        return True
    if is_static(value):
        return False
    if type(value) is tuple and all(isinstance(v, float) or _is_static_leaf(v) for v in value):
        return False
    return True


__all__ = [
    "TreeDef",
    "register_tree",
    "Rebuild",
    "flatten",
    "kind_of",
    "is_static",
    "needs_flattening",
    "LIST",
    "TUPLE",
    "DICT",
    "NAMEDTUPLE",
    "DATACLASS",
    "CUSTOM",
    "LEAF",
]
