"""ember's TPU plugin: the ``tpu`` platform through libtpu, and compile-only TPU topologies.
The hooks live in ``ember_plugin_tpu.plugin`` (the ``ember_plugins`` entry point)."""

__version__ = "0.1.0"
