"""``random_gamma``: samples of Gamma(a, 1) (or their logarithms), one per element of ``a``.

A primitive so that its derivative can be given directly: the implicit reparameterisation
gradient d(sample)/da at a fixed quantile (``lax.random_gamma_grad``), not the derivative of
the rejection loop that draws the sample. Its lowering and reference rules run the sampler's
own jaxpr. The sampler (JAX's, bit for bit) is built from the PRNG and ``vmap``, which sit
above the primitives in the layer chain: ``ember.random`` registers it here when imported
(``register_sampler``), and only ``ember.random`` binds this primitive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._src import dtypes, errors, rules
from ember._src.core import ShapedArray, Zero, get_aval, tangent_aval
from ember._src.interpreters.batching import not_mapped
from ember._src.interpreters.reference import evaluate_jaxpr
from ember._src.interpreters.staging import trace_to_jaxpr
from ember._src.lowering.module import lower_jaxpr_inline
from ember._src.primitives import sharding_rules
from ember._src.primitives.arithmetic import div, mul
from ember._src.primitives.comparisons import eq
from ember._src.primitives.igamma import random_gamma_grad
from ember._src.primitives.math_functions import exp
from ember._src.primitives.selection import select_n
from ember._src.primitives.shape import bdim_to_front, broadcast_in_dim

# ``sampler(key, a, *, log_space)``: samples for every element of ``a``; ``key``'s leading axes
# (if any) batch ``a``'s.
_sampler: Callable[..., Any] | None = None


def register_sampler(sampler: Callable[..., Any]) -> None:
    """Make ``sampler`` the one the lowering and reference rules run."""
    global _sampler
    _sampler = sampler


def _random_gamma_abstract_eval(key: ShapedArray, a: ShapedArray, *, log_space: bool):
    batch = key.shape[:-1]
    if (
        key.dtype != np.dtype(np.uint32)
        or not key.shape
        or key.shape[-1] != 2
        or a.shape[: len(batch)] != batch
    ):
        raise errors.EmberTypeError(
            f"random_gamma: keys {key.str_short()} do not batch a {a.str_short()}{errors.where()}"
        )
    if not dtypes.is_float(a.dtype) or a.dtype.kind == "c":
        raise errors.EmberTypeError(
            f"random_gamma needs a real floating-point a, got {a.str_short()}{errors.where()}"
        )
    return ShapedArray(a.shape, a.dtype)


def _sampler_jaxpr(avals, log_space):
    if _sampler is None:
        raise NotImplementedError(
            "ember has no sampler for the primitive 'random_gamma': import ember.random"
            f"{errors.where()}"
        )
    return trace_to_jaxpr(lambda k, a: [_sampler(k, a, log_space=log_space)], avals)


def _random_gamma_lowering(ctx, key, a, *, log_space):
    # The sampler is traced untyped: its loop's carry would otherwise start whole and come
    # back split. Its result is laid out as the primitive's type says.
    avals = [a.update(sharding=None) for a in ctx.avals_in]
    closed = _sampler_jaxpr(avals, log_space)
    consts = [ctx.constant(c, get_aval(c)) for c in closed.consts]
    return lower_jaxpr_inline(ctx, closed.jaxpr, consts, [key, a])[0]


def _random_gamma_reference(key, a, *, log_space):
    avals = [ShapedArray(key.shape, key.dtype), ShapedArray(a.shape, a.dtype)]
    return evaluate_jaxpr(_sampler_jaxpr(avals, log_space), [key, a])[0]


def _random_gamma_batch(vals, dims, *, log_space):
    key, a = vals
    key_dim, a_dim = dims
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not not_mapped)
    key, a = bdim_to_front(key, key_dim, size), bdim_to_front(a, a_dim, size)
    return random_gamma_p.bind(key, a, log_space=log_space), 0


def _gamma_grad(sample: Any, a: Any, log_space: bool) -> Any:
    if not log_space:
        return random_gamma_grad(a, sample)
    # d log(x) = dx / x; exp(log x) may round to 0, so it is kept at the smallest normal.
    dtype = get_aval(sample).dtype
    x = exp(sample)
    tiny = broadcast_in_dim(np.asarray(dtypes.finfo(dtype).tiny, dtype), get_aval(x).shape, ())
    x = select_n(eq(x, np.asarray(0, dtype)), x, tiny)
    return div(random_gamma_grad(a, x), x)


def _random_gamma_jvp(primals, tangents, *, log_space):
    key, a = primals
    _, ta = tangents
    out = random_gamma_p.bind(key, a, log_space=log_space)
    if type(ta) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, mul(ta, _gamma_grad(out, a, log_space))


def _random_gamma_sharding(key, a, *, log_space):
    """A sample per element of ``a``, each from its own key: the result is split as ``a``
    and the keys' batch dimensions agree to be split (a key's two words stay together)."""
    what, avals = "random_gamma", (key, a)
    mesh = sharding_rules.common_mesh(what, avals)
    sharding_rules.require_unsplit(what, avals, key, [key.ndim - 1], "it holds one key's words")
    keys = sharding_rules.entries(key)[:-1]
    keys += (None,) * (a.ndim - len(keys))
    columns = zip(keys, sharding_rules.entries(a))
    return sharding_rules.build(
        what, avals, mesh, [sharding_rules.consensus(what, avals, c) for c in columns]
    )


random_gamma_p = rules.define_primitive(
    "random_gamma",
    sharding=_random_gamma_sharding,
    abstract_eval=_random_gamma_abstract_eval,
    jvp=_random_gamma_jvp,
    batch=_random_gamma_batch,
    lowering=_random_gamma_lowering,
    reference=_random_gamma_reference,
)
