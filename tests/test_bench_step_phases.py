"""bench/step_phases.py: a compiled training step split into phases against torch's, and the
generated code's own time inside the compiled forward and backward. No timing is asserted:
what holds whatever the machine's load is (the generated code runs inside its phase, the glue
is the rest of it, every phase of both variants is measured)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # (the reference: the [oracle] extra)

from sourcegrad.bench import step_phases  # noqa: E402


@pytest.mark.long  # (a quick benchmark: ~5 s, most of it compiling the MLP)
def test_the_phases_of_a_compiled_mlp_step_and_the_generated_code_inside_them():
    rows = step_phases.measure("MLP", rounds=2)
    for phase in step_phases.PHASES:
        mine, theirs = rows[phase]
        assert mine > 0 and theirs > 0, phase
    forward, generated_forward = rows["forward"][0], rows["generated forward"][0]
    backward, generated_backward = rows["backward"][0], rows["generated backward"][0]
    assert 0 < generated_forward <= forward and rows["forward glue"][0] >= 0
    assert 0 < generated_backward <= backward and rows["backward glue"][0] >= 0
    text = step_phases.markdown("MLP", rows)
    assert "| generated forward |" in text and "| optimizer step |" in text
