"""The backend conformance suite, run against any installed ember backend.

    pytest --pyargs ember_plugin_kit.conformance --ember-platform=NAME

Every check runs a computation on the backend under test and compares it with the NumPy
``reference`` backend (or with NumPy itself): transfers of every dtype, eager primitives,
jit with donation, differentiation, compile errors and executable introspection
(test_conformance.py); PRNG bits, control flow with its gradients, sorting, gather/scatter and
dynamic slices (test_programs.py); the linear algebra factorisations, whether the platform
lowers them generically or through its own library, and their gradients (test_linalg.py);
Pallas kernels (test_kernels.py); several devices (test_multi_device.py).
"""
