"""Arguments a traced function stores into objects that outlive the call: stored again on
every call of the code made from the trace.

Course code (cs231n's `TwoLayerNet`) keeps its weights on an object and differentiates a
function that puts the argument there before calling the object's loss:

    def f(params):
        net.params = params      # or `net.W1 = W1`, `self.model.weights = w`
        return net.loss(X, y)    # reads self.params: this call's argument

The code made from one run (a trace) repeats only the numpy operations, so the store would
happen at the trace only (`python_state` refuses such changes). A store whose value is made of
the call's arguments is the same on every call up to which arguments are given, so it is
recorded as a `Store` and made again on each call with that call's arguments, as Python
would leave the object: the argument itself where the function stored it (the same object),
a list, tuple or dict the function built of arguments made anew. What the code reads of the
attribute after the store is the traced argument (a parameter of the code, not a constant).

A store is replayed only where the function did not read the attribute before writing it
(`PythonState.read_first`: the trace notes each read of a watched object's attribute that
still holds its old value, `reads_noted`): the code would otherwise hold what that read
gave, where a later call reads the previous call's argument. Such a store, a value computed
inside (`self.last = x * 2`), an append, a deletion, a class attribute, stay refused.

    stores = python_state.stored_arguments(recipe_of)   # after the run, before values are plain
    replay(stores, args)                                # each call (`Trace.replay`)
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from ... import trees
from .objects import user_object

# a recipe: how a call's arguments make the value stored
#   ("leaf", k)                          the code's argument k, as it is (the same object)
#   ("tree", j, start, treedef)          the function's argument j, a tree given to the code
#                                        as its leaves start.. (the caller's own object where
#                                        it passes it: `replay(whole=...)`)
#   ("list" | "tuple", (recipe, ...)), ("dict", ((key, recipe), ...))
# (no constants: a number or string the trace saw may have come from anything, a clock, a
# counter, and Python would compute it again; stored once per call it could be stale)


class Store:
    """`holder.name = <what recipe makes of the call's arguments>`, made on every call."""

    __slots__ = ("holder", "name", "recipe")

    def __init__(self, holder, name, recipe):
        self.holder, self.name, self.recipe = holder, name, recipe

    def __repr__(self):
        return f"Store({type(self.holder).__name__}.{self.name} = {self.recipe!r})"


def replay(stores, args, whole=None) -> None:
    """Make each store with this call's `args` (the code's arguments); `whole`: the
    function's own arguments where the caller has them (a tree argument is then stored as
    the caller's object, not one rebuilt from its leaves)."""
    for store in stores:
        setattr(store.holder, store.name, _built(store.recipe, args, whole))


def _built(recipe, args, whole):
    kind = recipe[0]
    if kind == "leaf":
        return args[recipe[1]]
    if kind == "tree":
        _, j, start, treedef = recipe
        if whole is not None:
            return whole[j]
        return treedef.unflatten(list(args[start : start + treedef.num_leaves]))
    if kind == "dict":
        return {key: _built(part, args, whole) for key, part in recipe[1]}
    items = [_built(part, args, whole) for part in recipe[1]]
    return items if kind == "list" else tuple(items)


class Arguments:
    """What the traced function was given, by identity: the code's arguments (`given`, per
    position: a traced value, or an object given as it is) and the trees rebuilt from them
    (`trees`: (position of the function's argument, first leaf, treedef, the tree given))."""

    def __init__(self, given, rebuilt):
        self.leaves = {id(value): k for k, value in enumerate(given)}
        self.trees = {id(tree): (j, start, treedef, tree) for j, start, treedef, tree in rebuilt}
        self.given = list(given)

    def recipe(self, value, existing=frozenset()):
        """How the call's arguments make `value`, or None where they do not (a value
        computed inside, an object of the user's). `existing`: the ids of the containers
        that were there before the call (not built of the arguments by it)."""
        k = self.leaves.get(id(value))
        if k is not None and self.given[k] is value:
            return ("leaf", k)
        known = self.trees.get(id(value))
        if known is not None and known[3] is value:
            j, start, treedef, tree = known
            leaves, now = trees.flatten(tree)
            same = now == treedef and all(
                leaf is self.given[start + i] for i, leaf in enumerate(leaves)
            )
            return ("tree", j, start, treedef) if same else None  # (changed by the call: no)
        if id(value) in existing:
            return None
        if type(value) in (list, tuple):
            parts = [self.recipe(item, existing) for item in value]
            kind = "list" if type(value) is list else "tuple"
            return None if None in parts else (kind, tuple(parts))
        if type(value) is dict:
            pairs = [(key, self.recipe(item, existing)) for key, item in value.items()]
            if any(part is None for _, part in pairs) or not all(
                type(key) in (int, str) for key, _ in pairs
            ):
                return None
            return ("dict", tuple(pairs))
        return None


@contextmanager
def reads_noted(python_state):
    """While the trace runs, each read of an attribute of a watched object (`python_state`)
    by code other than sourcegrad's own is told to `python_state.note_read`: the class of each
    such object has its `__getattribute__` wrapped, and put back afterwards."""
    patched: dict = {}

    def watch(cls):
        if cls in patched or not user_object(cls):
            return
        own = cls.__dict__.get("__getattribute__")
        original = cls.__getattribute__

        def __getattribute__(obj, name):
            value = original(obj, name)
            if python_state.watches(obj) and not _sourcegrads(sys._getframe(1)):
                python_state.note_read(obj, name, value)
            return value

        try:
            cls.__getattribute__ = __getattribute__
        except (TypeError, AttributeError):  # (a class that refuses it: its reads unknown)
            python_state.unread_classes.add(cls)
            return
        patched[cls] = own

    python_state.on_watched = watch
    for cls in python_state.instance_classes():
        watch(cls)
    try:
        yield
    finally:
        python_state.on_watched = None
        for cls, own in patched.items():
            if own is None:
                del cls.__getattribute__
            else:
                cls.__getattribute__ = own


def _sourcegrads(frame) -> bool:
    """Is this frame sourcegrad's own code (its machinery reading an object, not the user)?"""
    return frame is not None and frame.f_globals.get("__name__", "").startswith("sourcegrad.")
