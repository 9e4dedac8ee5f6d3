"""``platform_dependent``: code that differs from platform to platform, chosen when lowered.

``platform_dependent(*args, cpu=f, cuda=g, default=h)`` traces every branch (as ``switch``
does, so it works under every transformation) into a ``cond`` whose ``platforms`` parameter
names each branch's platforms. Lowering for a platform emits only that platform's branch
(or the default): the compiler never sees the others, which may use operations only another
platform's plugin can lower, such as a plugin's own kernels. Its index is the
``platform_index`` primitive, the branch's position, known once the platform is: called
outside any trace, the chosen branch simply runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Tracer
from ember._src.primitives import sharding_rules
from ember._src.primitives.control_flow.cond import bind_branches, branch_for_platform

_I32 = ShapedArray((), dtypes.int32)


def _platform_index_lowering(ctx, *, platforms):
    return ctx.constant(branch_for_platform(platforms, ctx.platform), _I32)


platform_index_p = rules.define_primitive(
    "platform_index",
    abstract_eval=lambda *, platforms: _I32,
    lowering=_platform_index_lowering,
    reference=lambda *, platforms: np.int32(branch_for_platform(platforms, "reference")),
    sharding=sharding_rules.unsplit,
)


def platform_dependent(
    *args: Any, default: Callable[..., Any] | None = None, **per_platform: Callable[..., Any]
) -> Any:
    """``per_platform[p](*args)`` for the platform ``p`` the program runs on (``cpu``,
    ``cuda``, ``rocm``, ``tpu``, ``reference`` or a plugin's), or ``default(*args)`` for a
    platform without a branch, as JAX's ``lax.platform_dependent``. Every branch is traced;
    only the chosen one is compiled. Branches given as the same function share one branch."""
    grouped: list[tuple[list[str], Callable[..., Any]]] = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(
                f"lax.platform_dependent: the {name!r} branch must be a callable{errors.where()}"
            )
        if name == "gpu":
            raise ValueError(
                f"lax.platform_dependent: name the GPU platform 'cuda' or 'rocm', not 'gpu'"
                f"{errors.where()}"
            )
        for names, seen in grouped:
            if seen is branch:
                names.append(name)
                break
        else:
            grouped.append(([name], branch))
    platforms: tuple = tuple(tuple(names) for names, _ in grouped)
    branches = [branch for _, branch in grouped]
    if default is not None:
        if not callable(default):
            raise TypeError(
                f"lax.platform_dependent: the 'default' branch must be a callable{errors.where()}"
            )
        platforms += (None,)
        branches.append(default)
    if not branches:
        raise TypeError(
            f"lax.platform_dependent needs at least one branch (platform=function or "
            f"default=function){errors.where()}"
        )
    index = platform_index_p.bind(platforms=platforms)
    if not isinstance(index, Tracer):  # the platform is known: run its branch
        return branches[int(index)](*args)
    names = [("_".join(n) if n else "default") for n in platforms]
    return bind_branches(index, branches, args, "platform_dependent", names, platforms)
