"""Exchanging arrays with other libraries through DLPack (``import ember.dlpack``)."""

from ember._src.numpy.dlpack import (
    from_dlpack as from_dlpack,
    is_supported_dtype as is_supported_dtype,
)
