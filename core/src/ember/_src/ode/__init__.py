"""Private implementation behind ``ember.experimental.ode``."""
