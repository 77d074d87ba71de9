"""The eager guide's table of the torch API covered (docs/guide/eager.md) is the one the package's exports give
(`tests/api_table.py`), so it cannot go stale: regenerate it with `python -m tests.api_table`."""

import pytest

from tests import api_table


def test_readme_table_is_up_to_date():
    torch = pytest.importorskip("torch")
    assert api_table.readme_table() == api_table.table(torch), (
        "docs/guide/eager.md's torch API table is out of date: run `python -m tests.api_table`"
    )


def test_every_area_is_in_the_table():
    rows = api_table.readme_table().splitlines()[2:]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == [
        area for area, *_ in api_table.areas(None)
    ]
