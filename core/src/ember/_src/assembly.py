"""Wiring that the layer chain cannot express, done once, from the top layer.

Each line below hands a lower layer a function from a higher one. The lower layer needs it at
run time but may not import it: DESIGN's chain only points downward, and these are exactly the
places where the lower layer *calls up*.

- core (the bottom ``EvalTrace``) gets execution's ``eager.apply_primitive``: a primitive bound
  outside any transformation runs eagerly, and running needs lowering, compiling and devices,
  three layers above core.
- runtime (``Array``, for unpickling) gets execution's ``placement.device_put_numpy``: an
  Array rebuilt from its value must be put on a device, which is execution's job.
- runtime (``Array``) and core (``Tracer``) get their operators and methods from ember.numpy
  (``array_methods.install``): ``x + y`` and ``x.sum()`` are ember.numpy functions, many
  layers above the classes they are called on.

``ember/__init__.py`` imports this module; nothing else installs itself on import.
"""

from __future__ import annotations

from ember._src import core
from ember._src.core import Tracer
from ember._src.execution import eager, placement
from ember._src.numpy import array_methods
from ember._src.runtime import array
from ember._src.runtime.array import Array

core.set_eager_dispatcher(eager.apply_primitive)
array.set_host_to_device(placement.device_put_numpy)
array_methods.install(Array)
array_methods.install(Tracer)
