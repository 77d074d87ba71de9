"""The installed distribution's version (pyproject.toml's `version`), read from its metadata.

A source tree imported without being installed has no metadata: it reports
"0+unknown" rather than a number that might be wrong.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("sourcegrad")
except PackageNotFoundError:  # a checkout on sys.path, never `pip install`ed
    __version__ = "0+unknown"
