"""ember-plugin-rocm: AMD GPUs for ember, through XLA's ROCm PJRT plugin.

ember finds the plugin through its ``ember_plugins`` entry point (``ember_plugin_rocm.plugin``);
nothing here needs importing by users. ``pip install 'ember-plugin-rocm[rocm7]'`` brings the
PJRT library; the ROCm 7 runtime comes from AMD's ROCm install.
"""
