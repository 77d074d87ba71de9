"""The public compiled API is typed: every public function and method of `sourcegrad`'s
compiled surface (`sourcegrad.api`'s names in `sourcegrad.__all__`, `sourcegrad.viz`) has an
annotation for each parameter and for its result, and the annotations resolve. mypy (run by
CI as pyproject.toml configures it) checks the bodies of these functions against them; this
test keeps a new public name from arriving without them."""

from __future__ import annotations

import inspect
import typing

import pytest

import sourcegrad
from sourcegrad import api, viz

_CLASS_METHODS = ("__init__", "__call__", "compile", "backend_for", "ir")
_PROPERTIES = ("source", "saved")


def _public_callables():
    for name in sourcegrad.__all__:
        obj = getattr(sourcegrad, name)
        if not getattr(obj, "__module__", "").startswith(api.__name__ + "."):
            continue  # the errors (typed: strict mypy) and the eager surface
        if inspect.isclass(obj):
            # (a method may come from a mixin of the api package: Gradient's compiling step)
            own = {}
            for cls in reversed(obj.__mro__):
                if cls.__module__.startswith(api.__name__ + "."):
                    own.update(vars(cls))
            for method in _CLASS_METHODS:
                if method in own:
                    yield f"{name}.{method}", own[method]
            for prop in _PROPERTIES:
                if isinstance(own.get(prop), property):
                    yield f"{name}.{prop}", own[prop].fget
        else:
            yield name, obj
    for name in ("eager_dot", "compiled_dot", "saved_tensors", "render"):
        yield f"viz.{name}", getattr(viz, name)


PUBLIC = dict(_public_callables())


def test_the_public_compiled_api_is_found():
    assert {
        "grad",
        "value_and_grad",
        "jvp",
        "vjp",
        "jacobian",
        "hessian",
        "show",
        "check_grad",
        "Gradient.__init__",
        "Gradient.compile",
        "Gradient.ir",
        "Gradient.source",
        "viz.compiled_dot",
    } <= set(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_parameter_and_result_is_annotated(name):
    fn = inspect.unwrap(PUBLIC[name])
    hints = typing.get_type_hints(fn)  # (raises if an annotation does not resolve)
    params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
    missing = [p.name for p in params if p.name not in hints]
    assert not missing, f"{name}: parameters without a type: {missing}"
    assert "return" in hints, f"{name}: no return type"
