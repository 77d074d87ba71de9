"""The exact texts of torch's autograd errors and warnings, in one place.

Code written for torch sometimes matches on these messages, and the tests compare
them with torch's, so they are copied verbatim (typos and missing spaces included).

Imports: nothing of sourcegrad (a leaf of the eager package).
"""

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
SCALAR_ONLY = "grad can be implicitly created only for scalar outputs"
REAL_SCALAR_ONLY = "grad can be implicitly created only for real scalar outputs"
NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"
MODIFIED_INPLACE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [{type} {shape}]{output} is at version {version}; expected version "
    "{expected} instead. Hint: {hint}"
)
HINT = (
    "enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
ANOMALY_HINT = (
    "the backtrace further above shows the operation that failed to compute its "
    "gradient. The variable in question was changed in there or anywhere later. "
    "Good luck!"
)
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
# an in-place op on (or through) a view torch forbids to modify (handle_view_on_rebase)
VIEW_MODIFIED = "Output {nr} of {name} is a view and {modified} modified inplace."
VIEW_OF_NO_GRAD_VIEW_MODIFIED = (
    "Output {nr} of {name} is a view of a view which was created in "
    "no_grad mode and {modified} modified inplace with grad mode "
    "enabled."
)
NO_GRAD_VIEW_MODIFIED = (
    "A view was created in no_grad mode and {modified} modified inplace with grad mode enabled."
)
DIRECTLY = "is being"
INDIRECTLY = "its base or another view of its base has been"
MULTI_OUTPUT_VIEW_TAIL = (
    " This view is the output of a function that returns multiple views. "
    "Such functions do not allow the output views to be modified inplace. "
    "You should replace the inplace operation by an out-of-place one."
)
NO_GRAD_VIEW_TAIL = (
    " Given that this use case is ambiguous and error-prone, it is forbidden. You "
    "can clarify your code by moving both the view and the inplace either both "
    "inside the no_grad block (if you don't want the inplace to be tracked) or "
    "both outside (if you want the inplace to be tracked)."
)
INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor "
    "refers to a single memory location. Please clone() the tensor before "
    "performing the operation."
)
PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor "
    "refer to a single memory location. Please clone() the tensor before performing the "
    "operation."
)
LEAF_DIRTY = "a leaf Variable that requires grad has been used in an in-place operation."
FLOAT_ONLY_FACTORY = "Only Tensors of floating point and complex dtype can require gradients"
FLOAT_ONLY_METHOD = "only Tensors of floating point dtype can require gradients"
FLOAT_ONLY_SETTER = "only Tensors of floating point and complex dtype can require gradients"
NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)
RETAIN_GRAD_NO_GRAD = "can't retain_grad on Tensor that has requires_grad=False"
HOOK_NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"
POST_HOOK_NON_LEAF = "post accumulate grad hooks cannot be registered on non-leaf tensors"
POST_HOOK_RETURNED = "Tensor post accumulate grad hooks should return None."
HOOK_CHANGED_SIZE = "hook '{}' has changed the size of value"
NUMPY_REQUIRES_GRAD = (
    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
)
FLOAT_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to "
    "unexpected behavior.\nConsider using tensor.detach() first."
)
DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
    "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
    "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution."
)
COPY_CONSTRUCT = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
    "or sourceTensor.detach().clone().requires_grad_(True), rather than "
    "torch.tensor(sourceTensor)."
)
INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
INFERENCE_REQUIRES_GRAD = (
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
)
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)
CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using "
    "autograd.grad when creating the graph to avoid this. If you have to use this function, "
    "make sure to reset the .grad fields of your parameters to None after use to break the "
    "cycle and avoid the leak."
)
ONCE_DIFFERENTIABLE = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)
UNUSED_INPUT = (
    "The differentiated Tensor at index {} appears to not have been used in the "
    "graph. Set allow_unused=True if this is the desired behavior."
)
INPUT_NO_GRAD = "One of the differentiated Tensors does not require grad"
FUNCTION_NO_BACKWARD = (
    "You must implement either the backward or vjp method for your custom "
    "autograd.Function to use it with backward mode AD."
)
LEGACY_FUNCTION = (
    "Legacy autograd function with non-static forward method is deprecated. Please use "
    "new-style autograd function with static forward method. (Example: "
    "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)


def shape_text(shape) -> str:
    """`[2, 1]`, as torch lists a shape in messages."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


def size_text(shape) -> str:
    """`torch.Size([2])`."""
    return f"torch.Size({shape_text(shape)})"
