"""One trace: the statements recorded while the user's function runs on `Traced` values.

`trace_function(fn, args, params, wrt, why)` runs `fn` once on traced copies of its array
and number arguments (other arguments, objects and callables, are given as they are) and
returns a `Trace`: an `ir.Function` the rest of the pipeline compiles as it compiles the
AST front end's, with

- one statement per numpy operation on a traced value, the registry's op (what the AST
  front end makes of the same source), located at the user's line (the innermost frame of
  the user's code), named after the user's variable where one holds it after its line
  (frame locals, read at each line event) and after the op otherwise;
- a `trace_guard` statement per decision Python took on a traced value (`bool()`,
  `int()`, `float()` of a value no gradient flows through), and per shape Python read of a
  value whose shape the data decide (`len(x[x > 0])`: `fact`): the generated code raises
  `runtime.GuardMiss` where a call decides otherwise;
- plain arrays met on the way (an object's `self.W`, a global) bound by identity as free
  values, and the globals, closure values and argument objects' attributes the trace read as
  its dependencies (a rebinding, or a changed number, traces again).

What the recorder refuses, located: a value carrying a gradient that leaves for plain Python
or numpy, a numpy function without a rule given one (the fence), a trace longer than
`MAX_STATEMENTS` statements (a long Python loop: keep it in a function the AST front end
reads, which keeps loops loops).

Why one module: the recorder's state (statements, names, guards, snapshots of what was read)
is what every part of a trace writes to and `trace_function` reads back; what stands apart
lives apart (values, patches, frames, python_state).
"""

from __future__ import annotations

import functools
import inspect
import linecache
import operator
import re
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ... import errors
from ...errors import SourceLocation
from ...ops import RULES, data_shaped, op_for_method, rule_for_function
from ...ops.numpy_functions import (
    piecewise_by_masks,
    ufunc_at_entry,
    ufunc_method_axis,
    ufunc_method_function,
    where_variant,
)
from ...trees import DICT
from .. import random_draws
from ..dependencies import dependency, user_module
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    Function,
    Return,
    Slc,
    Tup,
    Var,
    substitute_value,
    walk,
)
from ..names import Namer, name_for_call, sanitize
from . import exceptions, state, stores
from .frames import ModuleBodies, in_a_library, is_user, loop_headers, runs_user_code
from .objects import MOST_OBJECTS, attributes_of, has_attributes, user_object
from .patches import (
    TracedGenerator,
    library_functions,
    originals,
    patched,
    ragged,
    replace_library_functions,
)
from .python_state import PythonState
from .rolling import Loop, atoms_in, roll
from .stored_arguments import Arguments, reads_noted, replay
from .values import Traced

MAX_STATEMENTS = 20_000  # a longer trace is a long Python loop: refused, located


@dataclass
class Trace:
    """A traced function: its IR, how many guards it checks, and why it was traced."""

    function: Function
    guards: int
    why: str
    lines: list = field(default_factory=list)  # the user lines the trace went through
    # (position, value) of the arguments given to the function as they are: the code is
    # valid for calls passing the same objects (numbers and strings: equal ones)
    statics: list = field(default_factory=list)
    # arguments the function stores into objects outliving the call (`stored_arguments`):
    # made again by each call of the code, before it runs (`replay`)
    stores: list = field(default_factory=list)
    # the user code it ran has a try statement: an exception the code raises on another
    # call's data may be one Python catches there (`exceptions`), so it is traced again
    catches: bool = False
    # numpy's floating-point errors the function made raise around its operations
    # (`np.errstate(invalid="raise")` inside it): the code runs under the same
    raising: tuple = ()

    def replay(self, args, whole=None) -> None:
        """Store this call's arguments where the function stores them (`whole`: the
        function's own arguments, where the code is given a tree's leaves)."""
        replay(self.stores, args, whole)

    def same_statics(self, args) -> bool:
        """Does a call pass the objects this trace took as they are? (Numbers, strings and
        tuples of them are keyed by value already: `analysis.signature_key`.)"""
        return all(args[i] is value for i, value in self.statics if not _simple(value))

    @property
    def checked_per_call(self) -> bool:
        """Must each call be checked on the general path (guards, objects given, arguments
        stored into objects: `replay`)?"""
        return (
            bool(self.guards)
            or bool(self.stores)
            or any(not _simple(v) for _, v in self.statics)
            or self.catches
            or bool(self.raising)
        )


def _simple(value) -> bool:
    """A value the IR holds as a literal."""
    if value is None or value is Ellipsis or type(value) in (bool, int, float, complex, str):
        return True
    if isinstance(value, slice):
        return all(_simple(p) for p in (value.start, value.stop, value.step))
    if isinstance(value, tuple):
        return all(_simple(v) for v in value)
    return False


class Recorder:
    """The statements of one trace and everything they name (see the module docstring)."""

    def __init__(self, fn, why):
        self.fn = fn
        self.why = why
        self.body: list = []
        self.namer = Namer(reserved={"np", "math"})
        self.params: list = []
        self.free: dict = {}
        self._free_ids: dict = {}  # id(object) -> its name
        self.snapshots: dict = {}  # free array's name -> (its values when read, where)
        self.guards = 0
        self.module_hooks: list = []  # called with each user module's globals the trace enters
        self.visited: dict = {}  # id(code) -> (code, its globals): the user code the trace ran
        self.refusal = None  # the last refusal raised (numpy may swallow one: see trace_function)
        self.statics: list = []  # (position, value) of the arguments given as they are
        self.named: dict = {}  # temporary -> the user's variable holding it
        self.lines: list = []
        self.loc_of_fn = _function_location(fn)
        # the loops the user's functions ran: where each iteration began (`rolling`)
        self.loops: list = []
        self._locations: dict = {}  # (file, line) -> its SourceLocation
        self.shapes: dict = {}  # temporary -> the shape of the value it held (`rolling`)
        self.masks: set = set()  # the temporaries holding boolean arrays (`rolling`)
        self.roll_counts = False  # (`trace_function`)
        # the temporaries whose shapes depend on the data (a selection by a mask: `fact`)
        self.counted: set = set()
        # (where, op, exception) of the last exception an operation raised (`exceptions`)
        self.raised = None
        self.errors_at_start = np.geterr()  # (reset when the run starts)
        self.raising: set = set()  # the floating-point errors made to raise (`exceptions`)

    def refused(self, error):
        """`error`, remembered: numpy turns an exception raised inside its own conversion
        (a traced value written into a plain array: `float()`) into its ValueError, and the
        trace reports the refusal instead (`trace_function`)."""
        self.refusal = error
        return error

    # -- values ------------------------------------------------------------------------------

    def parameter(self, name, value, varied):
        """The traced argument `name` (a copy: the trace may change it in place)."""
        self.namer.reserve(name)
        self.params.append(name)
        concrete = value.copy() if isinstance(value, np.ndarray) else value
        self._note_mask(name, concrete)
        return Traced(self, Var(name), concrete, varied)

    def static(self, name, value):
        """An argument given to the function as it is (not traced: an object, a string,
        None, an int): the code takes it as a parameter, and is made for this value (the
        caller checks, `Trace.statics`, that a call passes the same)."""
        self.namer.reserve(name)
        self.params.append(name)
        self.statics.append((len(self.params) - 1, value))

    def operand(self, x):
        """(atom, concrete value, carries a gradient) of an operation's argument."""
        if isinstance(x, Traced):
            if x._rec is not self:
                raise self.refused(
                    errors.SourcegradError("a traced value of another trace was used here")
                )
            return x._atom, x._value, x._varied
        if hasattr(x, "_generator") and getattr(x, "_rec", None) is self:  # TracedGenerator
            return x._atom, x._generator, False
        if _simple(x):
            return Const(x), x, False
        if isinstance(x, slice):
            parts = [self.operand(p) for p in (x.start, x.stop, x.step)]
            return (
                Slc(*(p[0] for p in parts)),
                slice(*(p[1] for p in parts)),
                any(p[2] for p in parts),
            )
        if isinstance(x, tuple):
            parts = [self.operand(p) for p in x]
            return Tup(tuple(p[0] for p in parts)), tuple(p[1] for p in parts), False
        if isinstance(x, list) and _holds_traced(x) and ragged(x):
            # np.select's or np.choose's choices, of shapes that broadcast: a list (made as the
            # AST front end makes a list display), as no array holds them
            parts = [self.operand(v) for v in x]
            listed = self.record(
                "make_list", [p[0] for p in parts], [], [p[1] for p in parts], False
            )
            return listed._atom, listed._value, any(p[2] for p in parts)
        if isinstance(x, (list, tuple)) and _holds_traced(x):
            made = self.array_of(x)  # an index list holding traced values
            return made._atom, made._value, made._varied
        if isinstance(x, list) and all(_simple(v) for v in x):
            return Const(list(x)), x, False
        return self.bind_free(x), x, False

    def tuple_operand(self, x):
        """A tuple argument holding a value that carries a gradient (`cho_solve((L, True),
        b)`), made a value of its own, as the AST front end makes it (`make_tuple`): the
        gradient reaches its items through it (an unnamed one has nowhere to take it). None
        for any other argument (`operand`'s)."""
        if type(x) is not tuple:
            return None
        parts = [self.operand(p) for p in x]
        if not any(p[2] for p in parts):
            return None
        atoms = tuple(p[0] for p in parts)
        target = self.namer.fresh(name_for_call("make_tuple", RULES["make_tuple"].spelling, atoms))
        self.append(Assign(target, Call("make_tuple", atoms, ()), self.loc()))
        self.shapes[target] = None
        return Var(target), tuple(p[1] for p in parts), True

    def array_of(self, items):
        """`np.array([t, u, 2.0])`: the list made, then the array of it (as the AST front end
        lowers it: `make_list`, `np_array`); nested lists row by row."""
        items = [self.array_of(v) if isinstance(v, (list, tuple)) else v for v in items]
        parts = [self.operand(v) for v in items]
        listed = self.record(
            "make_list", [p[0] for p in parts], [], [p[1] for p in parts], any(p[2] for p in parts)
        )
        return self.op("np_array", (listed,))

    def bind_free(self, value, label=None):
        """A plain value (an array of an object, a dtype, a function) read by name."""
        known = self._free_ids.get(id(value))
        if known is not None and self.free[known] is value and not self._changed(known):
            return Var(known)
        if label is None:
            label = (
                _holder_name(value) or "array"
                if isinstance(value, np.ndarray)
                else getattr(value, "__name__", None) or type(value).__name__.lower()
            )
        name = self.namer.fresh(sanitize(label))
        self.free[name] = value
        self._free_ids[id(value)] = name
        if isinstance(value, np.ndarray):  # (what it held when read: `_arrays_read`)
            self.snapshots[name] = (value.copy(), self.loc())
        return Var(name)

    def _changed(self, name) -> bool:
        """Has the plain array bound to `name` changed since the code first read it (written
        by numpy code the trace does not see: `c += 1` on a plain array)? The reads so far
        then keep the values they read (`_arrays_read`), a read from now on is bound afresh."""
        if name not in self.snapshots:
            return False
        return not np.array_equal(self.free[name], self.snapshots[name][0], equal_nan=True)

    # -- recording ---------------------------------------------------------------------------

    def loc(self) -> SourceLocation:
        """The user's line running now: the innermost frame of the user's code."""
        frame = sys._getframe(1)
        while frame is not None and not is_user(frame.f_code):
            frame = frame.f_back
        if frame is None:
            return self.loc_of_fn
        where = (frame.f_code.co_filename, frame.f_lineno)
        if not self.lines or self.lines[-1] != where:
            self.lines.append(where)
        loc = self._locations.get(where)
        if loc is None:  # (one per line: a loop's trace meets its lines again and again)
            text = linecache.getline(*where).rstrip("\n")
            loc = self._locations[where] = SourceLocation(*where, 0, text)
        return loc

    def append(self, stmt):
        if len(self.body) >= MAX_STATEMENTS:
            raise self.refused(
                errors.UnsupportedSyntaxError(
                    f"the trace of {self.fn.__qualname__} passed {MAX_STATEMENTS} operations "
                    "here (a Python loop over many items, unrolled by tracing): keep that loop in "
                    "a function sourcegrad reads from its source (which keeps loops loops), or "
                    "make its trip count smaller",
                    stmt.loc,
                )
            )
        self.body.append(stmt)

    def record(self, name, atoms, katoms, value, varied, in_place=False):
        """Append `t = name(*atoms, **katoms)`; give the result as a Traced (or the items of
        a tuple or list result, each a Traced)."""
        rule = RULES[name]
        target = self.namer.fresh(name_for_call(name, rule.spelling, atoms))
        stmt = Assign(target, Call(name, tuple(atoms), tuple(katoms)), self.loc())
        stmt.in_place = in_place
        self.append(stmt)
        self.shapes[target] = np.shape(value) if isinstance(value, _SHAPED) else None
        self._note_mask(target, value)
        if self._shaped_by_data(name, atoms, katoms, value, in_place):
            self.counted.add(target)
        if (
            name != "make_list"
            and isinstance(value, (tuple, list))
            and all(isinstance(v, (np.ndarray, np.generic)) for v in value)
        ):
            getter = "getitem_list" if isinstance(value, list) else "getitem"
            whole = Var(target)
            items = [
                self.record(getter, [whole, Const(i)], [], v, varied) for i, v in enumerate(value)
            ]
            if isinstance(value, list):
                return items
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        return Traced(self, Var(target), value, varied)

    def _note_mask(self, name, value):
        if isinstance(value, np.ndarray) and value.dtype == np.bool_ and value.ndim:
            self.masks.add(name)

    def _shaped_by_data(self, name, atoms, katoms, value, in_place) -> bool:
        """Does the shape of the value `name(*atoms, **katoms)` made depend on the data, not
        on the signature alone: a selection by a boolean array the trace made or was given
        (`x[m]`: as many elements as m holds), the result of a call with no rule (`np.unique`,
        run by the code: any function's result may be), or an array computed from such a
        value (an update in place, only where the array updated is one)?"""
        if in_place:
            return isinstance(atoms[0], Var) and atoms[0].name in self.counted
        if data_shaped(name, tuple(self._ndim(a) for a in atoms)) and any(
            isinstance(a, Var) for a in atoms
        ):
            return True  # (np.nonzero: as many indices as the data select)
        if name == "pycall" and (
            isinstance(value, (tuple, list)) or isinstance(value, np.ndarray) and value.ndim
        ):
            return True  # (a call with no rule: np.unique's result is as long as the data says)
        if not (isinstance(value, np.ndarray) and value.ndim):
            return False  # (a number, or a list of pieces: np.split's, of any shapes)
        operands = [a for atom in [*atoms, *(a for _, a in katoms)] for a in atoms_in(atom)]
        if name == "getitem" and any(
            isinstance(a, Var) and a.name in self.masks for a in operands[1:]
        ):
            return True
        return any(isinstance(a, Var) and a.name in self.counted for a in operands)

    def _ndim(self, atom) -> int:
        if isinstance(atom, Const):
            return np.ndim(atom.value)
        shape = self.shapes.get(atom.name) if isinstance(atom, Var) else None
        return len(shape) if shape is not None else 0

    def fact(self, traced, name, value):
        """`value`, the `name` ("shape", "size", "len") of the traced value `traced`: a fact
        the signature fixes, and so a constant of the code, but where its shape depends on
        the data (`counted`: `len(x[x > 0])`): there it is recorded, and guarded (a call on
        data of another count traces again, never reads the trace's count)."""
        if isinstance(traced, Traced) and traced._rec is self and traced._atom.name in self.counted:
            self.guard(self.record(name, [traced._atom], [], value, False), value)
        return value

    def op(self, name, args, kwargs=None):
        """The registry op `name` applied to `args` (Traced values, constants, plain arrays)."""
        rule = RULES[name]
        args = list(args)
        kwargs = dict(kwargs or {})
        parts = [self.tuple_operand(a) or self.operand(a) for a in args]
        kparts = {k: self.operand(v) for k, v in kwargs.items()}
        concrete = [p[1] for p in parts]
        kconcrete = {k: p[1] for k, p in kparts.items()}
        exceptions.note_error_state(self)
        try:
            value = (
                rule.fn(concrete, **kconcrete)
                if rule.sequence_input
                else rule.fn(*concrete, **kconcrete)
            )
        except Exception as error:
            exceptions.note_raised(self, rule, error)
            raise
        if name in _SIGNATURE_FACTS or rule.type_fact:
            if name in _SHAPE_FACTS and args:
                return self.fact(args[0], name, value)
            return value  # a fact of the signature (a shape, a length, a dtype)
        varied = rule.differentiable and any(p[2] for p in [*parts, *kparts.values()])
        return self.record(
            name, [p[0] for p in parts], [(k, p[0]) for k, p in kparts.items()], value, varied
        )

    def draw(self, op, args, kwargs, value, original=None):
        """A random draw (`random_draws`): recorded, so the generated code draws on each
        call, and drawn now (from the user's generator, as Python would) unless `value` is
        given. A sample is a constant of the gradient: a draw from parameters that carry a
        gradient is refused (the fence)."""
        parts = [self.operand(a) for a in args]
        kparts = {k: self.operand(v) for k, v in kwargs.items()}
        if any(p[2] for p in [*parts, *kparts.values()]):
            raise self.refused(
                errors.NoRuleError(
                    f"the random draw {op.split('.', 1)[1]}() takes a value that carries a "
                    "gradient, and a draw is a constant of the gradient: draw from fixed "
                    "parameters and transform the sample (the reparameterisation: mu + sigma * "
                    "rng.standard_normal(shape); x[rng.permutation(len(x))] for a permutation)",
                    self.loc(),
                )
            )
        concrete = [p[1] for p in parts]
        if value is None:
            if op.startswith("random_method."):
                value = original(*concrete[1:], **{k: p[1] for k, p in kparts.items()})
            else:
                value = original(*concrete, **{k: p[1] for k, p in kparts.items()})
        atoms = [p[0] for p in parts]
        katoms = [(k, p[0]) for k, p in kparts.items()]
        rule = RULES[op]
        target = self.namer.fresh(name_for_call(op, rule.spelling, atoms))
        self.append(Assign(target, Call(op, tuple(atoms), tuple(katoms)), self.loc()))
        if isinstance(value, (np.ndarray, np.generic, float, int)) and not isinstance(value, bool):
            return Traced(self, Var(target), value, False)
        if value is None:
            return None
        return Var(target)  # a generator made by the code (np.random.default_rng)

    def guard_operands(self, args, kwargs):
        """A write into a plain array made of traced values no gradient flows through
        (`np.putmask(buffer, x > 0, 0.5)`): the array's contents are fixed in the code, so
        each traced operand is guarded (the code checks its values are the trace's)."""
        for value in [*args, *kwargs.values()]:
            if isinstance(value, Traced):
                concrete = np.asarray(value._value)
                self.guard(value, _frozen(concrete.tolist()) if concrete.ndim else concrete.item())

    def guard_values(self, traced, before):
        """A call with no rule made for its effect, given traced values no gradient flows
        through (`np.putmask(buffer, y > 0, 0.5)`, `buffer` made by np.zeros in the trace):
        the code does not make the call, so each operand is guarded as it was before the call,
        and an array the call wrote is, from here on, its new contents fixed in the code."""
        for value, old in zip(traced, before, strict=True):
            self.guard(value, _frozen(old.tolist()) if old.ndim else old.item())
            if not np.array_equal(np.asarray(value._value), old, equal_nan=old.dtype.kind in "fc"):
                value._atom = self.bind_free(np.array(value._value, copy=True), "written")

    def guard(self, value, expected):
        """The generated code checks that `value` (a Traced) is `expected` again (a number, a
        bool, or nested tuples of numbers for an array's values)."""
        if isinstance(expected, list):
            expected = _frozen(expected)
        self.append(ExprStmt(Call("trace_guard", (value._atom, Const(expected))), self.loc()))
        self.guards += 1

    # -- numpy's protocols -------------------------------------------------------------------

    def ufunc(self, ufunc, method, inputs, kwargs):
        if ufunc is np.divmod and method == "__call__" and not kwargs:
            return self.op("floordiv_op", inputs, {}), self.op("mod_op", inputs, {})
        if method == "__call__":
            out = kwargs.pop("out", None)
            rule = rule_for_function(ufunc)
            if rule is None:
                return self.unmodelled(ufunc, inputs, kwargs)
            result = self.op(rule.name, inputs, kwargs)
            return result if out is None else self.store_into(out, result)
        function = ufunc_method_function(ufunc, method)
        if function is not None:  # np.add.reduce, np.multiply.accumulate, np.add.outer, ...
            axis = ufunc_method_axis(method)
            if axis is not None and "axis" not in kwargs:
                kwargs = {**kwargs, "axis": axis}  # (np.sum's default axis is None, reduce's 0)
            return self.function(function, inputs, kwargs)
        if method == "at" and ufunc_at_entry(ufunc) is not None:
            target, index, *rest = inputs
            name = ufunc_at_entry(ufunc)
            values = rest[0] if rest else 1.0
            return self._update(
                target, name, (target, index, values), lambda v, c: _at(ufunc, v, c)
            )
        return self.unmodelled(getattr(ufunc, method), inputs, kwargs)

    def function(self, func, args, kwargs):
        if func in _ATLEAST and len(args) > 1:
            return [self.function(func, (a,), kwargs) for a in args]  # (one result each)
        if func is _PIECEWISE:  # its functions are the user's: run by masks, recorded as run
            return piecewise_by_masks(*args, **kwargs)
        rule = rule_for_function(func)
        if rule is None and func in stores.FUNCTIONS and _writes_into_traced(args, kwargs):
            return stores.FUNCTIONS[func](*args, **kwargs)  # (np.copyto: a store, recorded)
        if rule is None:
            return self.unmodelled(func, args, kwargs)
        if "where" in kwargs and where_variant(rule.name) is not None:
            rule = RULES[where_variant(rule.name)]  # np.sum(x, where=m): sum's masked entry
        if kwargs.get("out") is not None:
            # `np.clip(y, lo, hi, out=y)`: the result written into the buffer, as for a ufunc
            # (recorded as a plain keyword, the buffer kept its old value in the IR)
            kwargs = dict(kwargs)
            out = kwargs.pop("out")
            result = self.function(func, args, kwargs)
            return self.store_into(out, result)
        if rule.sequence_input and args:
            items, rest = args[0], list(args[1:])
            if not isinstance(items, (list, tuple)):
                items = list(items)
            if rest:
                kwargs = {"axis": rest[0], **kwargs}
            return self.op(rule.name, items, kwargs)
        return self.op(rule.name, args, kwargs)

    def method(self, traced, name):
        op = op_for_method(name)
        if op is None and name in stores.METHODS:  # `a.fill(0.0)`: a store, recorded
            return functools.partial(stores.METHODS[name], traced)
        if op is None:
            raise self.refused(
                errors.NoRuleError(
                    f"the method .{name}() has no derivative rule (on a traced array); write it "
                    "with numpy functions that have rules",
                    self.loc(),
                )
            )

        def call(*args, **kwargs):
            if name in ("reshape", "transpose") and len(args) > 1:
                args = (args,)  # x.reshape(2, 3) is x.reshape((2, 3))
            out = kwargs.pop("out", None)
            masked = where_variant(op) if "where" in kwargs else None
            result = self.op(masked or op, (traced, *args), kwargs)
            # (`y.clip(lo, hi, out=y)`: written into the buffer)
            return result if out is None else self.store_into(out, result)

        return call

    def unmodelled(self, func, args, kwargs):
        """A call with no rule: run where nothing that carries a gradient reaches it (its
        result computed by the generated code, at run time), refused where something does
        (the fence). A question about dtypes or shapes (`np.result_type`) is answered now:
        the signature fixes those."""
        parts = [self.operand(a) for a in args]
        kparts = {k: self.operand(v) for k, v in kwargs.items()}
        if func in _STATIC_QUERIES:
            return func(*(p[1] for p in parts), **{k: p[1] for k, p in kparts.items()})
        label = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        if any(p[2] for p in [*parts, *kparts.values()]):
            raise self.refused(
                errors.NoRuleError(
                    f"{label} has no derivative rule, and a value that carries a gradient reaches "
                    "it here: rewrite the line with functions that have rules, or register one with "
                    "sourcegrad.ops.defvjp(name, function, spelling, vjp_for_each_input...)",
                    self.loc(),
                )
            )
        traced = [a for a in [*args, *kwargs.values()] if isinstance(a, Traced)]
        before = [np.array(a._value, copy=True) for a in traced]
        value = func(*(p[1] for p in parts), **{k: p[1] for k, p in kparts.items()})
        if value is None:  # (made for its effect: a write into an array, np.putmask)
            self.guard_values(traced, before)
            return None
        callee = self.bind_free(func, getattr(func, "__name__", "call"))
        atoms = [callee, *(p[0] for p in parts)]
        katoms = [(k, p[0]) for k, p in kparts.items()]
        if isinstance(value, (np.ndarray, np.generic)):
            return self.record("pycall", atoms, katoms, value, False)
        result = self.record("pycall", atoms, katoms, value, False)
        if not isinstance(result, Traced):  # a tuple or list of arrays: each item traced
            return result
        self.guard(result, value)  # (a number or a tuple the code goes on with: the same)
        return value

    def gradient_call(self, gradient, args):
        """`grad(g)(t, ...)` inside a traced function (a Newton step, meta-learning): the
        gradient runs as it runs anywhere (its value computed now, by its own compiled code),
        and its derivative is its pullback (`ops.call_gradient`, as the AST front end
        lowers it)."""
        if type(gradient).__name__ != "Gradient" or gradient.with_value or not gradient._single:
            raise self.refused(
                errors.UnsupportedSyntaxError(
                    "inside differentiated code a gradient is supported as grad(f) with one "
                    "argument to differentiate, called with positional arguments",
                    self.loc(),
                )
            )
        parts = [self.operand(a) for a in args]
        with self.suspended():
            value = gradient(*(p[1] for p in parts))
        label = sanitize(f"grad_{getattr(gradient.fn, '__name__', 'f')}")
        callee = self.bind_free(gradient, label)
        return self.record(
            "call_gradient", [callee, *(p[0] for p in parts)], [], value, any(p[2] for p in parts)
        )

    def primitive_call(self, primitive, args):
        """`f(t, ...)` of a function the user made a primitive (`sourcegrad.extend.primitive`):
        run as Python on the concrete values (not traced inside), recorded as one
        `ops.primitive_call`, whose derivative is the user's VJP or JVP."""
        parts = [self.operand(a) for a in args]
        with self.suspended():
            value = primitive.fun(*(p[1] for p in parts))
        callee = self.bind_free(primitive, sanitize(getattr(primitive, "__name__", "primitive")))
        return self.record(
            "primitive_call", [callee, *(p[0] for p in parts)], [], value, any(p[2] for p in parts)
        )

    @contextmanager
    def suspended(self):
        """No trace in this thread while the block runs (numpy's own functions, no line
        tracer): for a gradient called inside the traced function."""
        state.leave()
        tracer = sys.gettrace()
        sys.settrace(None)
        try:
            with originals():
                yield
        finally:
            sys.settrace(tracer)
            state.enter(self)

    # -- changes in place --------------------------------------------------------------------

    def in_place(self, traced, name, other):
        """`t op= other`: numpy changes t's array; t names the new value from here on (a
        number is rebound, as Python rebinds it)."""
        if not isinstance(traced._value, np.ndarray):
            return self.op(name, (traced, other))
        return self._update(
            traced, name, (traced, other), lambda v, c: _IN_PLACE[name](v, c[1]), keep=True
        )

    def flat_setitem(self, traced, index, value):
        """`t.flat[index] = value`: a store at the flat positions' index."""
        stores.flat_store(traced, index, value)

    def setitem(self, traced, index, value):
        """`t[index] = value`, in place."""

        def store(v, c):
            v[c[1]] = c[2]

        self._update(traced, "setitem", (traced, index, value), store)

    def store_into(self, out, result):
        """`np.f(..., out=out)`: result written into the array `out` names (itself, or the
        one-element tuple numpy's ufuncs take)."""
        target = out[0] if isinstance(out, tuple) else out
        if not isinstance(target, Traced):
            if result._varied:
                return self.escape(result, "a plain array's out= argument")
            self.guard_operands((result,), {})
            np.copyto(target, result._value)
            return target

        def store(v, c):
            np.copyto(v, c[2])

        self._update(target, "setitem", (target, Ellipsis, result), store)
        return target

    def _update(self, traced, name, args, apply, keep=False):
        """Record `name(*args)` as an update in place of `traced` (its concrete array changed
        by `apply`, so its views see it as numpy's do); `traced` names the new value."""
        if not isinstance(traced, Traced):
            if any(isinstance(a, Traced) and a._varied for a in args):
                return self.escape(
                    next(a for a in args if isinstance(a, Traced) and a._varied),
                    "a write into a plain array",
                )
            self.guard_operands(args, {})  # (the plain array's contents come from them)
            apply(traced, [self.operand(a)[1] for a in args])
            return traced if keep else None
        parts = [self.operand(a) for a in args]
        apply(traced._value, [p[1] for p in parts])
        varied = traced._varied or RULES[name].differentiable and any(p[2] for p in parts)
        made = self.record(name, [p[0] for p in parts], [], traced._value, varied, in_place=True)
        traced._atom, traced._varied = made._atom, made._varied
        return traced if keep else None

    # -- the exits to plain Python -----------------------------------------------------------

    def decided(self, traced, convert):
        """`bool(t)` (an `if`, a `while`, `and`): Python decides now; the code checks it."""
        value = convert(traced._value)
        self.guard(traced, value)
        return value

    def leaves(self, traced, convert, what):
        """`float(t)`, `int(t)`, `t.item()`: a plain number from here on. Refused where t
        carries a gradient (it would be lost); guarded where it does not."""
        if traced._varied:
            raise self.refused(
                errors.TraceEscapeError(
                    f"{what} of a value that carries a gradient makes it a plain Python number, "
                    "and the gradient cannot follow it: keep it an array (np.sum(x) rather than "
                    "float(np.sum(x)); numpy functions of arrays rather than the math module)",
                    self.loc(),
                )
            )
        value = convert(traced._value)
        self.guard(traced, value)
        return value

    def escape(self, traced, what):
        """A traced value read as a plain numpy array by `what` (np.asarray where the patch
        did not see it, a write into a plain array, a C extension): refused where it carries
        a gradient, which the plain array would lose; where it does not, its values, which
        the code checks (a guard)."""
        if traced._varied:
            loc = self.loc()
            raise self.refused(
                errors.TraceEscapeError(
                    f"a value that carries a gradient is read here as a plain numpy array by "
                    f"{what}, which would lose the gradient. Use numpy functions of the array "
                    "itself (no np.asarray of an array; a buffer made with np.zeros_like(x) or a "
                    "list joined with np.stack, for values written one by one)"
                    + _plain_method_hint(loc.text),
                    loc,
                )
            )
        value = np.array(traced._value)
        self.guard(traced, _frozen(value.tolist()) if value.ndim else value.item())
        return value

    # -- names ---------------------------------------------------------------------------------

    def name_locals(self, frame):
        """Name the temporaries the frame's variables hold after the user's line."""
        for name, value in list(frame.f_locals.items()):
            if isinstance(value, Traced) and value._rec is self:
                atom = value._atom.name
                if atom not in self.named and atom not in self.params:
                    self.named[atom] = name

    def function_ir(self, result, name, user_names) -> Function:
        """The recorded statements as an IR function returning `result`, the loops whose
        iterations agree rolled back into loops (`rolling`), its temporaries renamed after
        the variables that held them."""
        loops = [loop for loop in self.loops if loop.starts]
        recorded = roll(
            [*self.body, Return(result, self.loc_of_fn)],
            loops,
            self.namer,
            self.shapes,
            self.named,
            self.masks if self.roll_counts else frozenset(),
        )
        renaming = Namer(reserved=set(self.params) | set(self.free) | {"np", "math"})
        mapping = {}
        for stmt in walk(recorded):
            target = stmt.target if isinstance(stmt, (Assign, For)) else None
            if target is not None and target not in mapping:
                mapping[target] = renaming.fresh(self.named.get(target, target))
        atoms = {old: Var(new) for old, new in mapping.items()}
        body = _renamed(recorded, mapping, atoms)
        named = {mapping[t] for t in self.named if t in mapping}
        fn = Function(
            name,
            list(self.params),
            body,
            self.loc_of_fn.file,
            self.loc_of_fn,
            dict(self.free),
            set(self.params) | named | user_names,
        )
        return fn

    # -- running -------------------------------------------------------------------------------

    @contextmanager
    def running(self):
        """This recorder is the thread's trace (the patches consult it); the user's frames
        name the values they hold (a line tracer, unless a debugger or coverage has one)."""
        if state.active() is not None:
            raise self.refused(errors.SourcegradError("a trace is already running in this thread"))
        state.enter(self)
        previous = sys.gettrace()
        libraries = library_functions()
        undo: list = []
        seen: set = set()

        def module_of(frame):
            """A user module met for the first time: its names of library functions with
            a rule (`logsumexp` imported from scipy) made those ops while the trace runs."""
            space = frame.f_globals
            for hook in self.module_hooks:  # (first: they see the module as the user left it)
                hook(space)
            if id(space) not in seen:
                seen.add(id(space))
                replace_library_functions(space, undo, libraries)

        def local(frame, event, arg):
            if event in ("line", "return"):
                self.name_locals(frame)
            return local

        headers: dict = {}  # code -> its loops' header lines (`frames.loop_headers`)

        def looping(loops):
            """`local` for a frame running loops the trace may roll: it also notes where
            each of their iterations begins (`rolling`)."""

            def tracer(frame, event, arg):
                if event == "line":
                    loop = loops.get(frame.f_lineno)
                    if loop is not None:
                        loop.starts.append(len(self.body))
                if event in ("line", "return"):
                    self.name_locals(frame)
                return tracer

            return tracer

        bodies = ModuleBodies()  # (modules imported while the trace runs: not traced)

        def calls(frame, event, arg):
            if event != "call" or bodies.running:
                return None
            if frame.f_code.co_name == "<module>":
                return bodies.entered()
            if not runs_user_code(frame):
                return None
            module_of(frame)
            self.visited.setdefault(id(frame.f_code), (frame.f_code, frame.f_globals))
            code = frame.f_code
            if code not in headers:
                headers[code] = loop_headers(code, frame.f_globals)
            if not headers[code]:
                return local
            loops = {line: Loop(loc) for line, loc in headers[code].items()}
            self.loops.extend(loops.values())  # (one run of each, per call of the function)
            return looping(loops)

        entry = getattr(self.fn, "__globals__", None)
        if entry is not None:
            seen.add(id(entry))
            replace_library_functions(entry, undo, libraries)
        try:
            with patched():
                if previous is None:
                    sys.settrace(calls)
                try:
                    yield
                finally:
                    if previous is None:
                        sys.settrace(None)
        finally:
            for space, name, value in reversed(undo):
                space[name] = value
            state.leave()


# ops whose result the signature fixes (shapes, sizes, dtypes): Python values, not recorded.
# Every other op is recorded, a comparison of Python floats too: its bool decides a branch,
# which must be guarded (`x1 < 0.0` of a float argument)
_SIGNATURE_FACTS = frozenset({"shape", "ndim", "size", "dtype", "len"})
# those of them the data decides for a selection by a mask (`Recorder.fact`)
_SHAPE_FACTS = frozenset({"shape", "size", "len"})
# the values whose shape a trace notes (`Recorder.shapes`)
_SHAPED = (np.ndarray, np.generic, float, int, complex)
# numpy's questions about dtypes and shapes, which the signature fixes (answered while tracing)
_STATIC_QUERIES = frozenset(
    {
        np.result_type,
        np.can_cast,
        np.min_scalar_type,
        np.common_type,
        np.shape,
        np.ndim,
        np.size,
        np.iscomplexobj,
        np.isrealobj,
        np.isscalar,
    }
)
# (numpy's own functions, read here before a trace replaces some of numpy's names: patches)
_ATLEAST = (np.atleast_1d, np.atleast_2d, np.atleast_3d)
_PIECEWISE = np.piecewise
_IN_PLACE = {
    "add_op": operator.iadd,
    "sub_op": operator.isub,
    "mul_op": operator.imul,
    "div_op": operator.itruediv,
    "pow_op": operator.ipow,
    "matmul_op": operator.imatmul,
    "mod_op": operator.imod,
    "floordiv_op": operator.ifloordiv,
    "or_op": operator.ior,
    "and_op": operator.iand,
    "xor_op": operator.ixor,
}


def _writes_into_traced(args, kwargs) -> bool:
    """Is the array a writing call (`np.copyto(dst, ...)`) writes into a traced one?"""
    first = args[0] if args else next(iter(kwargs.values()), None)
    return isinstance(first, Traced)


def _at(ufunc, v, c):
    ufunc.at(v, c[1], c[2])


def _holder_name(value):
    """The name the user's code reads `value` by, where its frame shows it: a variable, an
    attribute of a variable (`self.W`: "W"), or a global (None where none holds it)."""
    frame = sys._getframe(1)
    while frame is not None and not is_user(frame.f_code):
        frame = frame.f_back
    if frame is None:
        return None
    variables = list(frame.f_locals.items())
    for name, held in variables:
        if held is value:
            return name
    for _, held in variables:
        attributes = getattr(held, "__dict__", None)
        if isinstance(attributes, dict) and not isinstance(held, type):
            for name, attribute in attributes.items():
                if attribute is value:
                    return name
    for name, held in frame.f_globals.items():
        if held is value:
            return name
    return None


def _renamed(stmts, mapping, atoms):
    """The statements with their targets renamed by `mapping` and their operands by
    `atoms`, the loops' bodies included."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, For):
            body = _renamed(stmt.body, mapping, atoms)
            out.append(For(mapping[stmt.target], stmt.start, stmt.stop, stmt.step, body, stmt.loc))
            continue
        value = substitute_value(stmt.value, atoms)
        if isinstance(stmt, Assign):
            new = Assign(mapping[stmt.target], value, stmt.loc)
            new.in_place = stmt.in_place
            out.append(new)
        else:
            out.append(type(stmt)(value, stmt.loc))
    return out


def _holds_traced(value) -> bool:
    if isinstance(value, Traced):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_traced(v) for v in value)


# `x.dot(w)` where x is a plain array (data the function reads from a global or closure)
# and w carries a gradient: numpy's method converts w by __array__ without asking it.
_DOT_CALL = re.compile(r"([\w.]*)\.dot\(")


def _plain_method_hint(line: str) -> str:
    receivers = [m.group(1) for m in _DOT_CALL.finditer(line)]
    if all(r in ("np", "numpy", "cp", "cupy") for r in receivers):
        return ""
    return (
        ". If it is `a.dot(b)` of a plain array `a` (data read from a global or closure, not "
        "an argument of the differentiated function) and `b` carries a gradient, write "
        "`a @ b` or `np.dot(a, b)`, which numpy hands to the trace, or pass `a` as an argument"
    )


def _frozen(value):
    """A hashable copy of a (nested) list of numbers: the literal a guard compares with."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _function_location(fn) -> SourceLocation:
    code = getattr(fn, "__code__", None)
    if code is None:
        return SourceLocation("<unknown>", 0, 0, "")
    line = code.co_firstlineno
    text = linecache.getline(code.co_filename, line).rstrip("\n")
    return SourceLocation(code.co_filename, line, 0, text)


def _traceable(value) -> bool:
    """Is this argument traced (an array or a number), or given to fn as it is?"""
    # (an int is keyed by its value, as a string or None: `analysis.signature_key`)
    return isinstance(value, (np.ndarray, np.generic, float, complex))


def trace_function(fn, args, params, wrt, why, defs=None, roll_counts=False) -> Trace:
    """Trace `fn` on `args` (see the module docstring). `params`: the IR's parameter names,
    one per item of `args`; `wrt`: the positions (in `args`) that carry a gradient; `why`:
    what made the compiler trace. `defs`, per argument of fn, None or the `trees.TreeDef` of
    a tree argument given as its leaves (consecutive items of `args`). `roll_counts`: roll
    loops whose iterations differ in the length of a selection by a mask too (`rolling`;
    for the numba backend, which compiles a loop in seconds and its unrolled copies in
    minutes: the numpy backend's optimizer makes such adjoints whole-array selections on the
    unrolled statements only, `optimize/masked_adjoints.py`, where the layers LSTM ran in
    1.30x its hand-written backward's time against 3.24x rolled)."""
    # (long: the trace's steps in their order, each a few lines: the arguments traced,
    # the objects watched, the run, the stores made again, the checks, the IR)
    outer = next((a for a in args if isinstance(a, Traced)), None)
    if outer is not None:  # (sourcegrad.hessian(g)(t) run by a traced function: t is traced)
        raise outer._rec.refused(
            errors.UnsupportedSyntaxError(errors.TRANSFORM_INSIDE, outer._rec.loc())
        )
    rec = Recorder(fn, why)
    rec.roll_counts = roll_counts
    defs = defs if defs is not None else (None,) * len(args)
    given = iter(range(len(args)))
    call_args = []

    def traced(i):
        value = args[i]
        if isinstance(value, random_draws.GENERATOR_TYPES):  # its draws made by the code
            rec.static(params[i], value)
            return TracedGenerator(rec, Var(params[i]), value)
        if _traceable(value):
            return rec.parameter(params[i], value, i in wrt)
        rec.static(params[i], value)  # (the code is made for this value: `statics`)
        return value

    given_values: list = []  # what the function is given, per argument of the code
    rebuilt = []  # (its argument, first leaf, treedef, the tree given) of each tree argument
    for j, treedef in enumerate(defs):
        if treedef is None:
            given_values.append(traced(next(given)))
            call_args.append(given_values[-1])
            continue
        leaves = [traced(next(given)) for _ in treedef.leaf_names("x")]
        rebuilt.append((j, len(given_values), treedef, treedef.unflatten(leaves)))
        given_values += leaves
        call_args.append(rebuilt[-1][3])
    # (a dict argument is given to fn rebuilt from its leaves: changed in place, it is
    # watched as an object argument is, since the code made from the trace never changes the
    # caller's dict: `state["n"] = state.get("n", 0) + 1` kept the first call's count, where
    # the source front end refuses it. An item of a list argument may be assigned, the
    # caller's list left as it is: docs/sharp-bits.md)
    dict_arguments = [
        (name, a)
        for name, a, treedef in zip(_parameter_names(fn, len(call_args)), call_args, defs)
        if treedef is not None and treedef.kind == DICT
    ]
    python_state = _python_state(fn, args, dict_arguments)
    rec.module_hooks.append(python_state.add_module)  # (each user module the trace enters)
    try:
        with (
            rec.running(),
            _generators_drawn_by_the_code(rec, fn, call_args),
            reads_noted(python_state),
        ):
            rec.errors_at_start = np.geterr()
            result = _called(fn, call_args)
        exceptions.check_none_caught(rec)
    except errors.SourcegradError:
        python_state.put_back()  # (no traced value left in the user's objects)
        raise
    except Exception:
        python_state.put_back()
        if rec.refusal is not None:  # (numpy's error for the refusal it swallowed)
            raise rec.refusal from None
        raise
    atom = _returned(rec, result)
    # (found while the values stored are the traced ones: which arguments they are)
    stores = python_state.stored_arguments(Arguments(given_values, rebuilt).recipe)
    # (the objects as Python leaves them, holding the call's arguments: before the traced
    # values left in objects are made plain, so that a dict argument rebuilt from its leaves,
    # stored and then put back by the store's replay, is not seen as changed by the check)
    replay(stores, args)
    roots = _plain_again(rec, fn, args)
    python_state.check([code for code, _ in rec.visited.values()])  # (refused: see there)
    made_here = _arrays_read(rec, roots)
    name = sanitize(getattr(fn, "__name__", "f").replace("<lambda>", "lambda")) or "f"
    function = rec.function_ir(atom, name, set())
    stored = {(id(store.holder), store.name) for store in stores}
    function.dependencies = _dependencies(fn, args, rec.visited.values(), made_here, stored)
    catches = exceptions.has_try_statement(code for code, _ in rec.visited.values())
    return Trace(
        function, rec.guards, why, rec.lines, rec.statics, stores, catches, tuple(rec.raising)
    )


@contextmanager
def _generators_drawn_by_the_code(rec, fn, args):
    """The random generators the function reads (its globals, closure values, and the
    attributes of the objects it is given or reads: `rng`, `self.rng`) replaced, while it
    runs, by `TracedGenerator`s: each draw is recorded for the generated code to draw on each
    call (a plain sample would be fixed at its first value) and drawn now from the same
    generator. Everything is put back afterwards."""
    undo = []
    # The draws of the trace are the compiled code's first: every generator is put back where
    # the trace found it, so the first call draws once, as a call of the function does
    drawn = [np.random.mtrand._rand] + generators_read_by(fn, args)  # (before the proxies)
    states = [(g, _state_of(g)) for g in drawn]

    def proxy(value, label):
        return TracedGenerator(rec, rec.bind_free(value, label), value)

    swapped: set = set()

    def swap_in_module(space):
        """A module's generators (its globals: a helper in it may draw from them)."""
        if id(space) in swapped:
            return
        swapped.add(id(space))
        for name, value in list(space.items()):
            if isinstance(value, random_draws.GENERATOR_TYPES):
                if all(value is not g for g, _ in states):  # (its state, to put back)
                    states.append((value, _state_of(value)))
                undo.append(lambda s=space, n=name, v=value: s.__setitem__(n, v))
                space[name] = proxy(value, name)

    fn, holders = _code_and_holders(fn, [a for a in args if not isinstance(a, Traced)])
    code = getattr(fn, "__code__", None)
    rec.module_hooks.append(swap_in_module)  # (modules the trace enters: `Recorder.running`)
    if code is not None:
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= set(const.co_names)
        space = fn.__globals__
        for name in sorted(names):
            value = space.get(name)
            if hasattr(value, "__dict__") and not isinstance(
                value, (type, types.ModuleType, *random_draws.GENERATOR_TYPES)
            ):
                holders.append(value)
        swap_in_module(space)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(value, random_draws.GENERATOR_TYPES):
                undo.append(lambda c=cell, v=value: setattr(c, "cell_contents", v))
                cell.cell_contents = proxy(value, name)
            elif hasattr(value, "__dict__") and not callable(value):
                holders.append(value)
    for holder in holders:
        if holder is None or isinstance(holder, type):
            continue
        for name, value in list(getattr(holder, "__dict__", {}).items()):
            if isinstance(value, random_draws.GENERATOR_TYPES):
                undo.append(lambda h=holder, n=name, v=value: setattr(h, n, v))
                setattr(holder, name, proxy(value, name))
    try:
        yield
    finally:
        for restore in reversed(undo):
            restore()
        for g, state in states:
            if isinstance(g, np.random.Generator):
                g.bit_generator.state = state
            else:
                g.set_state(state)


def _state_of(generator):
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    return generator.get_state()


def generators_read_by(fn, args) -> list:
    """The random generators a function may read: its arguments, its module's globals, its
    closure values, and their attributes (one level)."""
    found = [a for a in args if isinstance(a, random_draws.GENERATOR_TYPES)]
    fn, holders = _code_and_holders(fn, args)
    code = getattr(fn, "__code__", None)
    values = [a for a in args] + holders
    if code is not None:  # (the whole module's: a helper of it may draw from them)
        values += list(fn.__globals__.values())
        for cell in fn.__closure__ or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                pass
    for value in values:
        if isinstance(value, random_draws.GENERATOR_TYPES):
            found.append(value)
        elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
            found += [
                v for v in vars(value).values() if isinstance(v, random_draws.GENERATOR_TYPES)
            ]
    unique = []
    for g in found:
        if all(g is not u for u in unique):
            unique.append(g)
    return unique


def _plain_again(rec, fn, args):
    """The traced values the function left in objects (`self.inputs.append(x)`, `layer.W =
    W`, a global list) made the plain arrays they stand for: after the trace no object of
    the user's holds a live traced value. Looked for in the arguments, the objects and
    containers the function's modules hold, and theirs (a few levels deep)."""
    roots = list(args)
    fn, holders = _code_and_holders(fn, args)
    roots += holders
    spaces = [getattr(fn, "__globals__", {})] + [space for _, space in rec.visited.values()]
    for space in {id(s): s for s in spaces}.values():
        roots += [v for v in space.values() if not isinstance(v, (types.ModuleType, type))]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            roots.append(cell.cell_contents)
        except ValueError:
            pass
    seen: set = set()

    def plain(value, depth):
        if isinstance(value, Traced):
            return value._value
        if depth > 3 or id(value) in seen:
            return value
        seen.add(id(value))
        if isinstance(value, list):
            for i, item in enumerate(value):
                value[i] = plain(item, depth + 1)
        elif isinstance(value, dict):
            for k, item in list(value.items()):
                value[k] = plain(item, depth + 1)
        elif hasattr(value, "__dict__") and not isinstance(
            value, (types.FunctionType, types.ModuleType, type, np.ndarray)
        ):
            attributes = getattr(value, "__dict__", None)
            if isinstance(attributes, dict):
                for k, item in list(attributes.items()):
                    attributes[k] = plain(item, depth + 1)
        return value

    for root in roots:
        if not isinstance(root, Traced):
            plain(root, 0)
    return roots


def _arrays_read(rec, roots) -> bool:
    """Check the plain arrays the code reads by name (`rec.free`) against what they held
    when the trace read them. One made while the trace ran, by numpy code the trace does not
    record (`c = np.cos(np.linspace(...))`), is a constant of the code: if the function then
    changed it in place (`c += 1`), the code reads the values the trace read (a copy). One of
    the user's (an object's, a module's: reachable from `roots`) changed in place by the
    function while it ran is refused: the code reads the array, Python read what it held
    then. Returns whether any array was made while the trace ran (its value then depends on
    the user's arrays' contents: `_dependencies` compares those)."""
    known = _reachable_arrays(roots)
    made_here = False
    for name, (before, where) in rec.snapshots.items():
        array = rec.free[name]
        ours = _is_known(array, known)
        made_here = made_here or not ours
        if np.array_equal(array, before, equal_nan=True):
            continue
        if not ours:
            rec.free[name] = before
            continue
        raise errors.UnsupportedSyntaxError(
            f"{name!r}, an array of yours the traced code reads here, is changed in place "
            "while the function runs (after this read): the generated code would read the "
            "changed values. Copy it before changing it, or change it outside the function",
            where,
        )
    return made_here


def _reachable_arrays(roots) -> set:
    """The ids of the arrays reachable from `roots` (objects, containers: a few levels)."""
    found: set = set()
    seen: set = set()

    def visit(value, depth):
        if isinstance(value, np.ndarray):
            found.add(id(value))
            return
        if depth > 3 or id(value) in seen or isinstance(value, (types.ModuleType, type)):
            return
        seen.add(id(value))
        if isinstance(value, (list, tuple)):
            items = list(value)
        elif isinstance(value, dict):
            items = list(value.values())
        else:
            attributes = getattr(value, "__dict__", None)
            items = list(attributes.values()) if isinstance(attributes, dict) else []
        for item in items:
            visit(item, depth + 1)

    for root in roots:
        visit(root, 0)
    return found


def _is_known(array, known) -> bool:
    """Is `array` (or the array it is a view of) one of the user's?"""
    while isinstance(array, np.ndarray):
        if id(array) in known:
            return True
        array = array.base
    return False


def _returned(rec, result):
    """The atom of what the traced function returned (a tuple for has_aux's pair)."""
    if isinstance(result, tuple):
        return Tup(tuple(_returned(rec, r) for r in result))
    if isinstance(result, Traced):
        return result._atom
    if isinstance(result, (float, int, np.generic)) and not isinstance(result, bool):
        return Const(float(result) if isinstance(result, np.generic) else result)
    if isinstance(result, np.ndarray):
        return rec.bind_free(result)
    raise errors.UnsupportedSyntaxError(
        f"the traced function returned {type(result).__name__}; a differentiated function "
        "returns a number (or, with has_aux=True, a pair)",
        rec.loc_of_fn,
    )


def _code_and_holders(fn, args):
    """(the Python function whose code runs, the objects whose attributes it may read): for
    a bound method its object, for an object with `__call__` the object and its method's
    function, and the arguments given as they are."""
    holders = [a for a in args if not _traceable(a) and has_attributes(a)]
    if not isinstance(fn, (types.FunctionType, types.MethodType)) and has_attributes(fn):
        holders.append(fn)
        fn = fn.__call__ if callable(fn) else fn
    if isinstance(fn, types.MethodType):
        holders.append(fn.__self__)
        fn = fn.__func__
    return fn, holders


def _parameter_names(fn, count) -> list:
    """The names of fn's first `count` parameters as its code reads them ("an argument"
    where they cannot be read: a refusal names the object by them)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return (names + ["an argument"] * count)[:count]


def _called(fn, call_args):
    """fn called on one argument per parameter, in order: its keyword-only parameters' by
    keyword (passed by position, Python raised TypeError and the trace failed)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn(*call_args)
    keyword_only = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]
    if not keyword_only or len(parameters) != len(call_args):
        return fn(*call_args)
    positional = len(call_args) - len(keyword_only)
    return fn(*call_args[:positional], **dict(zip(keyword_only, call_args[positional:])))


def _python_state(fn, args, dict_arguments=()) -> PythonState:
    """The objects the function may change, as they are before the trace: those it is given
    (`self`, object arguments, and `dict_arguments`: (parameter name, dict) of the dict arguments
    given as their leaves), its module's globals and what they hold, its closure values
    (`python_state`)."""
    fn, holders = _code_and_holders(fn, args)
    given = [a for a in args if not _traceable(a) and (has_attributes(a) or type(a) is not tuple)]
    roots = [("self", h) for h in holders if all(h is not a for a in given)]
    roots += [("an argument", a) for a in given]
    roots += list(dict_arguments)
    code = getattr(fn, "__code__", None)
    if code is None:
        return PythonState(fn, roots)
    cells = list(zip(code.co_freevars, fn.__closure__ or ()))
    return PythonState(fn, roots, fn.__globals__, cells)


def _made_per_read(value) -> bool:
    """A class attribute whose reading makes a new object each time (a property's value, a
    classmethod's bound method): compared by identity, it would never be the same."""
    return isinstance(value, (property, classmethod, types.MemberDescriptorType))


def _objects_in(value) -> list:
    """The objects `value` is or holds in (nested) lists, tuples and dicts."""
    if isinstance(value, (list, tuple)):
        return [o for item in value for o in _objects_in(item)]
    if isinstance(value, dict):
        return [o for item in value.values() for o in _objects_in(item)]
    return [value] if user_object(value) else []


# names whose use reads an object's attributes by names the code computes or by all of them
# (`getattr(self, name)`, `vars(self)`, `self.__dict__`, `dataclasses.astuple(self)`): where
# the code a trace ran uses one, every attribute of the objects it reached is a dependency
_READS_ANY_ATTRIBUTE = frozenset(
    {
        "__dict__",
        "vars",
        "getattr",
        "__getattribute__",
        "attrgetter",
        "asdict",
        "astuple",
        "getmembers",
        "__getstate__",
        "__reduce__",
        "__reduce_ex__",
    }
)


def _attribute_names_read(codes):
    """The attribute names the code a trace ran may read (those its code objects name, and
    the strings they hold: `getattr(self, "w")`, `attrgetter("w")`), or None where it may
    read any (`_READS_ANY_ATTRIBUTE`). A property's getter and a method run by the trace are
    among `codes` (the recorder visits every user function called)."""
    read: set = set()
    pending = list(codes)
    while pending:
        code = pending.pop()
        read.update(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                pending.append(const)
            elif isinstance(const, str):
                read.add(const)
    return None if read & _READS_ANY_ATTRIBUTE else read


def _dependencies(fn, args, visited=(), made_here=False, stored=frozenset()) -> list:
    """What the trace read besides its arguments' arrays, as `memory_caches.still_bound` checks it:
    the globals named by the function's code and by all the user code it ran (`visited`:
    (code, globals) pairs: a helper's module constant), its closure values, and the
    attributes of the objects given to it or read from those globals (numbers compared by
    value, containers of numbers by a copy, other values by identity). Not the attributes
    the function stores its arguments into (`stored`: (id(object), name)), which it writes
    before reading and each call changes (`stored_arguments`)."""
    deps: list = []
    fn, holders = _code_and_holders(fn, args)
    code = getattr(fn, "__code__", None)
    if code is None:
        return deps
    seen: set = set()
    for ran, space in [(code, getattr(fn, "__globals__", {})), *visited]:
        names = set(ran.co_names)
        for const in ran.co_consts:
            if isinstance(const, types.CodeType):
                names |= set(const.co_names)
        for name in sorted(names):
            if (id(space), name) in seen or name not in space:
                continue
            seen.add((id(space), name))
            if not isinstance(space[name], types.ModuleType):
                deps.append(dependency("global", space, name, space[name]))
            elif user_module(space[name]):  # `config.LR`: the attributes the code may read
                module = space[name]
                for attr in sorted(names):
                    value = getattr(module, attr, None)
                    if hasattr(module, attr) and not isinstance(value, types.ModuleType):
                        deps.append(dependency("attribute", module, attr, value))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            deps.append(dependency("cell", cell, name, cell.cell_contents))
        except ValueError:
            pass
    # the attributes of the objects given or read, and of the objects those hold, at any
    # depth (`self.encoder.layers`, `self.blocks[0].W`), and the class attributes of user
    # classes (`Model.shared`): the trace read them as it ran, so its code holds them
    read = _attribute_names_read([code] + [ran for ran, _ in visited])  # (not `model.epoch`)
    pending = holders + [
        d[3] for d in deps if has_attributes(d[3]) and not callable(d[3]) or user_object(d[3])
    ]
    seen_objects: set = set()
    while pending and len(seen_objects) < MOST_OBJECTS:
        obj = pending.pop(0)
        if id(obj) in seen_objects:
            continue
        seen_objects.add(id(obj))
        for attr, value in sorted(attributes_of(obj).items()):
            if isinstance(obj, type):
                if attr.startswith("__") and attr != "__call__" or _made_per_read(value):
                    continue  # (its own machinery; what makes a new object on each read)
                # (a method by its function: `Model.act = other` makes the code stale)
                value = getattr(obj, attr)
            elif read is not None and attr not in read or (id(obj), attr) in stored:
                continue
            if (
                not callable(value)
                or isinstance(value, (np.ndarray, types.FunctionType, types.MethodType))
                or user_object(value)
            ):
                deps.append(dependency("attribute", obj, attr, value))
                pending += _objects_in(value)
        if not isinstance(obj, type) and user_object(type(obj)):
            pending.append(type(obj))
            if hasattr(obj, "__dict__"):  # (`b.act = f` shadows the class's method)
                deps.append(("names", obj, "__dict__", frozenset(vars(obj))))
    if made_here:  # (arrays computed from the user's arrays: their contents are read too)
        deps += [
            ("contents", d[3], d[2], d[3].copy()) for d in deps if isinstance(d[3], np.ndarray)
        ]
    # (a user function it read: its code replaced in place, as autoreload does, is another)
    deps += [
        ("code", d[3], "__code__", d[3].__code__)
        for d in deps
        if type(d[3]) is types.FunctionType and not in_a_library(d[3].__code__.co_filename)
    ]
    # (the containers' members are in their records already: `dependency` keeps them)
    return deps
