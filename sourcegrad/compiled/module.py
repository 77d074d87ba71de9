"""`sourcegrad.compile` of an nn.Module, or of a function written with Tensor methods.

torch.compile's place: the module's forward runs as generated numpy code and adds ONE node
to the eager graph (`Compiled<Name>Backward`), whose backward is generated source you can
read (`compiled.source`).

How: the forward's source is rewritten into a numpy function (`Translation`) that the
compiler differentiates like any user function:

* `self.fc1.weight` (a parameter or buffer) becomes an argument `fc1_weight`: the
  generated function takes every parameter and buffer of the module, then the forward's
  own arguments; `self.training`, `self.p` and other plain attributes become constants;
* `self.fc1(x)` becomes the numpy function of its layer (`lowering.linear(x,
  fc1_weight, fc1_bias)`), a user-defined submodule or method the function its own forward
  is rewritten into;
* `torch.relu(x)`, `F.linear(...)`, `x.view(n, -1)` become `lowering`'s functions
  (the registry's elementwise ops by their torch names: `torch.tanh` -> `np.tanh`);
* `self.lstm(x)` (nn.RNN, nn.LSTM, nn.GRU) becomes a function written for that module
  (`layers.recurrence`): its layers and directions unrolled, each direction's
  loop over time a loop of the generated code;
* a BatchNorm in training mode normalises by the batch's statistics and calls
  `lowering.track_running_stats`, an impure primitive: the generated forward
  updates the running statistics (and num_batches_tracked) in place, as eager's does.

A forward returning several arrays (`out, (h, c)`, `(logits, aux)`) is one node with one
output per array (`_Regions`). A layer itself may be compiled (`compile(nn.LSTM(...))`);
a tuple argument (an LSTM's `(h_0, c_0)`) is passed to the generated code item by item.

What the rewriting cannot place (a layer or method it does not know, hooks, `.item()`) is
a graph break, as torch.compile has them: the module runs eagerly, with one warning naming
the construct. Likewise when the compiler refuses the rewritten code (a refused call's
updates of the running statistics are undone first). The warning points at the user's
line that broke (`Translation.user_line` maps the rewritten code's lines back to the
forward's, and a refusal inside a layer's lowering to the line that called the layer). A
compiled call never gives other numbers than the eager one.

The rewritten function depends on the modules' train/eval flags and plain attributes; it
is made again when they change (`_Compiled.valid`). Each call walks the module once
(`_walk`: its modules' flags and names, and the parameters and buffers it passes); a
repeated call of the same kind makes nothing again (`CompiledModule.compiles` counts the
rewritings; the generated code is the compiler's, cached per signature).

Takes a Module (instance or class) or a function; gives a `CompiledModule` (a Module
wrapping the original as `_orig_mod`, as torch's OptimizedModule) or a callable.

Why one module: rewriting a Module's forward, guarding the rewrite (`_Compiled.valid`) and the
wrapper that runs it as one eager node are one feature; the source text of the layers'
calls lives apart, in layers.py, and the torch-to-numpy spellings they use in
lowering.py (this package, `sourcegrad.compiled`).
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import itertools
import linecache
import operator
import os
import textwrap
import types
import warnings

import numpy as np

from ..compiler import signature_key
from ..eager.tensor import Tensor
from ..errors import SourcegradError
from . import lowering
from .layers import GraphBreak, has_hooks, layer_call
from .region import CompiledRegion

_STATIC = (bool, int, float, str, type(None))
# methods of Python's own containers, left to the compiler as they are
_CONTAINER_METHODS = {"items", "keys", "values", "append", "get", "extend", "index", "count"}
_counter = itertools.count()


def _is_static(value):
    if isinstance(value, tuple):
        return all(_is_static(v) for v in value)
    return isinstance(value, _STATIC)


def _eager_surface():
    """{id(eager function): lowering function} for the torch functions the rewriting knows."""
    import sourcegrad
    import sourcegrad.nn.functional as F

    from ..ops import RULES

    table = {}
    for op in RULES.values():  # the registry's elementwise ops by their torch names
        if op.torch is None or op.fn is None or op.kind != "elementwise":
            continue
        for name in op.torch.function:
            for home in (sourcegrad, F):
                if hasattr(home, name):
                    table[id(getattr(home, name))] = op.fn
    for name, fn in lowering.FUNCTIONS.items():
        for home in (sourcegrad, F):
            if hasattr(home, name) and _same_positions(getattr(home, name), fn):
                table[id(getattr(home, name))] = fn
    return table


def _same_positions(eager, lowered):
    """Whether the eager function takes its positional arguments in the order the lowered
    one does: torch's top-level spellings of nn.functional may not (`torch.embedding(weight,
    indices)` against `F.embedding(input, weight)`); such a call is a graph break."""
    try:
        theirs = _positional_names(eager)
    except (TypeError, ValueError):
        return False
    ours = _positional_names(lowered)
    n = min(len(theirs), len(ours))
    return theirs[:n] == ours[:n]


def _positional_names(fn):
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in positional]


def _method_table():
    """Tensor method name -> the function computing it (receiver first)."""
    from ..ops import RULES

    table = {}
    for op in RULES.values():
        if op.torch is not None and op.fn is not None and op.kind == "elementwise":
            for name in op.torch.method:
                table[name] = op.fn
    table.update(lowering.METHODS)
    return table


@functools.lru_cache(maxsize=1)
def _tables():
    return _eager_surface(), _method_table()


# --- the rewriting -----------------------------------------------------------------------------


class Translation:
    """The numpy functions (source text) of one module's forward, or of one function."""

    def __init__(self, name):
        self.name = name
        self.chunks = []  # the generated functions' source
        self.namespace = {"_lowering": lowering, "np": np}
        self.done = {}  # (id(module), method name) -> generated function name
        self.guard = []  # (module, attribute, value) the code was made for
        self.rng = False  # draws dropout masks
        self.stateful = False  # updates buffers in place (BatchNorm's running statistics)
        # chunk index -> [(first, last line in the chunk, user's file, user's line)] of each
        # statement rewritten from the user's source (`_line_map`)
        self.spans = {}
        # loaded file -> those spans at their lines in the file (`user_line` reads them)
        self.lines = {}

    def source(self):
        return "\n\n".join(self.chunks)

    def module_function(self, module, method="forward", nones=()):
        """The name of the generated function computing `module.<method>`; its parameters
        are the module's parameters and buffers (`leaf_names`), then the method's own,
        but those at the positions `nones` (the call passes None there: a constant of the
        code, which then decides `mask is None` while compiling)."""
        key = (id(module), method)
        if key in self.done:
            return self.done[key]
        fn = getattr(type(module), method)
        name = f"{type(module).__name__}_{method}_{len(self.done)}"
        self.done[key] = name
        tree = _parse(fn)
        leaves = leaf_names(module)
        params = [a.arg for a in tree.args.args][1:]
        leaves = _renamed(leaves, set(params) | _names_in(tree))
        scope = _scope(fn)
        self.namespace.update({k: v for k, v in scope.items() if k not in self.namespace})
        body = _Rewriter(self, module, leaves, scope, fn).rewrite(tree)
        body.name = name
        _bind_nones(body, nones)
        body.args.args = [
            ast.arg(arg=n) for n in leaves.values() if n is not None
        ] + body.args.args[1:]
        body.decorator_list = []
        self.add_rewritten(body, fn)
        return name

    def user_module_call(self, module, leaf, args):
        """Source text calling the function written for `module`'s forward (a module the
        user defined, inside a Sequential) on the source texts `args`; `leaf(name)` names
        its parameter or buffer `name`. A library layer `layer_call` does not know, or a
        module with hooks, is a graph break."""
        name = type(module).__name__
        if (type(module).__module__ or "").startswith("sourcegrad.nn."):
            raise GraphBreak(f"{name} inside a Sequential")
        if has_hooks(module):
            raise GraphBreak(f"the hooks of a {name}")
        function = self.module_function(module)
        passed = [leaf(d) for d, n in leaf_names(module).items() if n is not None]
        return f"{function}({', '.join(passed + list(args))})"

    def add_rewritten(self, body, fn):
        """The rewritten function `body` (of `fn`'s source) as a chunk, its lines mapped."""
        text = ast.unparse(ast.fix_missing_locations(body))
        self.spans[len(self.chunks)] = _line_map(body, text, fn)
        self.chunks.append(text)

    def layer_function(self, module, arity):
        """The name of a generated function computing `module(input[, hx])` when `module`
        is one of the layers `layer_call` knows (`compile(nn.LSTM(...))`), else None; its
        parameters are the module's parameters and buffers, then the call's arguments
        (a tuple's items one by one: `hx_0, hx_1` for LSTM's (h_0, c_0))."""
        if len(arity) > 2 or type(module).__module__.split(".")[0] != "sourcegrad":
            return None
        leaves = leaf_names(module)
        args, flat = [], []
        for name, size in zip(["input", "hx"], arity):
            if size == _NONE:  # (`lstm(x, None)`)
                args.append("None")
                continue
            items = [name] if size is None else [f"{name}_{i}" for i in range(size)]
            flat += items
            args.append(name if size is None else f"({', '.join(items)},)")
        text = layer_call(module, lambda n: leaves.get(n) or "None", args, self)
        if text is None:
            return None
        name = f"{type(module).__name__}_forward_{len(self.done)}"
        self.done[(id(module), "forward")] = name
        params = [n for n in leaves.values() if n is not None] + flat
        self.chunks.append(f"def {name}({', '.join(params)}):\n    return {text}")
        return name

    def function(self, fn):
        """The generated function computing the torch-style function `fn`."""
        tree = _parse(fn)
        self.namespace.update({k: v for k, v in _scope(fn).items() if k not in self.namespace})
        body = _Rewriter(self, None, {}, self.namespace, fn).rewrite(tree)
        body.decorator_list = []
        self.add_rewritten(body, fn)
        return body.name

    def load(self, name):
        """The generated function `name`, its source registered where the compiler reads it."""
        text = self.source() + "\n"
        file = f"<sourcegrad.compile {self.name} {next(_counter)}>"
        lines = text.splitlines(keepends=True)
        linecache.cache[file] = (len(text), None, lines, file)
        self.lines[file], start = [], 1  # (the chunks are joined by a blank line)
        for i, chunk in enumerate(self.chunks):
            for first, last, user_file, user_line in self.spans.get(i, ()):
                self.lines[file].append((start + first - 1, start + last - 1, user_file, user_line))
            start += chunk.count("\n") + 2
        try:
            code = builtins.compile(text, file, "exec", dont_inherit=True)
        except SyntaxError as exc:  # (two names made alike): never a wrong function
            raise GraphBreak(f"the rewritten code does not compile ({exc.msg})") from exc
        exec(code, self.namespace)
        return self.namespace[name]

    def user_line(self, exc):
        """The user's (file, line) that a failure of the rewritten code comes from, or None:
        the innermost statement rewritten from the user's source holding the first place,
        innermost first, in a file loaded here among the error's (a refusal's location,
        then the calls it was inlined through: the user's line called a layer whose
        lowering was refused) and its traceback's (an error raised running the code)."""
        places = []
        if isinstance(exc, SourcegradError):
            places += [(loc.file, loc.line) for loc in (exc.loc, *exc.called_from) if loc]
        frames, tb = [], exc.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
        for file, line in places + frames[::-1]:
            holding = [span for span in self.lines.get(file, ()) if span[0] <= line <= span[1]]
            if holding:
                _, _, user_file, user_line = min(holding, key=lambda span: span[1] - span[0])
                return user_file, user_line
        return None


def _line_map(tree, text, fn):
    """[(first, last line in `text`, file, line)] of the statements of the rewritten `tree`,
    unparsed as `text`: the line of `fn`'s source each came from. Parsing `text` again
    gives the same statements in the same order (ast.walk's), each at its lines in `text`."""
    file, first = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]
    made = [n for n in ast.walk(ast.parse(text).body[0]) if isinstance(n, ast.stmt)]
    theirs = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    return [
        (m.lineno, m.end_lineno, file, first + t.lineno - 1)
        for m, t in zip(made, theirs)
        if hasattr(t, "lineno")
    ]


def _renamed(leaves, taken):
    """`leaves` (`leaf_names`) with each argument name that the method's own names take
    (a ViT's `cls = self.cls.expand(...)`) made another: the generated function takes its
    leaves by position, so only its own text names them."""
    used = set(taken) | {n for n in leaves.values() if n is not None}
    out = {}
    for dotted, name in leaves.items():
        if name is not None and name in taken:
            fresh, i = f"{name}_leaf", 2
            while fresh in used:
                fresh, i = f"{name}_leaf{i}", i + 1
            used.add(fresh)
            name = fresh
        out[dotted] = name
    return out


def _scope(fn):
    """The names `fn` reads from outside: its globals, and its closure's variables (a
    module defined inside a function reads that function's names)."""
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
    return scope


def leaf_names(module):
    """{dotted name of each parameter and buffer (None ones too): its argument name}."""
    out = {}
    for prefix, m in module.named_modules():
        for kind in (m._parameters, m._buffers):
            for n, v in kind.items():
                dotted = f"{prefix}.{n}" if prefix else n
                # (a Sequential's own children are "0", "1", ...: not names)
                name = dotted.replace(".", "_")
                out[dotted] = None if v is None else "layer_" * name[0].isdigit() + name
    return {k: v for k, v in out.items() if v is not None} | {
        k: None for k, v in out.items() if v is None
    }


def leaves_of(module):
    """The parameters and buffers, in `leaf_names`' order (those that are not None)."""
    return _walk(module)[1]


def _walk(module):
    """(state, leaves) of `module`, in one pass over its modules (named_modules' order):
    `state` is what a rewriting is made for besides its guards (each module, its mode, its
    children's and its parameters' and buffers' names and whether each is None, whether
    it has hooks: the rewriting then breaks); `leaves` its parameters and buffers that are
    not None, in `leaf_names`' order. Run on every call of a compiled module: it stays
    one plain loop (no generators, no names joined)."""
    state, leaves, memo, stack = [], [], set(), [module]
    while stack:
        m = stack.pop()
        if id(m) in memo:
            continue
        memo.add(id(m))
        params, buffers, children = m._parameters, m._buffers, m._modules
        # (an empty dict skipped, and filter in C: ~0.5 µs a module less than comprehensions,
        # a GPT's 26 modules 37 -> 23 µs a call)
        names = buffer_names = ()
        if params:
            own = list(filter(_is_set, params.values()))
            leaves += own
            # the names, a None one as (name,) (its own names alone when none is None:
            # tuple(dict) runs in C, where a loop over the items cost ~1 µs a module)
            names = tuple(params) if len(own) == len(params) else _names(params)
        if buffers:
            kept = list(filter(_is_set, buffers.values()))
            leaves += kept
            buffer_names = tuple(buffers) if len(kept) == len(buffers) else _names(buffers)
        state.append((id(m), m.training, tuple(children), names, buffer_names, has_hooks(m)))
        if children:
            stack += filter(_is_set, reversed(children.values()))
    return tuple(state), leaves


_is_set = functools.partial(operator.is_not, None)  # (not `is not None` in a comprehension)


def _names(members):
    return tuple(n if v is not None else (n,) for n, v in members.items())


def _parse(fn):
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise GraphBreak(f"the source of {fn.__qualname__} is not available ({exc})") from exc
    tree = ast.parse(text).body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise GraphBreak(f"{fn.__qualname__} is not defined by a def statement")
    a = tree.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise GraphBreak(f"{fn.__qualname__}'s *args, **kwargs or keyword-only parameters")
    return tree


def _names_in(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _chain(node):
    """['self', 'fc1', 'weight'] for `self.fc1.weight`, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


class _Substitute(ast.NodeTransformer):
    """Reads of the loop variable `name` become the attribute chain `self.blocks.<i>`."""

    def __init__(self, name, chain):
        self.name, self.chain = name, chain

    def visit_Name(self, node):
        if node.id != self.name:
            return node
        if not isinstance(node.ctx, ast.Load):
            raise GraphBreak(f"an assignment to the loop variable {self.name}")
        expr: ast.expr = ast.Name(self.chain[0], ast.Load())
        for attr in self.chain[1:]:
            expr = ast.Attribute(expr, attr, ast.Load())
        return ast.copy_location(expr, node)


def _reduces_with_indices(node, self_name):
    """Whether `node` is a call of max or min (`x.max(1)`, `torch.min(x, 0)`), not a method
    of the module's own (`self.max(x)`): its result is the (values, indices) pair, read by
    `.values` and `.indices`."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("max", "min")
    ):
        return False
    chain = _chain(node.func)
    return not (chain and chain[0] == self_name)


def _expr(text):
    return ast.parse(text, mode="eval").body


class _Rewriter(ast.NodeTransformer):
    def __init__(self, translation, module, leaves, globals_, fn):
        self.t = translation
        self.module = module
        self.leaves = leaves
        self.globals = globals_
        self.functions, self.methods = _tables()
        self.file, self.first_line = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]

    def visit(self, node):
        """A graph break is located at the innermost node of the user's source it came
        from (its line is where the warning points)."""
        try:
            return super().visit(node)
        except GraphBreak as exc:
            # (not a node the rewriting made: its line is that of its own text)
            if exc.where is None and id(node) in self.user_nodes:
                exc.where = (self.file, self.first_line + node.lineno - 1)
            raise

    def rewrite(self, tree):
        self.self_name = tree.args.args[0].arg if self.module is not None else None
        self.user_nodes = {id(n) for n in ast.walk(tree) if hasattr(n, "lineno")}
        # the function's own names shadow its globals
        self.local = {a.arg for a in tree.args.args} | {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
        }
        return self.visit(tree)

    # self.<...>: a leaf, a constant, a submodule or a method
    def resolve_self(self, chain):
        from ..nn import Module

        obj, path = self.module, []
        for i, attr in enumerate(chain[1:], start=2):
            rest = chain[i:]  # the attributes read from what `attr` names
            if isinstance(obj, Module):
                if attr in obj._parameters or attr in obj._buffers:
                    return "leaf", (".".join(path + [attr]), rest)
                if attr in obj._modules:
                    obj, path = obj._modules[attr], path + [attr]
                    continue
            try:
                value = getattr(obj, attr)
            except AttributeError:
                raise GraphBreak(f"the attribute self.{'.'.join(path + [attr])}") from None
            if rest:
                raise GraphBreak(f"self.{'.'.join(chain[1:])}")
            if _is_static(value):
                self.t.guard.append((obj, attr, value))
                return "const", value
            if inspect.ismethod(value) and value.__self__ is obj and isinstance(obj, Module):
                return "method", (obj, attr, path)
            raise GraphBreak(f"self.{'.'.join(path + [attr])} (a {type(value).__name__})")
        return "module", (obj, path)

    def leaf_expr(self, value):
        """`fc1_weight`, or `fc1_weight.shape` for self.fc1.weight.shape."""
        dotted, rest = value
        return _expr(".".join([self.leaf_text(dotted)] + rest))

    def leaf_text(self, dotted):
        name = self.leaves.get(dotted)
        return "None" if name is None else name

    def visit_Attribute(self, node):
        chain = _chain(node)
        if self.module is not None and chain and chain[0] == self.self_name:
            kind, value = self.resolve_self(chain)
            if kind == "leaf":
                return ast.copy_location(self.visit(self.leaf_expr(value)), node)
            if kind == "const":
                return ast.copy_location(ast.Constant(value), node)
            raise GraphBreak(f"self.{'.'.join(chain[1:])} used as a value")
        if node.attr in ("data", "grad", "grad_fn", "device"):
            raise GraphBreak(f"the Tensor attribute .{node.attr}")
        if node.attr in ("values", "indices") and _reduces_with_indices(node.value, self.self_name):
            # `x.max(1).values`: the (values, indices) pair's item (`lowering.max_with_indices`)
            item = ast.Constant(0 if node.attr == "values" else 1)
            return ast.copy_location(ast.Subscript(self.visit(node.value), item, node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if self.module is not None and node.id == self.self_name:
            raise GraphBreak("self used as a value")
        return node

    def visit_For(self, node):
        """`for block in self.blocks:` over an nn.ModuleList or nn.Sequential: unrolled, one
        copy of the body per submodule with `block` standing for `self.blocks.<i>` (a GPT's
        loop over its layers). Any other loop stays a loop of the generated code."""
        chain = _chain(node.iter)
        if (
            self.module is None
            or not chain
            or chain[0] != self.self_name
            or not isinstance(node.target, ast.Name)
            or node.orelse
        ):
            return self.generic_visit(node)
        from ..nn import ModuleList, Sequential

        kind, value = self.resolve_self(chain)
        if kind != "module" or not isinstance(value[0], (ModuleList, Sequential)):
            return self.generic_visit(node)
        if any(isinstance(n, (ast.Break, ast.Continue)) for n in ast.walk(node)):
            raise GraphBreak("break or continue in a loop over a ModuleList")
        name = node.target.id
        unrolled = []
        for key in value[0]._modules:
            for stmt in node.body:
                stmt = _Substitute(name, chain + [key]).visit(copy.deepcopy(stmt))
                self.user_nodes.update(id(n) for n in ast.walk(stmt) if hasattr(n, "lineno"))
                out = self.visit(stmt)
                unrolled.extend(out if isinstance(out, list) else [out])
        return unrolled or [ast.copy_location(ast.Pass(), node)]

    def visit_Assign(self, node):
        for target in node.targets:
            self.refuse_a_write_to_self(target)
        return self.generic_visit(node)

    def visit_AugAssign(self, node):  # `self.steps += 1`: a write, as `self.steps = ...`
        self.refuse_a_write_to_self(node.target)
        return self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self.refuse_a_write_to_self(node.target)
        return self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self.refuse_a_write_to_self(target)
        return self.generic_visit(node)

    def refuse_a_write_to_self(self, target):
        """The module's state changed by forward is eager's to do: a graph break."""
        chain = _chain(target) if isinstance(target, ast.Attribute) else None
        if chain and chain[0] == self.self_name:
            raise GraphBreak(f"an assignment to self.{'.'.join(chain[1:])}")
        while isinstance(target, ast.Subscript):  # `self.weight[0] = 0`: a parameter's
            target = target.value
            chain = _chain(target)
            if chain and chain[0] == self.self_name:
                raise GraphBreak(f"an in-place write to self.{'.'.join(chain[1:])}")

    def visit_Call(self, node):
        func = node.func
        chain = _chain(func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise GraphBreak("*args or **kwargs in a call")
        if self.module is not None and chain and chain[0] == self.self_name:
            return self.self_call(node, chain)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        obj = self.lookup(chain) if chain else None
        if obj is not None:
            lowered = self.functions.get(id(obj))
            if lowered is not None:
                if any(k.arg == "inplace" for k in node.keywords):
                    raise GraphBreak(f"{'.'.join(chain)}(inplace=...)")
                node.func = _expr(self.name_of(lowered))
                return node
            home = getattr(obj, "__module__", None) or ""
            if home.split(".")[0] in ("sourcegrad", "torch"):
                raise GraphBreak(f"{'.'.join(chain)}()")
            if (
                isinstance(obj, type)
                or inspect.isbuiltin(obj)
                or home.startswith("numpy")
                or isinstance(obj, np.ufunc)
                or obj in (len, range, zip, enumerate)
            ):
                return node
            if isinstance(obj, types.FunctionType):
                raise GraphBreak(f"a call of the function {obj.__qualname__}")
            return node
        if isinstance(func, ast.Attribute):
            node.func.value = self.visit(func.value)
            if func.attr in _CONTAINER_METHODS:
                return node
            lowered = self.methods.get(func.attr)
            if lowered is None:
                raise GraphBreak(f"the Tensor method .{func.attr}()")
            node.func = _expr(self.name_of(lowered))
            node.args = [func.value] + node.args
            return node
        return self.generic_visit(node)

    def lookup(self, chain):
        """The object a dotted name refers to in the function's globals, or None."""
        if chain[0] in self.local:
            return None
        if chain[0] in self.globals:
            obj = self.globals[chain[0]]
        elif hasattr(builtins, chain[0]):
            obj = getattr(builtins, chain[0])
        else:
            return None  # a local name
        for attr in chain[1:]:
            obj = getattr(obj, attr, None)
        return obj

    def name_of(self, fn):
        """How generated code names `fn`: `_lowering.linear`, `np.tanh`, `_opnn.relu`."""
        if getattr(lowering, fn.__name__, None) is fn:
            return f"_lowering.{fn.__name__}"
        if getattr(np, fn.__name__, None) is fn:
            return f"np.{fn.__name__}"
        alias = f"_op_{fn.__name__}"
        self.t.namespace[alias] = fn
        return alias

    def self_call(self, node, chain):
        kind, value = self.resolve_self(chain)
        if kind == "leaf" and value[1]:  # a method of a parameter: self.fc.weight.t()
            node.func = self.leaf_expr(value)
            return self.visit_Call(node)
        args = [ast.unparse(self.visit(a)) for a in node.args]
        if kind == "method":
            obj, attr, path = value
            if node.keywords:
                raise GraphBreak(f"keyword arguments to self.{'.'.join(chain[1:])}()")
            return self.submodule_call(obj, path, attr, args, node)
        if kind != "module":
            raise GraphBreak(f"a call of self.{'.'.join(chain[1:])}")
        module, path = value
        if has_hooks(module):
            raise GraphBreak(f"the hooks of self.{'.'.join(chain[1:])}")
        prefix = "".join(p + "." for p in path)
        # (keyword arguments: the attention and transformer layers' masks, bound to their
        # forward's parameters; to any other module a graph break)
        keywords = {k.arg: ast.unparse(self.visit(k.value)) for k in node.keywords}
        text = layer_call(
            module, lambda n: self.leaf_text(prefix + n), args, self.t, False, keywords
        )
        if text is not None:
            self.t.guard.append((module, "training", module.training))
            return ast.copy_location(_expr(text), node)
        if node.keywords:
            raise GraphBreak(f"keyword arguments to self.{'.'.join(chain[1:])}()")
        if (type(module).__module__ or "").startswith("sourcegrad.nn."):
            raise GraphBreak(f"the layer {type(module).__name__}")
        return self.submodule_call(module, path, "forward", args, node)

    def submodule_call(self, module, path, method, args, node):
        name = self.t.module_function(module, method)
        prefix = "".join(p + "." for p in path)
        passed = [
            self.leaf_text(prefix + d) for d, n in leaf_names(module).items() if n is not None
        ]
        return ast.copy_location(_expr(f"{name}({', '.join(passed + args)})"), node)


def compile(fn=None, *, backend="auto"):  # noqa: A001 - torch has torch.compile too
    """Decorator (or function): run `fn` on Tensors as one node with a generated backward.

    `fn` may be a numpy function, a function written with torch's functions and Tensor
    methods, or an nn.Module (instance or class): see below."""
    if fn is None:
        return lambda f: compile(f, backend=backend)
    from ..nn import Module

    if isinstance(fn, Module):
        return compile_module(fn)
    if isinstance(fn, type) and issubclass(fn, Module):
        return compile_module_class(fn)
    if is_torch_style(fn):
        return CompiledTorchFunction(fn)
    return CompiledRegion(fn, backend)


# --- the compiled module -----------------------------------------------------------------------

# The compiler refusing the rewritten code, or a lowering's assertion about its input (an
# unbatched LSTM input): before the node is made, so running eagerly instead is safe; an
# error of the user's own shows again when the eager forward runs.
_REFUSALS = (SourcegradError, AssertionError)


_WROTE_AN_ARGUMENT = "an in-place write to an argument of forward (eager's to do)"


def _freeze(args):
    """The arrays of the Tensor arguments made read-only for a compiled call, and returned
    (`_thaw` makes them writable again): a write into one (`x[:, 0] = 0` on forward's own
    input, or on a view of it) is numpy's ValueError, and the call runs eagerly. Eager
    changes the caller's tensor (bumps its version, refuses a leaf that requires grad);
    the generated code changed its array and nothing else. A write into an array made
    inside forward is compiled."""
    frozen = []
    for a in args:
        if isinstance(a, Tensor):
            data = a._data
            if type(data) is np.ndarray and data.flags.writeable:
                data.flags.writeable = False
                frozen.append(data)
    return frozen


def _thaw(frozen):
    for data in frozen:
        data.flags.writeable = True


def _wrote_an_argument(exc):
    """Whether `exc` (a ValueError, or the compiler's NumpyValueError) is numpy's refusal
    of a write into a read-only array (`_freeze`)."""
    return "read-only" in str(exc)


def _warn_break(what, reason, where=None, stacklevel=4):
    """The one warning of a graph break, pointing at the user's line that broke (`where`:
    file and line) where it is known, else at the line that called the compiled code (the
    frame `stacklevel` up)."""
    message = f"sourcegrad.compile: {what} runs eagerly (graph break: {reason})"
    if where is None:
        warnings.warn(message, stacklevel=stacklevel)
    else:
        warnings.warn_explicit(message, UserWarning, *where)


def _reason(exc, t=None):
    """What broke, in a line. A refusal's location is the warning's (the user's line) where
    it is in the rewritten code of the Translation `t`; where it is a line of sourcegrad's
    own that the user's line led to (a layer's lowering, inlined), it is named after it."""
    if isinstance(exc, GraphBreak):
        return str(exc)
    if isinstance(exc, ValueError) and _wrote_an_argument(exc):
        return _WROTE_AN_ARGUMENT
    if isinstance(exc, SourcegradError) and exc.loc is not None:
        inside = (
            "" if t is not None and exc.loc.file in t.lines else f" (raised at {_shown(exc.loc)})"
        )
        return f"{type(exc).__name__}: {exc.message.splitlines()[0]}{inside}"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _where(exc, t):
    """The user's (file, line) a break comes from, or None (`Translation.user_line`)."""
    if isinstance(exc, GraphBreak) and exc.where is not None:
        return exc.where
    return t.user_line(exc) if t is not None else None


def _shown(loc):
    """`sourcegrad/compiled/lowering.py:209` for a line of sourcegrad's own, else file:line."""
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    inside = os.path.abspath(loc.file).startswith(os.path.join(home, "sourcegrad", ""))
    return f"{os.path.relpath(loc.file, home) if inside else loc.file}:{loc.line}"


def _eagerly(name, reason, where):
    """What `.source` says of code that runs eagerly."""
    at = f" ({where[0]}:{where[1]})" if where is not None else ""
    return f"# {name} runs eagerly: {reason}{at}\n"


def _kept_buffers(module):
    """Copies of the module's buffers, to undo what a call that is then refused did."""
    return [(b, b._data.copy()) for b in module.buffers()]


def _restore(kept):
    for buffer, data in kept:
        buffer._data[...] = data


class _Regions:
    """The compiled regions of one rewritten function `fn` (named `name` in the
    Translation `t`): itself when it returns one array; when it returns a tuple of arrays
    (nested: `out, (h, c)`), per structure and shapes of that tuple, a function returning
    them raveled end to end, whose node has one output per array.

    What it returns is learnt by running it once per signature of the arguments (with its
    effects undone: `kept()` copies the buffers it may update, and the dropout generator
    is put back), the price of one forward, as the compiling costs far more."""

    def __init__(self, t, name, fn, kept):
        self.t, self.name, self.fn, self.kept = t, name, fn, kept
        self.one = CompiledRegion(fn)
        self.by_signature = {}  # signature -> None (one array) or (structure, region)
        self.last = self.one

    def __call__(self, *args):
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        key = signature_key(arrays)
        found = self.by_signature.get(key, False)
        if found is False:
            found = self.by_signature[key] = self.several(
                [a.detach().numpy() if isinstance(a, Tensor) else a for a in args]
            )
        if found is None:
            self.last = self.one
            return self.one.keyed(args, arrays, key)
        structure, region = found
        self.last = region
        return _unflatten(structure, region.keyed(args, arrays, key))

    def several(self, arrays):
        """None when `fn` returns one array at `arrays`; else the structure of what it
        returns and the region computing it."""
        kept = self.kept()
        state = lowering.DROPOUT_RNG.bit_generator.state
        try:
            value = self.fn(*arrays)
        except Exception as exc:  # noqa: BLE001 - eager then raises torch's own error
            broken = GraphBreak(_reason(exc, self.t))
            broken.where = self.t.user_line(exc)
            raise broken from exc
        finally:
            _restore(kept)
            lowering.DROPOUT_RNG.bit_generator.state = state
        if not isinstance(value, tuple):
            return None
        leaves = []
        structure = _structure(value, leaves)
        if len({a.dtype for a in leaves}) > 1:
            raise GraphBreak("a forward returning arrays of different dtypes")
        names = [f"output_{i}" for i in range(len(leaves))]
        params = list(inspect.signature(self.fn).parameters)
        if set(names) & set(params):
            raise GraphBreak(
                f"a parameter named like an output ({sorted(set(names) & set(params))[0]})"
            )
        target = _target_text(structure, names)
        joined = ", ".join(f"np.ravel({n})" for n in names)
        wrapper = f"{self.name}_outputs"
        self.t.chunks.append(
            f"def {wrapper}({', '.join(params)}):\n"
            f"    {target} = {self.name}({', '.join(params)})\n"
            f"    return np.concatenate(({joined}{',' if len(names) == 1 else ''}))"
        )
        shapes = [a.shape for a in leaves]
        return structure, CompiledRegion(self.t.load(wrapper), outputs=shapes, name=self.name)

    @property
    def source(self):
        return self.last.source


def _structure(value, leaves):
    """`value` (nested tuples of arrays) with each array replaced by its index in `leaves`."""
    if isinstance(value, tuple):
        return tuple(_structure(v, leaves) for v in value)
    if isinstance(value, (np.ndarray, np.floating)) and np.asarray(value).dtype.kind == "f":
        leaves.append(np.asarray(value))
        return len(leaves) - 1
    what = f"{value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
    raise GraphBreak(f"a forward returning a {what} among its outputs")


def _target_text(structure, names):
    """`output_0, (output_1, output_2)` for the structure (0, (1, 2))."""
    if isinstance(structure, int):
        return names[structure]
    inner = ", ".join(_target_text(s, names) for s in structure)
    return f"({inner},)" if len(structure) == 1 else f"({inner})"


def _unflatten(structure, outputs):
    if isinstance(structure, int):
        return outputs[structure]
    return tuple(_unflatten(s, outputs) for s in structure)


_NONE = "None"  # an argument that is None, in `_arity`


def _arity(args):
    """What a rewriting is made for of a call's arguments: None for each, the length of
    a tuple or list (passed to the generated code item by item: `_flat`), or `_NONE` for
    None (a constant of the code: `_bind_nones`; not passed)."""
    return tuple(
        len(a) if isinstance(a, (tuple, list)) else _NONE if a is None else None for a in args
    )


def _flat(args):
    return [
        item
        for a in args
        if a is not None
        for item in (a if isinstance(a, (tuple, list)) else (a,))
    ]


def _bind_nones(body, nones):
    """The parameters at the positions `nones` (after self) of the function `body` made
    local names bound to None at its start (their defaults dropped: the others' stay the
    trailing parameters')."""
    if not nones:
        return
    args = body.args
    first_default = len(args.args) - len(args.defaults)
    kept, defaults, bound = [], [], []
    for i, arg in enumerate(args.args):
        if i - 1 in nones:
            bound.append(ast.Assign([ast.Name(arg.arg, ast.Store())], ast.Constant(None)))
            continue
        kept.append(arg)
        if i >= first_default:
            defaults.append(args.defaults[i - first_default])
    args.args, args.defaults = kept, defaults
    body.body = bound + body.body


class _Compiled:
    """One rewriting of a module for one state of its flags: the region, or the break."""

    def __init__(self, module, arity):
        self.reason = self.where = None  # (why it runs eagerly, and the user's line)
        t = Translation(type(module).__name__)
        try:
            if has_hooks(module):
                raise GraphBreak("the module's hooks")
            name = t.layer_function(module, arity)
            if name is None and any(isinstance(size, int) for size in arity):
                raise GraphBreak("a tuple or list argument to forward")
            nones = tuple(i for i, size in enumerate(arity) if size == _NONE)
            name = name or t.module_function(module, nones=nones)
            fn = t.load(name)
        except GraphBreak as exc:
            self.reason, self.where = str(exc), exc.where
            fn = None
        self.guard = t.guard
        self.rng = t.rng
        self.stateful = t.stateful
        effects = functools.partial(_kept_buffers, module) if t.stateful else list
        self.region = None if fn is None else _Regions(t, name, fn, effects)

    def valid(self):
        return all(getattr(obj, attr, None) == value for obj, attr, value in self.guard)


def _call_with_rng(uses_rng, call):
    """`call()`, compiled dropout drawing from the eager default generator's stream."""
    if not uses_rng:
        return call()
    from ..eager.factories import numpy_rng

    eager = numpy_rng()
    lowering.DROPOUT_RNG.bit_generator.state = eager.bit_generator.state
    try:
        return call()
    finally:
        eager.bit_generator.state = lowering.DROPOUT_RNG.bit_generator.state


def _make_compiled_module_class():
    from ..nn import Module

    class CompiledModule(Module):
        """A module whose forward runs as generated code (torch's OptimizedModule: the
        original is `_orig_mod`, whose parameters these are)."""

        def __init__(self, module):
            super().__init__()
            self._orig_mod = module
            object.__setattr__(self, "_versions", {})
            object.__setattr__(self, "_warned", set())
            # how many rewritings were made (a repeated call of the same kind makes none)
            object.__setattr__(self, "compiles", 0)

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self.__dict__["_modules"]["_orig_mod"], name)

        def compiled(self, arity=None, state=None):
            """The rewriting for the modules' current train/eval flags (made when needed),
            for a call with arguments of `arity` (`_arity`; the last call's when None);
            `state`: `_walk`'s of the module, where the caller has it."""
            module = self.__dict__["_modules"]["_orig_mod"]  # (not through __getattr__)
            if arity is None:
                arity = self.__dict__.get("_arity", (None,))
            object.__setattr__(self, "_arity", arity)
            key = (_walk(module)[0] if state is None else state, arity)
            found = self._versions.get(key)
            if found is None or not found.valid():
                found = self._versions[key] = _Compiled(module, arity)
                object.__setattr__(self, "compiles", self.compiles + 1)
            return found

        def forward(self, *args, **kwargs):
            module = self.__dict__["_modules"]["_orig_mod"]  # (not through __getattr__)
            state, leaves = _walk(module)
            found = self.compiled(_arity(args), state)
            if found.reason is None and not kwargs:
                flat = _flat(args)
                # a refusal may come after a BatchNorm updated its statistics: undone
                kept = _kept_buffers(module) if found.stateful else []
                frozen = _freeze(flat)
                try:
                    if not found.rng:
                        return found.region(*leaves, *flat)
                    return _call_with_rng(True, lambda: found.region(*leaves, *flat))
                except (GraphBreak, *_REFUSALS) as exc:  # the compiler refused the code
                    found.reason = _reason(exc, found.region.t)
                    found.where = _where(exc, found.region.t)
                    _thaw(frozen)  # (a buffer passed as an argument too: restored after)
                    _restore(kept)
                except ValueError as exc:
                    if not _wrote_an_argument(exc):
                        raise
                    found.reason, found.where = _WROTE_AN_ARGUMENT, None
                    _thaw(frozen)
                    _restore(kept)
                finally:
                    _thaw(frozen)
            reason = found.reason or "keyword arguments"
            if reason not in self._warned:
                self._warned.add(reason)
                _warn_break(type(module).__name__, reason, found.where if found.reason else None)
            return module(*args, **kwargs)

        @property
        def source(self):
            """The generated forward and backward of the last compiled call."""
            found = self.compiled()
            if found.reason is not None:
                return _eagerly(type(self._orig_mod).__name__, found.reason, found.where)
            return found.region.source

        def __repr__(self):
            return f"CompiledModule({self._orig_mod!r})"

    return CompiledModule


@functools.lru_cache(maxsize=1)
def compiled_module_class():
    return _make_compiled_module_class()


def compile_module(module):
    """`sourcegrad.compile(model)`: the compiled module (`model(x)` runs the generated code)."""
    return compiled_module_class()(module)


def compile_module_class(cls):
    """`sourcegrad.compile(Net)`: a constructor of compiled instances."""

    @functools.wraps(cls, updated=())
    def make(*args, **kwargs):
        return compile_module(cls(*args, **kwargs))

    return make


class CompiledTorchFunction:
    """A function written with torch's functions and Tensor methods, compiled (`compile(fn)`)."""

    def __init__(self, fn):
        self.fn = fn
        self.reason = self.where = None  # (why it runs eagerly, and the user's line)
        self.warned = False
        functools.update_wrapper(self, fn, updated=())
        self.t = t = Translation(fn.__qualname__)
        try:
            name = t.function(fn)
            self.region = _Regions(t, name, t.load(name), list)
        except GraphBreak as exc:
            self.reason, self.where, self.region = str(exc), exc.where, None
        self.rng = t.rng

    def __call__(self, *args):
        if self.reason is None:
            frozen = _freeze(args)
            try:
                return _call_with_rng(self.rng, lambda: self.region(*args))
            except (GraphBreak, *_REFUSALS) as exc:
                self.reason, self.where = _reason(exc, self.t), _where(exc, self.t)
            except ValueError as exc:
                if not _wrote_an_argument(exc):
                    raise
                self.reason, self.where = _WROTE_AN_ARGUMENT, None
            finally:
                _thaw(frozen)
        if not self.warned:
            self.warned = True
            _warn_break(self.fn.__qualname__, self.reason, self.where, stacklevel=3)
        return self.fn(*args)

    @property
    def source(self):
        if self.region is None:
            return _eagerly(self.fn.__qualname__, self.reason, self.where)
        return self.region.source


def is_torch_style(fn):
    """Is `fn` written for Tensors: does it call torch's functions (it names `sourcegrad`
    imported as torch, `sourcegrad.nn.functional` or a function of the eager surface), or
    call no numpy function (its methods are then Tensor methods: `x.sum(1)`)?"""
    code = fn.__code__
    names = set(code.co_names)
    for const in code.co_consts:  # nested code (comprehensions)
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    uses_numpy = False
    for name in names:
        value = fn.__globals__.get(name)
        if (
            value is np
            or isinstance(value, types.ModuleType)
            and value.__name__.startswith("numpy")
        ):
            uses_numpy = True
        home = (
            getattr(value, "__name__", "")
            if isinstance(value, types.ModuleType)
            else getattr(value, "__module__", "") or ""
        )
        if home == "sourcegrad" and isinstance(value, types.ModuleType) and name != "sourcegrad":
            return True
        if home.startswith(("sourcegrad.nn", "sourcegrad.eager")):
            return True
    return not uses_numpy
