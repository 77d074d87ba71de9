"""What the registry differentiates, counted per library: `python -m sourcegrad.bench.coverage`.

Takes nothing; loads the optional families whose library is installed (scipy.special, stats,
linalg, signal, integrate) and prints, per module (numpy, np.linalg, math, scipy.special, ...), the
functions a compiled gradient differentiates (a registry entry with a VJP, registered for the
function object user code calls: aliases such as np.radians count once each, the compiler's
own helpers not at all) and how many of them have an eager counterpart that records a node
(`np.<function>(tensor)` dispatches to a torch-named op, or `sourcegrad.linalg.<function>`).
The table of docs/guide/supported.md is this script's output.
"""

from __future__ import annotations

import importlib
import importlib.util

from ..ops import registry

_LIBRARIES = ("scipy.special", "scipy.stats", "scipy.linalg", "scipy.signal", "scipy.integrate")


def _module_of(op) -> str | None:
    spelling = op.spelling
    if spelling.kind == "func":
        return "np.linalg" if spelling.text.startswith("linalg.") else "numpy"
    if spelling.kind == "module":
        for prefix in ("math", *_LIBRARIES):
            if spelling.text.startswith(prefix + "."):
                return prefix
    return None  # operators, methods, the compiler's helpers


def _eager_names():
    """The numpy (and scipy.special) functions whose call on a Tensor, or whose torch-named
    function (`sourcegrad.special.gammaln` for scipy.special.gammaln), records a torch-named
    node."""
    from ..eager import numpy_dispatch, special

    special.load()
    made = [
        op.entry.fn
        for op in special.SPECIAL.values()
        if hasattr(op, "entry") and op.entry.torch is not None and op.entry.torch.node is not None
    ]
    return {id(f) for f in list(numpy_dispatch.UFUNCS) + list(numpy_dispatch.FUNCTIONS) + made}


def counts() -> dict:
    """{module: (functions differentiated by the compiler, of them with an eager node)}."""
    for library in _LIBRARIES:
        if importlib.util.find_spec(library.split(".")[0]) is not None:
            importlib.import_module(library)
    registry.load_optional()
    eager = _eager_names()
    out: dict = {}
    for key, name in registry._BY_FUNCTION.items():
        op = registry.RULES[name]
        module = _module_of(op)
        if module is None or not op.differentiable or not any(v is not None for v in op.vjps):
            continue
        compiled, with_eager = out.get(module, (0, 0))
        fn = op.fn
        out[module] = (compiled + 1, with_eager + (id(fn) in eager and not isinstance(key, tuple)))
    return out


def main():
    table = counts()
    print("| module | differentiable in the compiler | with an eager (torch-named) node |")
    print("|---|---|---|")
    for module in ("numpy", "np.linalg", "math", *_LIBRARIES):
        if module in table:
            compiled, eager = table[module]
            print(f"| {module} | {compiled} | {eager} |")
    total = [sum(v[i] for v in table.values()) for i in (0, 1)]
    print(f"| total | {total[0]} | {total[1]} |")


if __name__ == "__main__":
    main()
