"""Contractions (``core/src/ember/_src/numpy/contractions.py``): values against NumPy."""

import numpy as np

import ember.numpy as enp


def test_vdot_conjugates_its_first_argument():
    a = np.array([1 + 2j, 3 - 1j], np.complex64)
    b = np.array([2 - 1j, 1 + 1j], np.complex64)
    got = complex(enp.vdot(a, b))
    assert got == complex(np.vdot(a, b)) == 2 - 1j
    assert complex(enp.vdot(b, a)) == complex(np.vdot(b, a))


def test_vdot_flattens_and_keeps_real_inputs_as_they_are():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    assert float(enp.vdot(a, b)) == float(np.vdot(a, b)) == 15.0
