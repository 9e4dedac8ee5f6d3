"""Experimental APIs (as ``jax.experimental``): ``ember.experimental.multihost_utils``,
``shard``, ``io_callback``, ``topologies`` (compiling for TPU slices this machine lacks)."""

from ember._src.callback import io_callback as io_callback
