"""A small library of first-order optimizers, with the names and behaviour of
``jax.example_libraries.optimizers``.

An optimizer is a triple of functions ``(init_fun, update_fun, get_params)``::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)
    opt_state = opt_update(step, grads, opt_state)
    params = get_params(opt_state)

Each optimizer below is written for a single array; the ``optimizer`` decorator lifts it to
pytrees of parameters, keeping the per-leaf states flattened in an ``OptimizerState`` (itself
a pytree, so it passes through ``jit``). Step sizes are scalars or schedules (functions of the
step number); the schedules below are the usual decays.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from ember._src import errors
from ember._src.numpy import (
    contractions,
    creation,
    elementwise as enp,
    manipulation,
    nonzero,
    reductions,
)
from ember._src.tree.util import (
    register_pytree_node,
    tree_flatten,
    tree_map,
    tree_unflatten,
)

Array = Any
Params = Any  # any pytree of arrays
State = Any  # the per-array state of one optimizer
Updates = Params  # gradients have the structure of the parameters
Step = int
Schedule = Callable[[Step], float]

# The pytree-level state: per parameter leaf, the flattened leaves of its state
# (``packed_state``) and that state's structure (``subtree_defs``); ``tree_def`` is the
# structure of the parameters.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]),
)

InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


# --------------------------------------------------------------------------------------------
# Lifting per-array optimizers to pytrees


def _flatten_states(states: list[Any]) -> tuple[tuple[list[Any], ...], tuple[Any, ...]]:
    flat = [tree_flatten(s) for s in states]
    return tuple(leaves for leaves, _ in flat), tuple(tree for _, tree in flat)


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
    """Decorator: lift an optimizer written for single arrays to pytrees of arrays.

    ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` acting on one array
    (its state may be any pytree); the decorated maker returns an ``Optimizer`` whose functions
    act on pytrees of parameters and an ``OptimizerState``.
    """

    @functools.wraps(opt_maker)
    def make(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(params: Params) -> OptimizerState:
            leaves, tree = tree_flatten(params)
            packed, subtrees = _flatten_states([init(x) for x in leaves])
            return OptimizerState(packed, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i: Step, grads: Updates, opt_state: OptimizerState) -> OptimizerState:
            packed, tree, subtrees = opt_state
            grad_leaves, grad_tree = tree_flatten(grads)
            if grad_tree != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match "
                    f"the parameter tree structure with which it was initialized: parameter "
                    f"tree {tree} and grad tree {grad_tree}{errors.where()}"
                )
            states = [tree_unflatten(t, s) for t, s in zip(subtrees, packed)]
            new_states = [update(i, g, s) for g, s in zip(grad_leaves, states)]
            new_packed, new_subtrees = _flatten_states(new_states)
            for old, new in zip(subtrees, new_subtrees):
                if old != new:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {old} and output {new}"
                        f"{errors.where()}"
                    )
            return OptimizerState(new_packed, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            packed, tree, subtrees = opt_state
            states = [tree_unflatten(t, s) for t, s in zip(subtrees, packed)]
            return tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return make


def _first(state: tuple) -> Any:
    return state[0]


# --------------------------------------------------------------------------------------------
# Optimizers (each on a single array)


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return Optimizer(init, update, get_params)


def _with_velocity(x0):
    return x0, creation.zeros_like(x0)


@optimizer
def momentum(step_size: Schedule, mass: float):
    """SGD with (heavy-ball) momentum ``mass``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return _with_velocity, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """SGD with Nesterov momentum ``mass``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return _with_velocity, update, _first


def _inverse_sqrt_or_zero(accum):
    """``1/sqrt(accum)`` where ``accum > 0``, else 0 (a never-seen coordinate stays put)."""
    return nonzero.where(accum > 0, 1.0 / enp.sqrt(accum), 0.0)


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al., 2011), with momentum on the rescaled gradient."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + enp.square(g)
        m = (1.0 - momentum) * (g * _inverse_sqrt_or_zero(g_sq)) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: the gradient divided by a running root mean square (decay ``gamma``)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + enp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / enp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return _with_velocity, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the rescaled step."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + enp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / enp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


def _bias_correction(beta, dtype, i):
    """``1 - beta**(i+1)``, computed in the parameters' dtype."""
    return 1 - creation.asarray(beta, dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015) with bias-corrected moment estimates."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * enp.square(g) + b2 * v
        m_hat = m / _bias_correction(b1, m.dtype, i)
        v_hat = v / _bias_correction(b2, m.dtype, i)
        return x - step_size(i) * m_hat / (enp.sqrt(v_hat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with an exponentially weighted infinity norm for the second moment."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, creation.zeros_like(x0), creation.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = enp.maximum(b2 * u, enp.abs(g))
        x = x - (step_size(i) / _bias_correction(b1, m.dtype, i)) * m / (u + eps)
        return x, m, u

    return init, update, _first


class _StaticShape:
    """A parameter's original shape kept in a state's structure rather than its leaves, so
    that a jitted update neither traces it nor returns it as an array."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _StaticShape) and other.shape == self.shape

    def __hash__(self) -> int:
        return hash(self.shape)

    def __repr__(self) -> str:
        return f"shape{self.shape}"


register_pytree_node(_StaticShape, lambda s: ((), s.shape), lambda shape, _: _StaticShape(shape))


def _broadcast_along(ndim: int, v: Any, axis: int) -> Any:
    """The 1-d accumulator ``v`` of ``axis`` shaped to broadcast against an ndim array."""
    shape = [1] * ndim
    shape[axis] = -1
    return manipulation.reshape(v, tuple(shape))


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): one accumulator vector per axis instead of one per entry."""
    step_size = make_schedule(step_size)

    def init(x0):
        shape = _StaticShape(tuple(x0.shape))
        x0 = manipulation.atleast_1d(x0)
        accumulators = [creation.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, creation.zeros_like(x0), accumulators, shape

    def update(i, g, state):
        x, m, accumulators, shape = state
        ndim = x.ndim  # at least 1: a scalar parameter is kept as shape (1,)
        cover = [_broadcast_along(ndim, v, axis) for axis, v in enumerate(accumulators)]
        accum = functools.reduce(enp.minimum, cover) + enp.square(g)
        m = (1.0 - momentum) * (g * _inverse_sqrt_or_zero(accum)) + momentum * m
        x = x - step_size(i) * m
        others = [tuple(a for a in range(ndim) if a != axis) for axis in range(ndim)]
        return x, m, [reductions.max(accum, axis=axes) for axes in others], shape

    def get_params(state):
        x, _, _, shape = state
        return manipulation.reshape(x, shape.shape)

    return init, update, get_params


# --------------------------------------------------------------------------------------------
# Step-size schedules


def constant(step_size) -> Schedule:
    def schedule(i):
        return step_size

    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``."""

    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * i / decay_steps)``, the ratio floored if ``staircase``."""

    def schedule(i):
        ratio = enp.floor(i / decay_steps) if staircase else i / decay_steps
        return step_size / (1 + decay_rate * ratio)

    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps, then constant."""

    def schedule(step_num):
        step_num = enp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """``values[k]`` for steps in ``(boundaries[k-1], boundaries[k]]``."""
    boundaries = creation.array(boundaries)
    values = creation.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[reductions.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule as is, or a constant schedule for a scalar step size."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if manipulation.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# --------------------------------------------------------------------------------------------
# Utilities


def l2_norm(tree):
    """The l2 norm of a pytree of arrays (all leaves taken as one vector)."""
    leaves, _ = tree_flatten(tree)
    return enp.sqrt(sum(contractions.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scale a pytree of gradients down so that its l2 norm is at most ``max_norm``."""
    norm = l2_norm(grad_tree)

    def clip(g):
        return nonzero.where(norm < max_norm, g, g * (max_norm / norm))

    return tree_map(clip, grad_tree)


# --------------------------------------------------------------------------------------------
# Serialisation: an OptimizerState as one nested pytree and back


class JoinPoint:
    """Marks the boundary between two joined (nested) pytrees."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An ``OptimizerState`` as the parameters' pytree with a ``JoinPoint`` per leaf, each
    holding that leaf's optimizer state (useful for serialising)."""
    packed, tree, subtrees = opt_state
    joins = [JoinPoint(tree_unflatten(t, s)) for t, s in zip(subtrees, packed)]
    return tree_unflatten(tree, joins)


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``."""
    joins, tree = tree_flatten(marked_pytree)
    if not all(isinstance(j, JoinPoint) for j in joins):
        raise TypeError(
            "pack_optimizer_state expects a pytree whose leaves are all JoinPoints (as "
            f"unpack_optimizer_state returns){errors.where()}"
        )
    packed, subtrees = _flatten_states([j.subtree for j in joins])
    return OptimizerState(packed, tree, subtrees)
