"""Signal processing (``ember.scipy.signal``), as ``jax.scipy.signal``."""

from ember._src.scipy.signal import (
    convolve as convolve,
    convolve2d as convolve2d,
    correlate as correlate,
    correlate2d as correlate2d,
    detrend as detrend,
    fftconvolve as fftconvolve,
)
from ember._src.scipy.spectral import csd as csd, istft as istft, stft as stft, welch as welch
