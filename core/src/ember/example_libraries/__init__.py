"""Small example libraries built on ember (``import ember.example_libraries.stax``), as
``jax.example_libraries``: ``optimizers`` and ``stax``."""
