"""The registry's rules (sourcegrad/ops/) through the compiler: each function's gradient, JVP and Hessian-vector product against central finite differences."""
