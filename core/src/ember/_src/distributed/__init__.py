"""Multi-process jobs: ``ember.distributed`` and ``ember.experimental.multihost_utils``."""
