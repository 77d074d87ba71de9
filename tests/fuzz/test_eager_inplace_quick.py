"""The eager in-place/view fuzzer against torch (see eager_inplace.py).

The quick slice (QUICK_N programs) runs by default; the long one (`pytest -m fuzz`,
SOURCEGRAD_EAGER_FUZZ_N programs, 10000 by default) prints its counts. Every program
must match torch: the same values, leaf gradients, versions and grad_fn names, or the
same error at the same statement. Skipped when torch is absent.
"""

import os

import pytest

torch = pytest.importorskip("torch")

from .eager_inplace import report, run_many  # noqa: E402

QUICK_N = 200


def _check(seeds):
    counts, bad = run_many(seeds, torch)
    shown = "\n\n".join(report(p, d) for p, d in bad[:3])
    assert not bad, f"{counts}\nthe first mismatches:\n{shown}"
    return counts


def test_quick_slice_matches_torch():
    counts = _check([f"quick-{i}" for i in range(QUICK_N)])
    # the generator must exercise both outcomes, not only errors
    assert counts["match"] > QUICK_N // 3 and counts["error-match"] > QUICK_N // 10, counts


@pytest.mark.fuzz
def test_long_slice_matches_torch():
    n = int(os.environ.get("SOURCEGRAD_EAGER_FUZZ_N", "10000"))
    counts = _check([f"long-{i}" for i in range(n)])
    print(f"\neager in-place fuzz: {counts}")
