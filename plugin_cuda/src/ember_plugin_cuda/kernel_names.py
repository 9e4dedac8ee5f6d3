"""The names under which the plugin registers its cupy kernels (``kernels/``) for ``cuda``:
what ``ember.extend.call_named_kernel`` is called with. Kept apart from the kernels so that
code without cupy (ember's own ``dot_product_attention``, the no-GPU tests) can name them."""

SOFTMAX = "cuda.softmax"
BIAS_ACTIVATION = "cuda.bias_activation"
# ember.nn.dot_product_attention(..., implementation="cuda") calls this one
ATTENTION = "cuda.dot_product_attention"
