"""CuPy backend: generated CuPy source is checked statically against the real cupy module
(cupy-cuda12x imports without a GPU); tests that need a device skip without one."""

import ast
import os
import sys

import numpy as np
import pytest

import sourcegrad
from sourcegrad import runtime

cupy = pytest.importorskip("cupy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import logreg  # noqa: E402
import mlp  # noqa: E402
import rnn  # noqa: E402
import spring  # noqa: E402

WORKLOADS = [
    ("logreg", logreg.loss, logreg.example_args, 0),
    ("mlp", mlp.mlp_loss, mlp.example_args, (0, 1, 2, 3)),
    ("rnn", rnn.rnn_loss, rnn.example_args, (0, 1, 2)),
    ("spring", spring.final_position, lambda: (10.0, 0.5), (0, 1)),
    ("spring_fit", spring.trajectory_loss, spring.example_args, (0, 1)),
]


def has_device():
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.parametrize("name, fn, make_args, wrt", WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_generated_cupy_source_uses_only_real_cupy_functions(name, fn, make_args, wrt):
    g = sourcegrad.grad(fn, wrt=wrt, backend="cupy")
    source = g.compile(tuple(make_args())).source
    compile(source, "<cupy source>", "exec")
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.module == "sourcegrad.runtime"
            for alias in node.names:
                assert hasattr(runtime, alias.name)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "cp"
        ):
            assert hasattr(cupy, node.attr), f"cupy has no {node.attr}"
        elif isinstance(node, ast.Name):
            assert node.id not in ("np", "numpy"), "numpy used inside the CuPy computation"
    assert imported <= {"cupy", "math"}  # numbers only (the spring) need no array library


def test_elementwise_runs_become_fused_kernels():
    g = sourcegrad.grad(mlp.mlp_loss, wrt=(0, 1, 2, 3), backend="cupy")
    source = g.compile(tuple(mlp.example_args())).source
    assert "@cp.fuse()" in source
    assert "d_X_W1_plus_b1 = fused_d_X_W1_plus_b1(d_h, h)" in source
    namespace = {}
    exec(compile(source, "<cupy source>", "exec"), namespace)  # kernels are defined lazily
    assert callable(namespace["fused_d_X_W1_plus_b1"])


def test_auto_backend_picks_numpy_for_numpy_arrays():
    g = sourcegrad.grad(logreg.loss)
    g(*logreg.example_args())
    assert "import numpy as np" in g.source and "cupy" not in g.source


@pytest.mark.gpu
@pytest.mark.skipif(not has_device(), reason="no CUDA device: CuPy runs only on a GPU")
@pytest.mark.parametrize("name, fn, make_args, wrt", WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_cupy_and_numpy_gradients_agree_on_a_device(name, fn, make_args, wrt):
    args = make_args()
    on_device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    expected = sourcegrad.grad(fn, wrt=wrt)(*args)
    got = sourcegrad.grad(fn, wrt=wrt)(*on_device)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, o in zip(expected, got):
        np.testing.assert_allclose(
            cupy.asnumpy(o) if hasattr(o, "device") else o, e, rtol=1e-9, atol=1e-12
        )
