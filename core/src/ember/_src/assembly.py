"""Wiring that the layer chain cannot express, done once, from the top layer.

Each line below hands a lower layer a function from a higher one. The lower layer needs it at
run time but may not import it: DESIGN's chain only points downward, and these are exactly the
places where the lower layer *calls up*.

- core (the bottom ``EvalTrace``) gets execution's ``eager.apply_primitive``: a primitive bound
  outside any transformation runs eagerly, and running needs lowering, compiling and devices,
  three layers above core.
- core (``ShapedArray.sharding``, what ``typeof(x).sharding`` shows for an array split over
  no Explicit axis) gets runtime's ``unsplit_sharding``: a ``NamedSharding`` over the abstract
  mesh in scope, both defined three layers above core.
- runtime (``Array``, for unpickling) gets execution's ``placement.device_put_numpy``: an
  Array rebuilt from its value must be put on a device, which is execution's job.
- runtime (``Array``) and core (``Tracer``) get their operators and methods from ember.numpy
  (``array_methods.install``): ``x + y`` and ``x.sum()`` are ember.numpy functions, many
  layers above the classes they are called on.
- foundation (``config``) gets the plugin manager's ``load_plugins``: an option a plugin defines
  (``cpu_device_count``) can be read or set before any backend started, so config loads the
  plugins when it meets a name it does not know.
- primitives (``random_gamma``) gets ember.random's gamma sampler, which its lowering and
  reference rules run as a traced program. ember.random is imported on first use (not by
  ``import ember``), so this one is done by ``random/gamma.py`` itself when it is imported;
  the primitive cannot be reached any other way.

``ember/__init__.py`` imports this module; apart from the gamma sampler, nothing installs
itself on import.
"""

from __future__ import annotations

from ember._src import core
from ember._src.config import config
from ember._src.core import Tracer
from ember._src.execution import eager, placement
from ember._src.numpy import array_methods
from ember._src.plugin import manager
from ember._src.runtime import array, sharding
from ember._src.runtime.array import Array

core.set_eager_dispatcher(eager.apply_primitive)
core.set_unsplit_sharding(sharding.unsplit_sharding)
config.set_plugin_loader(manager.load_plugins)
array.set_host_to_device(placement.device_put_numpy)
array_methods.install(Array)
array_methods.install(Tracer)
