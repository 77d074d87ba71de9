"""THE op registry: one record (`registry.Rule`) per operation, shared by compiler and eager.

An operation's entry, in the file of its family, holds all of it: the numpy function(s)
and spelling, VJPs and JVPs (or a linearity mark), the properties the compiler's passes
ask (`has(name, "view")`, `get(name).method`, ...) and its torch names, from which the
eager surface is generated. Adding an operation to both modes is one entry here, its example
inputs in its family's `EXAMPLES` table (`examples.py`; tests/test_registry_grid.py makes the
test grid from them) and, for an eager op with torch names, one test row.

* `registry.py`: the record, the define functions (`defvjp`, `defjvp`, `deflinear`,
  `alias`, `mark`), the queries (`get`, `has`, `rule_for_function`, `op_for_method`),
  the VJP templates and what their names stand for (`template_name`);
* `reads.py`: the one analysis of which inputs a rule reads, for both modes;
* `examples.py`: the description of example inputs (`ex`, `arg`) the family tables use;
* `expand.py`: a family's rule written once and written out per member (`expand`: the
  scipy.stats distributions' rules from their scores);
* `elementwise.py`, `reductions.py`, `linalg.py`, `shape.py`, `nn.py`: the entries by
  family; `nn_layers.py` (convolution, pools, batch norm, padding; their array kernels in
  `nn_kernels.py`) and `nn_losses.py` (torch.nn's single-node losses, cross, cdist);
  `program.py`: the ops of the program itself (reads without gradient, builtins,
  lists and mutation as values, the helpers generated backward code calls).

Imports run one way: runtime <- ops <- {compiler modules, eager} <- api <- cli. This
package imports numpy, gast and `sourcegrad.runtime` only.
"""

from .reads import (  # noqa: I001
    META,
    NONE,
    SHAPE,
    VALUE,
    read_level,
    reads,
    reads_operand_named,
    reads_shape_of,
    reads_value_of,
)
from .registry import (
    COMPARISONS,
    OPERATORS,
    PROPERTIES,
    RULES,
    Rule,
    Spelling,
    Torch,
    alias,
    array_methods,
    data_shaped,
    defjvp,
    deflinear,
    defnondiff,
    defprimitive,
    defvjp,
    get,
    has,
    mark,
    op_for_method,
    rule_for_function,
    spelled,
    template_globals,
    template_name,
    torch,
    vjp_template,
)

# the families, in the order their entries build on each other (aliases after their base)
from . import elementwise, reductions, linalg, shape, program, nn, numpy_linalg, numpy_functions  # noqa: E402,F401,E501
from . import nn_kernels, nn_layers, nn_losses  # noqa: E402,F401 - the spatial layers, torch.nn's losses
from . import fft, complex_values  # noqa: E402,F401
from .program import jvp_at_run_time, runs_forward_only, vjp_at_run_time  # noqa: E402

__all__ = [
    "COMPARISONS",
    "META",
    "NONE",
    "OPERATORS",
    "PROPERTIES",
    "RULES",
    "SHAPE",
    "VALUE",
    "Rule",
    "Spelling",
    "Torch",
    "alias",
    "data_shaped",
    "array_methods",
    "defjvp",
    "deflinear",
    "defnondiff",
    "defprimitive",
    "defvjp",
    "get",
    "has",
    "mark",
    "op_for_method",
    "read_level",
    "reads",
    "reads_shape_of",
    "reads_value_of",
    "reads_operand_named",
    "rule_for_function",
    "runs_forward_only",
    "spelled",
    "template_globals",
    "template_name",
    "torch",
    "vjp_template",
    "jvp_at_run_time",
    "vjp_at_run_time",
]
