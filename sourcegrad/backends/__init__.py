"""`sourcegrad.backends`: torch.backends' switches, answered as torch answers on this machine.

Training scripts set these flags before they start (`backends.cuda.matmul.allow_tf32 = True`,
`backends.cudnn.benchmark = True`) or ask what is there (`backends.mps.is_available()`).
sourcegrad computes with numpy (and CuPy on a CUDA GPU), which has no TF32, cuDNN
autotuning or MPS: the flags are kept and read back with torch's defaults and torch's
links between them (`allow_tf32` and `float32_matmul_precision`), and change no result.

Submodules: `cuda` (`matmul.allow_tf32`, the scaled-dot-product-attention kernel
switches), `cudnn`, `mha` (the fused attention path's switch), `mps`, `mkl`, `mkldnn`, `openmp`, `cpu`.
"""

from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp"]
