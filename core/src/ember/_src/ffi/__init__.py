"""Calling handlers written in C++ against XLA's FFI (``ember.ffi``)."""
