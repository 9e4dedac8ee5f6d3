"""Adaptive ODE integration (as ``jax.experimental.ode``): ``odeint``."""

from ember._src.ode.odeint import odeint as odeint
