"""Every error a user can cause derives from `SourcegradError`.

Errors about the user's source carry a `SourceLocation` and print it the way a
traceback would: file, line, and the text of that line, so the message points at
the construct the user wrote rather than at sourcegrad's internals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SourceLocation:
    """Where a construct stands in the user's source (1-based line, 0-based column)."""

    file: str
    line: int
    col: int = 0
    text: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class SourcegradError(Exception):
    """Base class of every error sourcegrad raises on purpose. `called_from`: where an
    error raised inside an inlined function was called, the innermost call first (the
    lines that led to `loc`; `sourcegrad.compile` maps them back to the user's forward)."""

    called_from: tuple[SourceLocation, ...] = ()

    def __init__(self, message: str, loc: SourceLocation | None = None):
        self.message = message
        self.loc = loc
        super().__init__(self._format())

    def _format(self) -> str:
        if self.loc is None:
            return self.message
        text = f"\n    {self.loc.text.strip()}" if self.loc.text.strip() else ""
        return f"{self.loc}: {self.message}{text}"


class UnsupportedSyntaxError(SourcegradError):
    """A Python construct the compiler does not differentiate (yet)."""


class RecursionDepthError(UnsupportedSyntaxError):
    """Calls nest too deep to inline: recursion whose depth the data decides."""


class OutsideChangeError(UnsupportedSyntaxError):
    """A traced function changes an object that outlives the call (an attribute, a global,
    a list, dict or set it reaches): the code made from one run would not change it again.
    (Not raised for an argument stored into an attribute not read first, `net.params =
    params`: each call of the code stores it again, `compiler/trace/stored_arguments.py`.)"""


class SourceNotFoundError(SourcegradError):
    """The function has no retrievable Python source (exec, REPL, builtin)."""


class NoRuleError(SourcegradError):
    """A call to a function that has neither a derivative rule nor Python source."""


class WritingCallError(NoRuleError):
    """numpy's call writing into an array that a gradient reaches (`np.copyto(a, v)`,
    `np.fill_diagonal(a, v)`): the source front end has no rule for it, so the function is
    traced, where the call is a store (`compiler/trace/stores.py`)."""


class NameResolutionError(SourcegradError):
    """A name in the function body that is neither local, global, closure nor builtin."""


class NonScalarOutputError(SourcegradError):
    """`grad` of a function whose output is not a scalar (nor an array of one element)."""


class NonDifferentiableInputError(SourcegradError):
    """A `wrt` argument that is not a floating-point value."""


class CallArgumentsError(SourcegradError, TypeError):
    """A transformation called with arguments that do not fit it (`hvp(f)(x, v)` for an f
    of two arguments): also Python's TypeError, which a wrong call of f itself raises."""


class ComplexValueError(NoRuleError):
    """A complex value inside compiled code: not differentiated yet, so refused (a real
    function of complex intermediates would otherwise get a wrong gradient)."""


class TraceEscapeError(NoRuleError):
    """A traced value left for plain Python or numpy (`float()`, `np.asarray`, `.item()`,
    `math.*`, a write into a plain array, a C extension) where its gradient (or its value,
    which the compiled code must compute) would be lost."""


class FrontEndMismatchError(SourcegradError, AssertionError):
    """The cross-check (`grad(f, check=True)`, `SOURCEGRAD_CHECK=1`): the gradient made from
    the source and the one made from a trace of the same call differ."""


class AliasedArgumentsError(SourcegradError):
    """Arguments that share memory passed to a function that changes one of them in place
    (`f(W, W)` where f does `a *= 2`): Python would change both; the compiler takes each
    argument for an array of its own."""


class WrtError(SourcegradError):
    """A `wrt` that names no argument or is out of range."""


class MemoryBudgetError(SourcegradError):
    """A `memory=` budget smaller than the least a loop's checkpointing can keep (one
    snapshot and one trip's values): refused, with the smallest budget that works, rather
    than exceeded while every trip runs again from the loop's start."""

    def __init__(self, message: str, loc: SourceLocation | None = None, smallest: int = 0):
        self.smallest = smallest  # the smallest budget, in bytes, that works
        super().__init__(message, loc)


class ShapeError(SourcegradError):
    """Shapes that cannot work together, found while specialising a gradient."""


class NumpyError(SourcegradError):
    """numpy rejects an operation of the user's source for these shapes or indices: the
    error numpy raises, located. Each subclass is also numpy's exception type, so
    `except ValueError` catches a shape mismatch here as it would without sourcegrad."""


class NumpyValueError(NumpyError, ValueError):
    """numpy's ValueError (shapes that do not broadcast or multiply, a bad reshape), located."""


class NumpyIndexError(NumpyError, IndexError):
    """numpy's IndexError (an index out of bounds), located."""


class NumpyAttributeError(NumpyError, AttributeError):
    """The AttributeError the line raises for these types (`x.ndim` of a Python float), located."""


class NumpyTypeError(NumpyError, TypeError):
    """The TypeError the line raises for these types (`len` of a float), located."""


class NumpyAxisError(NumpyError, np.exceptions.AxisError):
    """numpy's AxisError (an axis out of range; both a ValueError and an IndexError), located."""

    def __str__(self) -> str:  # (AxisError formats its own arguments)
        return self._format()


class SourcegradWarning(UserWarning):
    """Base class of the warnings sourcegrad gives: something ran, but not as asked."""


class JitFallbackWarning(SourcegradWarning):
    """numba could not compile a gradient (or is not installed): the numpy code runs
    instead (`sourcegrad.compiler.backends.numba_backend`)."""


def locate(error: SourcegradError, loc: SourceLocation | None) -> SourcegradError:
    """`error` located at `loc` if it was not located yet (a rule template's refusal does not
    know the statement it differentiates): returned for `raise locate(e, loc)`."""
    if error.loc is None and loc is not None:
        error.loc = loc
        error.args = (error._format(),)
    return error


def numpy_error(exc: Exception, loc: SourceLocation | None) -> NumpyError:
    """The located error for numpy's own `exc` (an IndexError or a ValueError), or for the
    AttributeError or TypeError an operation raises for its operands' types."""
    if isinstance(exc, (AttributeError, TypeError)):
        cls: type[NumpyError] = (
            NumpyAttributeError if isinstance(exc, AttributeError) else NumpyTypeError
        )
        return cls(f"the line raises {type(exc).__name__} for these types: {exc}", loc)
    cls = (
        NumpyAxisError
        if isinstance(exc, np.exceptions.AxisError)
        else NumpyIndexError
        if isinstance(exc, IndexError)
        else NumpyValueError
    )
    return cls(f"numpy raises {type(exc).__name__}: {exc}", loc)


class ForwardADError(SourcegradError, NotImplementedError):
    """Forward-mode AD (or a `sourcegrad.func` transform) reached something it cannot serve:
    an op with neither a JVP nor a VJP to derive one from, a custom Function without `jvp`.
    Refused by name rather than given a tangent that would be wrong."""


# What code differentiating a function that takes a derivative other than grad(f)(x) is told
# (both front ends refuse it at the user's line)
TRANSFORM_INSIDE = (
    "a derivative other than sourcegrad.grad(f)(x) (hessian, jvp, vjp, jacobian, hvp, "
    "value_and_grad) is taken inside differentiated code: only grad(f)(x) is differentiated "
    "there (its derivative a Hessian-vector product); take the others outside the "
    "differentiated function"
)


class UnsupportedAPIError(SourcegradError, NotImplementedError):
    """A torch API that sourcegrad's eager mode offers by name (so that a script imports) but
    cannot serve: a TorchScript graph, sparse or masked tensors, ONNX export, a hub download.
    Refused by name rather than answered with a stand-in that would give wrong data."""
