"""Neural-network building blocks (``import ember.nn``), as ``jax.nn``."""

from ember._src.nn.functions import (
    celu as celu,
    dot_product_attention as dot_product_attention,
    elu as elu,
    gelu as gelu,
    glu as glu,
    hard_tanh as hard_tanh,
    leaky_relu as leaky_relu,
    log_sigmoid as log_sigmoid,
    log_softmax as log_softmax,
    logsumexp as logsumexp,
    one_hot as one_hot,
    relu as relu,
    relu6 as relu6,
    selu as selu,
    sigmoid as sigmoid,
    silu as silu,
    softmax as softmax,
    softplus as softplus,
    standardize as standardize,
    swish as swish,
)
from ember.nn import initializers as initializers
