"""Experimental APIs (as ``jax.experimental``): ``ember.experimental.multihost_utils``."""
