"""torch.linalg.eigvalsh(A, UPLO="U") against torch where A's triangles differ: the rule
took the eigenvectors of the lower triangle, so the gradient was that of another matrix's
eigenvalues (found by the outsider probes; the compiler's np.linalg.eigvalsh shares the rule:
tests/compiler/frontend/test_outsider_probes.py)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

A = np.array([[2.0, 0.3, -0.4], [0.9, 1.5, 0.2], [-1.1, 0.7, 3.0]])


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh_gradient_reads_the_triangle_asked_for(uplo):
    grads = []
    for lib in (torch, sg):
        a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
        w = lib.linalg.eigvalsh(a, UPLO=uplo)
        (w * lib.arange(1.0, 4.0, dtype=lib.float64)).sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-12)
