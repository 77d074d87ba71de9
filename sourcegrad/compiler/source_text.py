"""The source text of a function's code, as both front ends read it.

`source_lines(code, module_globals) -> (lines, first line)` is `inspect.getsourcelines` of a
code object without its search for the module (`inspect.getmodule` resolves the real path
of every loaded module's file the first time it runs in a process: ~50-100 ms of a first
gradient's compile). The lines come from `linecache`, as inspect's do (a file, a notebook
cell IPython registered, a module's loader given its globals); where linecache has none,
inspect's own search runs. Raises what inspect raises (OSError, TypeError).
"""

from __future__ import annotations

import inspect
import linecache


def source_lines(code, module_globals=None):
    """The lines of the function (or lambda) `code` runs, decorators included, and the
    number of the first."""
    lines = linecache.getlines(code.co_filename, module_globals)
    first = code.co_firstlineno
    if lines and 0 < first <= len(lines):
        return inspect.getblock(lines[first - 1 :]), first
    return inspect.getsourcelines(code)
