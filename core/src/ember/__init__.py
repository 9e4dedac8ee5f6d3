"""ember: composable transformations of NumPy programs, compiled by XLA.

Backends come from independently installed plugins (``pip install ember-plugin-cpu``);
``python -m ember doctor`` shows what is installed and working.
"""

import importlib as _importlib

from ember import (
    ad_checkpoint as ad_checkpoint,
    custom_batching as custom_batching,
    debug as debug,
    dtypes as dtypes,
    errors as errors,
    lax as lax,
    numpy as numpy,
    sharding as sharding,
    tree as tree,
    tree_util as tree_util,
)
from ember._src import (
    assembly as _assembly,  # wires the lower layers' calls up (see its docstring)
    traceback_filter as _traceback_filter,  # hides internal frames of errors
)
from ember._src.callback import effects_barrier as effects_barrier, pure_callback as pure_callback
from ember._src.config import config as config
from ember._src.core import ensure_compile_time_eval as ensure_compile_time_eval
from ember._src.execution.devices import (
    block_until_ready as block_until_ready,
    default_backend as default_backend,
    device_count as device_count,
    device_get as device_get,
    device_put as device_put,
    devices as devices,
    local_device_count as local_device_count,
    local_devices as local_devices,
    make_array_from_callback as make_array_from_callback,
    make_array_from_process_local_data as make_array_from_process_local_data,
    make_array_from_single_device_arrays as make_array_from_single_device_arrays,
    make_mesh as make_mesh,
    process_count as process_count,
    process_index as process_index,
)
from ember._src.execution.float_checks import debug_infs as debug_infs, debug_nans as debug_nans
from ember._src.execution.live_arrays import live_arrays as live_arrays
from ember._src.runtime.array import Array as Array
from ember._src.runtime.backend import Device as Device
from ember._src.runtime.mesh import set_mesh as set_mesh
from ember._src.runtime.sharding import PartitionSpec as P
from ember._src.source_info import named_scope as named_scope
from ember._src.transforms.autodiff import (
    grad as grad,
    jvp as jvp,
    linearize as linearize,
    value_and_grad as value_and_grad,
    vjp as vjp,
)
from ember._src.transforms.caches import clear_caches as clear_caches
from ember._src.transforms.checkpoint import (
    checkpoint as checkpoint,
    checkpoint_policies as checkpoint_policies,
    remat as remat,
)
from ember._src.transforms.custom_derivatives import (
    custom_jvp as custom_jvp,
    custom_vjp as custom_vjp,
)
from ember._src.transforms.custom_gradient import (
    closure_convert as closure_convert,
    custom_gradient as custom_gradient,
    jacobian as jacobian,
    linear_transpose as linear_transpose,
    typeof as typeof,
)
from ember._src.transforms.jacobians import hessian as hessian, jacfwd as jacfwd, jacrev as jacrev
from ember._src.transforms.jit import disable_jit as disable_jit, jit as jit
from ember._src.transforms.pmap import pmap as pmap
from ember._src.transforms.shard_map import shard_map as shard_map
from ember._src.transforms.staging import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    eval_shape as eval_shape,
    make_jaxpr as make_jaxpr,
)
from ember._src.transforms.vmap import vmap as vmap

__version__ = "0.1.0"

_traceback_filter.install_traceback_filter()

del _assembly, _traceback_filter

# Submodules that are attributes of ``ember`` as in JAX (``import ember; ember.random``) but are
# imported on first use, so that ``import ember`` does not pay for them.
_LAZY_SUBMODULES = frozenset(
    {
        "compilation_cache",
        "distributed",
        "dlpack",
        "experimental",
        "export",
        "ffi",
        "image",
        "nn",
        "profiler",
        "random",
        "scipy",
    }
)


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_SUBMODULES)
