"""Stage 9, emit: optimized IR -> Python source.

Takes a derivative `ir.Function` (after `optimize/`) with its abstract values and a
backend's namespace, and gives the text of a Python module, which `codegen.load` runs:

- `codegen`: `generate_module` (names printed as the user wrote them, comments with the
  user's lines, dead arrays freed) and `load`; the backends' namespaces (`BACKENDS`);
- `pyprint`: the small gast trees codegen builds, printed as astor prints them (faster);
- `linebreak`: long lines broken as black breaks them.

Below it: `analysis/` (`lifetimes`: which printed names may share an array).
"""
