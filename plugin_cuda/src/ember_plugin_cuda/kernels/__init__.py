"""Fused kernels for the ``cuda`` platform, written with cupy and run inside ember's compiled
programs as *named kernels* (``ember.extend.call_named_kernel``): XLA's buffer callback hands
each kernel the program's own GPU buffers and its execution stream, and the kernel launches
its work on that stream, so it runs in order with the rest of the program without copies.

Importing this package imports cupy (``pip install ember-plugin-cuda[cuda12]`` brings
``cupy-cuda12x``); the plugin registers the kernels only when cupy is installed.
"""

from __future__ import annotations

from ember.extend import LoweringRegistry
from ember_plugin_cuda.kernel_names import ATTENTION, BIAS_ACTIVATION, SOFTMAX
from ember_plugin_cuda.kernels.attention import attention_kernel
from ember_plugin_cuda.kernels.bias_activation import bias_activation_kernel
from ember_plugin_cuda.kernels.softmax import softmax_kernel

# name -> kernel, as ``call_named_kernel`` finds them on ``cuda``
KERNELS = {
    SOFTMAX: softmax_kernel,
    BIAS_ACTIVATION: bias_activation_kernel,
    ATTENTION: attention_kernel,
}


def register(registry: LoweringRegistry, platform: str) -> None:
    """Register every kernel of this package as a named kernel for ``platform``."""
    for name, kernel in KERNELS.items():
        registry.register_named_kernel(name, kernel, platform=platform)
