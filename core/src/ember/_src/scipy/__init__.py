"""Private implementations behind ``ember.scipy``."""
