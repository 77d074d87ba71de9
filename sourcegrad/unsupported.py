"""Refusals for torch namespaces that sourcegrad names but does not implement.

A script that imports `torch.onnx`, `torch.hub`, `torch.export`, `torch.sparse` or
`torch.masked` at module level (or binds one of their functions there) should import; its
first *use* of one must stop with an error naming what is missing, never run a stand-in
that returns wrong data. `refused(name)` is a function that raises UnsupportedAPIError
when called; `refusing_getattr(namespace)` is a module `__getattr__` refusing every other
public name of that namespace.
"""

from __future__ import annotations

from .errors import UnsupportedAPIError

__all__ = ["UnsupportedAttributeError", "refused", "refusing_getattr"]


class UnsupportedAttributeError(UnsupportedAPIError, AttributeError):
    """A name of a torch namespace sourcegrad does not implement (an AttributeError too, so
    `hasattr` and `getattr(ns, name, default)` keep working)."""


def _message(qualname: str) -> str:
    return f"{qualname} is not supported by sourcegrad (its eager mode has no {qualname})"


def refused(qualname: str):
    """A function standing for `qualname` that raises UnsupportedAPIError when called."""

    def refuse(*args, **kwargs):
        raise UnsupportedAPIError(_message(qualname))

    refuse.__name__ = refuse.__qualname__ = qualname.rpartition(".")[2]
    refuse.__doc__ = f"Not supported: raises UnsupportedAPIError ({qualname})."
    return refuse


def refusing_getattr(namespace: str):
    """A module `__getattr__` for `namespace` refusing every public name it is asked for."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module '{namespace}' has no attribute '{name}'")
        raise UnsupportedAttributeError(_message(f"{namespace}.{name}"))

    return __getattr__
