"""Data between the processes of a multi-process job (JAX's
``jax.experimental.multihost_utils``): see docs/multiprocess.md."""

from ember._src.distributed.multihost_utils import (
    broadcast_one_to_all as broadcast_one_to_all,
    global_array_to_host_local_array as global_array_to_host_local_array,
    host_local_array_to_global_array as host_local_array_to_global_array,
    process_allgather as process_allgather,
    sync_global_devices as sync_global_devices,
)

__all__ = [
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "host_local_array_to_global_array",
    "process_allgather",
    "sync_global_devices",
]
