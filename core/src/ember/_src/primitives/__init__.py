"""The primitive library.

Importing any module of this package first runs this file, which registers complex_math's
reference rules and lowerings over elementwise's generic ones: whichever op module is used,
complex numbers get their rules, without elementwise and complex_math importing each other.
"""

from ember._src.primitives import complex_math
