"""``ember.numpy.float32`` and its kin: NumPy's scalar types, as JAX exposes them.

Calling one makes an ember array of that dtype (``jnp.float32(1)`` is ``Array(1., dtype=float32)``,
under ``jit`` too), where NumPy's makes a host scalar. Everywhere a dtype is expected the type
stands for its dtype (``np.dtype(jnp.float32)``, ``x.astype(jnp.int8)``, ``== np.float32``), and
``isinstance(v, jnp.float32)`` asks about NumPy's scalar type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.numpy.creation import asarray


class _ScalarMeta(type):
    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: Any) -> bool:
        # NumPy's own comparison, so that the type equals its np.dtype from either side
        # (``enp.float32 == np.dtype("float32")``, and so ``x.dtype in (enp.float32, ...)``,
        # which compares with the tuple's item on the left).
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other: Any) -> bool:
        return not cls == other

    def __call__(cls, x: Any) -> Any:
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'ember.numpy.{cls.__name__}'>"


def scalar_type(numpy_type: Any, name: str | None = None) -> _ScalarMeta:
    """The ember scalar type standing for ``numpy_type`` (np.float32, ml_dtypes' bfloat16...)."""
    name = name or np.dtype(numpy_type).name
    return _ScalarMeta(
        name, (object,), {"dtype": np.dtype(numpy_type), "__module__": "ember.numpy"}
    )
