"""Each program in this package, compiled with sourcegrad.grad and checked against central
finite differences in float64 over every leaf of the gradient.

A program that stops today with a SourcegradError is listed in STOPS with the first line of
its error: it is an expected failure (not strict) until the feature it needs lands, when it
turns into a pass. A program whose compiled gradient disagrees with finite differences is
listed with a reason starting "WRONG GRADIENT:" and reported; it is never hidden as a stop.
"""

import dataclasses
import importlib
import pkgutil

import numpy as np
import pytest

import sourcegrad
import tests.programs as programs_package
from sourcegrad.errors import SourcegradError

PROGRAMS = sorted(
    m.name
    for m in pkgutil.iter_modules(programs_package.__path__)
    if not m.name.startswith("test_")
)

# Programs that stop today, with the first line of their error (file paths shortened),
# grouped by what stops them. An entry's xfail only accepts the exception it names: a
# SourcegradError for a stop, AssertionError for a "WRONG GRADIENT:" entry, so a stop that
# turns into a wrong gradient, or a wrong gradient that turns into a crash, fails the test.
STOPS: dict = {
    # (generators, a dict of options read from a global, grad(grad(f)) inside differentiated
    # code: stopped the source front end, traced since the trace front end)
    # (autograd's ode_net spelling: a list of (W, b) tuples as one item of odeint's args;
    # it raised numpy's ValueError from inside the adjoint rule before it was refused)
    "neural_ode_params_tree": "NonDifferentiableInputError: scipy.integrate.odeint's args "
    "holds a parameter tree (a list, tuple or dict of arrays)",
}

RTOL = 1e-5
ATOL = 1e-7
EPS = 1e-6


def flatten(tree):
    """The array and float leaves of a tree of lists, tuples, NamedTuples, dicts and
    dataclasses, in a fixed order, and a function building a tree of the same structure from
    a list of new leaves."""
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        names = [field.name for field in dataclasses.fields(tree)]
        leaves, rebuild_fields = flatten({name: getattr(tree, name) for name in names})
        return leaves, lambda new: dataclasses.replace(tree, **rebuild_fields(new))
    if isinstance(tree, dict):
        keys = sorted(tree, key=repr)  # a gradient may list its keys in another order
        parts = [flatten(tree[k]) for k in keys]

        def rebuild(leaves):
            out, start = {}, 0
            for k, (sub, sub_rebuild) in zip(keys, parts):
                out[k] = sub_rebuild(leaves[start : start + len(sub)])
                start += len(sub)
            return out
    elif isinstance(tree, (list, tuple)):
        parts = [flatten(item) for item in tree]

        def rebuild(leaves):
            out, start = [], 0
            for sub, sub_rebuild in parts:
                out.append(sub_rebuild(leaves[start : start + len(sub)]))
                start += len(sub)
            if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a NamedTuple
                return type(tree)(*out)
            return type(tree)(out)
    else:
        return [tree], lambda leaves: leaves[0]
    return [leaf for sub, _ in parts for leaf in sub], rebuild


def structure(tree):
    """The shape of a tree without its leaves: container types, keys and field names."""
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return type(tree), tuple(
            (f.name, structure(getattr(tree, f.name))) for f in dataclasses.fields(tree)
        )
    if isinstance(tree, dict):
        return dict, tuple((k, structure(tree[k])) for k in sorted(tree, key=repr))
    if isinstance(tree, (list, tuple)):
        return type(tree), tuple(structure(item) for item in tree)
    return "leaf"


def numeric_gradient(call, tree):
    """Central differences of the scalar call(tree) with respect to every element of every
    leaf of tree; returned as a list of arrays, one for each leaf."""
    leaves, rebuild = flatten(tree)
    grads = []
    for index, leaf in enumerate(leaves):
        base = np.array(leaf, dtype=np.float64)
        g = np.zeros_like(base)
        for pos in np.ndindex(base.shape):
            values = []
            for step in (EPS, -EPS):
                moved = base.copy()
                moved[pos] += step
                new_leaves = list(leaves)
                new_leaves[index] = moved if np.ndim(leaf) else float(moved)
                values.append(call(rebuild(new_leaves)))
            g[pos] = (values[0] - values[1]) / (2 * EPS)
        grads.append(g)
    return grads


def load(name):
    return importlib.import_module(f"tests.programs.{name}")


def params_for(name):
    reason = STOPS.get(name)
    if reason is None:
        return name
    if reason.startswith("WRONG GRADIENT:"):
        raises = AssertionError
    elif reason.startswith("TypeError:"):  # an API argument that does not exist yet
        raises = (TypeError, SourcegradError)
    else:
        raises = SourcegradError
    return pytest.param(name, marks=pytest.mark.xfail(strict=False, reason=reason, raises=raises))


@pytest.mark.parametrize("name", [params_for(n) for n in PROGRAMS])
def test_program_gradient_matches_finite_differences(name):
    try:
        check_program(name)
    except Exception as error:
        if name not in STOPS:
            raise
        # An expected stop: drop the traceback through the compiler, which pytest would
        # otherwise render (parsing every source file on it) for each expected failure.
        raise error.with_traceback(None) from None


def check_program(name):
    try:
        program = load(name)
    except ModuleNotFoundError as error:  # an optional library the program is written for
        if error.name is None or error.name.split(".")[0] in ("sourcegrad", "numpy"):
            raise
        pytest.skip(f"{name} needs {error.name}, which is not installed")
    reset = getattr(program, "RESET", lambda: None)
    wrt = getattr(program, "WRT", 0)
    has_aux = getattr(program, "HAS_AUX", False)
    args = program.make_args()

    # A program may name its arguments the way its authors' library does (argnum=, argnums=).
    grad_kwargs = getattr(program, "GRAD_KWARGS", None)
    if grad_kwargs is None:
        grad_kwargs = {"wrt": wrt}

    reset()
    if has_aux:
        compiled, aux = sourcegrad.grad(program.objective, has_aux=True, **grad_kwargs)(*args)
        reset()
        _, expected_aux = program.objective(*args)
        for got_leaf, want_leaf in zip(flatten(aux)[0], flatten(expected_aux)[0], strict=True):
            np.testing.assert_allclose(got_leaf, want_leaf, err_msg="the auxiliary output")
    else:
        compiled = sourcegrad.grad(program.objective, **grad_kwargs)(*args)

    def call_with(position):
        def call(value):
            moved = list(args)
            moved[position] = value
            reset()
            value = program.objective(*moved)
            return float(value[0] if has_aux else value)

        return call

    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    compiled_parts = compiled if isinstance(wrt, tuple) else (compiled,)
    assert len(compiled_parts) == len(positions)
    for position, part in zip(positions, compiled_parts):
        expected = numeric_gradient(call_with(position), args[position])
        assert any(np.any(np.abs(e) > 1e-6) for e in expected), (
            f"argument {position}: the gradient is zero everywhere, the check proves nothing"
        )
        assert structure(part) == structure(args[position]), (
            f"argument {position}: the gradient's structure differs from the argument's"
        )
        got, _ = flatten(part)
        for leaf, (g, e) in enumerate(zip(got, expected)):
            g = np.asarray(g, dtype=np.float64)
            assert g.shape == e.shape, f"argument {position}, leaf {leaf}: shape {g.shape}"
            np.testing.assert_allclose(
                g,
                e,
                rtol=RTOL,
                atol=ATOL * max(1.0, np.abs(e).max()),
                err_msg=f"argument {position}, leaf {leaf}",
            )


def test_suite_is_large_enough():
    assert len(PROGRAMS) >= 30


def test_harness_differences_every_leaf_of_a_tree():
    # The helpers above on a tree of every container kind, against the exact gradient of
    # sum(leaf ** 2), which is 2 * leaf at every leaf.
    from typing import NamedTuple

    class Pair(NamedTuple):
        a: np.ndarray
        b: float

    @dataclasses.dataclass
    class Box:
        w: np.ndarray

    tree = {
        "layers": [(np.array([1.0, -2.0]), 0.5)],
        "pair": Pair(np.array([[3.0]]), -1.5),
        "box": Box(np.array([0.25, 4.0, -1.0])),
    }
    leaves, rebuild = flatten(tree)
    assert structure(rebuild(leaves)) == structure(tree)
    numeric = numeric_gradient(
        lambda t: sum(float(np.sum(np.square(x))) for x in flatten(t)[0]), tree
    )
    assert len(numeric) == len(leaves) == 5
    for leaf, g in zip(leaves, numeric):
        np.testing.assert_allclose(g, 2 * np.asarray(leaf), rtol=1e-8)


WITH_BACKWARD = [name for name in PROGRAMS if hasattr(load(name), "hand_written")]


@pytest.mark.parametrize("name", WITH_BACKWARD)
def test_program_gradient_matches_its_authors_backward(name):
    """Programs written with their own backward pass (class-based layers with backward
    methods, backpropagation through time by hand): the compiled gradient is the author's."""
    program = load(name)
    args = program.make_args()
    compiled = sourcegrad.grad(program.objective)(*args)
    by_hand = program.hand_written(*args)
    assert structure(compiled) == structure(by_hand)
    for got, want in zip(flatten(compiled)[0], flatten(by_hand)[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_programs_with_their_own_backward_are_checked():
    assert len(WITH_BACKWARD) >= 3
