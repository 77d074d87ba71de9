"""`sourcegrad.compile`'s machinery: an nn.Module, a Tensor-method function or a numpy
function compiled into generated numpy code that runs as one eager node.

* `module.py`: `compile` itself; rewrites a module's forward into a numpy function the
  compiler differentiates, guards the rewrite and wraps it as one eager node;
* `layers.py`: the source text of the calls that compute the nn layers it knows
  (`self.fc1(x)` -> `_lowering.linear(x, fc1_weight, fc1_bias)`), and the unrolled
  forward of nn.RNN, nn.LSTM and nn.GRU;
* `lowering.py`: torch's functions, Tensor methods and layers as numpy functions, the
  ones the rewritten code calls;
* `region.py`: the eager node of a compiled numpy function (`CompiledRegion`).

Named `compiled`, not `compile`: `sourcegrad.compile` is the function.
"""
