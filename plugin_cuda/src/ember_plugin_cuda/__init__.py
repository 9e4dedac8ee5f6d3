"""ember-plugin-cuda: NVIDIA GPUs for ember, through XLA's CUDA PJRT plugin.

ember finds the plugin through its ``ember_plugins`` entry point (``ember_plugin_cuda.plugin``);
nothing here needs importing by users. ``pip install 'ember-plugin-cuda[cuda12]'`` brings the
PJRT library and NVIDIA's CUDA wheels.
"""
