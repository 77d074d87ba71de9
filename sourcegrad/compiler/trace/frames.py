"""Whose code a frame runs: the user's, or sourcegrad's, numpy's or another library's.

The recorder names the user's line for each op it records (`is_user`), and the patches make
a buffer the generated code owns only for `np.zeros` called by the user's code (numpy's own
Python functions call it too, and must get an array). Takes code objects and file names;
returns yes or no.
"""

from __future__ import annotations

import os
import sysconfig

import numpy as np

_HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
_OURS = (_HERE, _NUMPY, "<__array", "<frozen")  # sourcegrad, numpy, their shims
_PYTHONS = sysconfig.get_paths()["stdlib"] + os.sep  # Python's own library
# the benchmark's programs in published styles stand for the user's code (sourcegrad.bench)
_USERS_IN_OURS = (os.path.join(_HERE, "bench", "layers.py"),)


def is_user(code) -> bool:
    """Is `code` the user's (not sourcegrad's, numpy's, numpy's dispatch shims, Python's own
    library: contextlib, functools, linecache)?"""
    file = code.co_filename
    if file.startswith(_OURS):
        return file in _USERS_IN_OURS
    return not file.startswith(_PYTHONS) or "-packages" in file  # (installed code is)


def in_a_library(file) -> bool:
    """Is `file` an installed package's or Python's own (not code the user wrote)?"""
    return bool(file) and (file.startswith(_PYTHONS) or "-packages" in file)
