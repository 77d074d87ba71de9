"""`sourcegrad.jit`: torch.jit's entry points, for the scripts that use them on an eager model.

TorchScript compiles a function or Module into a program whose behaviour is the eager
one; sourcegrad has no TorchScript, so what is "the same function" is kept and what
needs a TorchScript program is refused by name:

* `script(fn)` gives a `ScriptFunction` that calls `fn`; `script(module)` gives a
  `ScriptModule`: a shallow copy of the module whose class also derives from ScriptModule,
  sharing its parameters, buffers and submodules (as torch's scripted module shares the
  parameters), so `script(model)(x)` is `model(x)` and an optimizer of either trains both.
  `trace(fn_or_module, example_inputs)` runs it once on the example inputs (as torch's
  tracer does, so an error shows at trace time) and returns the same wrappers. What
  differs: Python control flow stays dynamic (torch's trace freezes the branch taken).
* `ignore`, `unused`, `export`, `interface`, `Final`, `Attribute`, `annotate`,
  `script_if_tracing`, `script_method` are the annotations TorchScript reads: here they
  return what they are given; the optimizer and fuser switches (`optimized_execution`,
  `fuser`, `set_fusion_strategy`, `enable_onednn_fusion`) have nothing to switch.
  `is_scripting()` and `is_tracing()` are False, since code never runs as TorchScript.
  `fork`/`wait` run the call at once and hand back its result.
* `save(m, f)` / `load(f)` round-trip a scripted module through `sourcegrad.save` (the
  module is pickled, so its class must be importable when loading, and the file runs code
  when it is loaded: load only trusted files, as with `torch.load(weights_only=False)`).
* `script`, `trace`, `save`, `load` and `freeze` give torch 2.13's DeprecationWarnings.
* A TorchScript program's own members (`.graph`, `.code`, `.inlined_graph`, `freeze` of
  a graph, `CompilationUnit`) raise `JitUnsupportedError`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import pickle
import typing
import warnings

from .errors import UnsupportedAPIError
from .nn.modules.module import Module

__all__ = [
    "Attribute",
    "CompilationUnit",
    "Final",
    "JitUnsupportedError",
    "ScriptFunction",
    "RecursiveScriptModule",
    "ScriptModule",
    "TracerWarning",
    "annotate",
    "export",
    "fork",
    "freeze",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "load",
    "enable_onednn_fusion",
    "fuser",
    "onednn_fusion_enabled",
    "optimize_for_inference",
    "optimized_execution",
    "save",
    "script",
    "script_if_tracing",
    "script_method",
    "set_fusion_strategy",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

Final = typing.Final


class JitUnsupportedError(UnsupportedAPIError):
    """A TorchScript feature that needs a compiled TorchScript program (its graph, its code),
    which sourcegrad's eager emulation of torch.jit does not have."""


class TracerWarning(Warning):
    """torch.jit's warning category (scripts filter it); sourcegrad's trace never gives it."""


def _deprecated(name: str, advice: str = "Please switch to `torch.compile` or `torch.export`."):
    # torch 2.13 warns so on each of these; scripts that filter the warning find it here too
    warnings.warn(
        f"`torch.jit.{name}` is deprecated. {advice}",
        DeprecationWarning,
        stacklevel=3,
    )


def _no_torchscript(what: str):
    raise JitUnsupportedError(
        f"torch.jit: {what} needs a TorchScript program, and sourcegrad runs scripted and "
        "traced code eagerly (the same function, no TorchScript IR)"
    )


class ScriptFunction:
    """A scripted or traced function: calls the original one."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def graph(self):
        _no_torchscript("ScriptFunction.graph")

    @property
    def inlined_graph(self):
        _no_torchscript("ScriptFunction.inlined_graph")

    @property
    def code(self):
        _no_torchscript("ScriptFunction.code")

    @property
    def schema(self):
        _no_torchscript("ScriptFunction.schema")

    def save(self, f, _extra_files=None):
        _no_torchscript("saving a scripted function")


class ScriptModule(Module):
    """The base of scripted modules: `script(module)` makes a copy whose class derives from
    this and from the module's own class, so it behaves as the module."""

    @property
    def original_name(self) -> str:
        return _original_class(self).__name__

    @property
    def graph(self):
        _no_torchscript("ScriptModule.graph")

    @property
    def inlined_graph(self):
        _no_torchscript("ScriptModule.inlined_graph")

    @property
    def code(self):
        _no_torchscript("ScriptModule.code")

    @property
    def code_with_constants(self):
        _no_torchscript("ScriptModule.code_with_constants")

    def save(self, f, _extra_files=None):
        save(self, f, _extra_files)

    def __reduce_ex__(self, protocol):
        # pickled as the plain module, scripted again on load (the scripted class is made
        # at run time, so pickle could not find it by name)
        return (_script_module, (_unscripted(self),))

    def __repr__(self):
        return Module.__repr__(self)


RecursiveScriptModule = ScriptModule  # torch's class of scripted modules, for isinstance


@functools.cache
def _scripted_class(cls):
    return type(cls.__name__, (ScriptModule, cls), {"__module__": cls.__module__})


def _original_class(module):
    return next(c for c in type(module).__mro__[1:] if not issubclass(c, ScriptModule))


def _shallow_copy(module, cls):
    clone = object.__new__(cls)
    clone.__dict__.update(module.__dict__)
    # own tables, shared tensors and submodules: registering on one does not change the other
    for table in ("_parameters", "_buffers", "_modules"):
        if table in module.__dict__:
            clone.__dict__[table] = copy.copy(module.__dict__[table])
    return clone


def _unscripted(module):
    return _shallow_copy(module, _original_class(module))


def _script_module(module):
    if isinstance(module, ScriptModule):
        return module
    return _shallow_copy(module, _scripted_class(type(module)))


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """torch.jit.script: a Module gives a ScriptModule, a function a ScriptFunction, a
    class (a TorchScript class) itself; all run as the original (see the module doc)."""
    _deprecated("script")
    return _script(obj)


def _script(obj):
    if isinstance(obj, Module):
        return _script_module(obj)
    if isinstance(obj, type):
        return obj
    if isinstance(obj, ScriptFunction):
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"Type '{type(obj)}' cannot be compiled since it is not a callable")


def _as_args(example_inputs):
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def trace(
    func,
    example_inputs=None,
    optimize=None,
    check_trace=True,
    check_inputs=None,
    check_tolerance=1e-5,
    strict=True,
    _force_outplace=False,
    _module_class=None,
    _compilation_unit=None,
    example_kwarg_inputs=None,
    _store_inputs=True,
):
    """torch.jit.trace: runs `func` once on the example inputs and returns it scripted."""
    _deprecated("trace")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs and example_inputs cannot both be None")
    if example_kwarg_inputs is not None:
        func(**example_kwarg_inputs)
    else:
        func(*_as_args(example_inputs))
    return _script(func)


def trace_module(mod, inputs, **kwargs):
    """torch.jit.trace_module: runs each named method on its inputs; returns mod scripted."""
    for method, example in inputs.items():
        getattr(mod, method)(*_as_args(example))
    return _script(mod)


def ignore(drop=False, **kwargs):
    """TorchScript leaves the function to Python: here every function runs in Python.
    Usable bare (`@ignore`) and with options (`@ignore(drop=True)`)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """TorchScript does not compile the function: here it is simply kept."""
    return fn


def export(fn):
    """TorchScript compiles the method too: here every method is there already."""
    return fn


def interface(obj):
    return obj


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type=None):  # noqa: N802 - torch's name
    return value


def script_if_tracing(fn):
    """TorchScript compiles `fn` when tracing: here it is the function itself."""
    return fn


def script_method(fn):
    return fn


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """TorchScript's optimizer switch: nothing to switch in eager mode."""
    yield


@contextlib.contextmanager
def fuser(name):
    """TorchScript's choice of fuser: nothing is fused in eager mode."""
    yield


def set_fusion_strategy(strategy):
    return list(strategy)


def enable_onednn_fusion(enabled: bool):
    """Accepted: there is no oneDNN graph fusion to enable."""


def onednn_fusion_enabled() -> bool:
    return False


def is_scripting() -> bool:
    """False: code never runs as TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: tracing runs the Python code itself, as eager mode."""
    return False


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self) -> bool:
        return True


def fork(func, *args, **kwargs):
    """torch.jit.fork: runs `func` now; `wait` gives its result."""
    return _Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """torch.jit.freeze: the module itself (it must be in eval mode, as torch asks)."""
    _deprecated("freeze", "Please use `torch.compile` instead.")
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            "Freezing expects a ScriptModule as input. Please use torch.jit.script or "
            "torch.jit.trace to script your 'nn.Module'."
        )
    if mod.training:
        raise RuntimeError(
            "Freezing is currently only implemented for modules in eval mode. Please call "
            ".eval() on your module before freezing."
        )
    return mod


def optimize_for_inference(mod, other_methods=None):
    if mod.training:
        mod = mod.eval()
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(
            "optimize_for_inference expects a ScriptModule as input. Please use "
            "torch.jit.script or torch.jit.trace to script your 'nn.Module'."
        )
    return mod


class CompilationUnit:
    def __init__(self, lang=None, _frames_up=0):
        _no_torchscript("CompilationUnit (TorchScript source compiled from a string)")


def save(m, f, _extra_files=None):
    """Write a scripted module so that `load` gives an equivalent one (see the module doc)."""
    from .serialization import save as save_object

    _deprecated("save", "Please switch to `torch.export`.")
    if not isinstance(m, ScriptModule):
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save'")
    try:
        save_object(m, f)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise JitUnsupportedError(
            f"torch.jit.save: the module is saved by pickling it, and it cannot be pickled "
            f"({error}); define its class at the top level of a module, or save its "
            "state_dict instead"
        ) from error


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Read a module `save` wrote, as a ScriptModule (it unpickles: trusted files only)."""
    from .serialization import load as load_object

    _deprecated("load", "Please switch to `torch.export`.")
    loaded = load_object(f, map_location=map_location, weights_only=False)
    if not isinstance(loaded, Module):
        raise RuntimeError("torch.jit.load: the file does not hold a scripted module")
    return _script_module(loaded)
