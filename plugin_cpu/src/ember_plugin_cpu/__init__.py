"""XLA's CPU backend for ember (entry point ``cpu`` in the ``ember_plugins`` group)."""

__version__ = "0.1.0"
