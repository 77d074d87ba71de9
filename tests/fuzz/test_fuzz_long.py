"""The long differential-fuzzing run (deselected by default; `pytest -m fuzz` runs it).

    SOURCEGRAD_FUZZ_N=10000 SOURCEGRAD_FUZZ_SEED=0 SOURCEGRAD_FUZZ_JOBS=2 \
        SOURCEGRAD_FUZZ_OUT=fuzz_failures pytest -m fuzz tests/fuzz/test_fuzz_long.py

Same check as the quick slice for N programs (default 10000), failing programs written to
SOURCEGRAD_FUZZ_OUT (default: the test's tmp_path). Also a hypothesis-driven variant,
whose seeds hypothesis draws (and shrinks, as integers) itself.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .programs import check_program, generate
from .run_fuzz import FAILING, format_summary, run, seeds_of, summarize, write_failures

pytestmark = pytest.mark.fuzz


def test_many_programs_match_finite_differences(tmp_path):
    n = int(os.environ.get("SOURCEGRAD_FUZZ_N", "10000"))
    seed = os.environ.get("SOURCEGRAD_FUZZ_SEED", "0")
    jobs = int(os.environ.get("SOURCEGRAD_FUZZ_JOBS", "1"))
    out_dir = os.environ.get("SOURCEGRAD_FUZZ_OUT", str(tmp_path / "failures"))
    outcomes = run(seeds_of(n, seed), timeout=60.0, jobs=jobs)
    summary = format_summary(summarize(outcomes))
    print("\n" + summary)
    failing = [o for o in outcomes if o.status in FAILING]
    if failing:
        write_failures(outcomes, out_dir)
        shown = "\n\n".join(o.report() for o in failing[:3])
        pytest.fail(
            f"{len(failing)} of {n} programs failed (written to {out_dir})\n"
            f"{summary}\n\nthe first ones:\n{shown}",
            pytrace=False,
        )


@settings(
    max_examples=int(os.environ.get("SOURCEGRAD_FUZZ_HYPOTHESIS", "200")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(seed=st.integers(min_value=0, max_value=2**63))
def test_hypothesis_drawn_programs(seed, tmp_path_factory):
    outcome = check_program(generate(seed), str(tmp_path_factory.mktemp("hyp")), timeout=60)
    assert outcome.status not in FAILING, outcome.report()
