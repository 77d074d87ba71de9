"""The release's outside agrees with itself: pyproject's version is the changelog's latest
release; the `[oracle]` extra pins the torch the comparison tests run against; the README
is a front page (at most 250 lines) whose links lead to files that exist, and it states the
one test count the docs repeat."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)


def test_the_version_is_the_changelogs_latest_release():
    headings = re.findall(r"^## \[([^\]]+)\]", read("CHANGELOG.md"), re.M)
    assert headings[0] == "Unreleased"
    assert headings[1] == pyproject()["project"]["version"]


def test_the_oracle_extra_pins_the_torch_the_tests_run_against():
    pins = dict(
        re.fullmatch(r"([\w-]+)==([\w.]+)", spec).groups()
        for spec in pyproject()["project"]["optional-dependencies"]["oracle"]
    )
    assert set(pins) == {"torch", "autograd"}
    torch = pytest.importorskip("torch")
    assert torch.__version__.split("+")[0] == pins["torch"], (
        "the installed torch is not the one [oracle] pins: the comparison tests expect "
        f"torch {pins['torch']}'s names, messages and numbers"
    )


def test_the_readme_names_the_cpu_only_torch_install():
    pinned = next(
        spec
        for spec in pyproject()["project"]["optional-dependencies"]["oracle"]
        if spec.startswith("torch==")
    )
    command = f"pip install {pinned} --index-url https://download.pytorch.org/whl/cpu"
    assert command in read("README.md") and command in read("docs", "getting-started.md")


def test_scipy_and_ipython_are_in_an_extra():
    extras = pyproject()["project"]["optional-dependencies"]
    named = {re.split(r"[<>=\[ ]", spec)[0] for specs in extras.values() for spec in specs}
    assert {"scipy", "ipython", "build", "twine"} <= named


def test_the_readme_is_a_front_page():
    assert len(read("README.md").splitlines()) <= 250


def test_the_readmes_links_lead_to_files():
    text = read("README.md")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "no links found"
    missing = [t for t in local if not os.path.exists(os.path.join(ROOT, t))]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_one_test_count_in_the_readme_and_the_docs():
    def count(text):
        found = re.search(r"([\d,]+) tests collected", text) or re.search(
            r"that is ([\d,]+) tests", text
        )
        return found.group(1) if found else None

    readme = count(read("README.md"))
    assert readme is not None
    assert f"| {readme} |" in read("docs", "testing.md")
    assert f"{readme} tests" in read("docs", "getting-started.md")
