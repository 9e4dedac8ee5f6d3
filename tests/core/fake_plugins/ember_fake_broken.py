"""A plugin module that fails while being imported."""

raise ImportError("libfake.so: cannot open shared object file (fake)")
