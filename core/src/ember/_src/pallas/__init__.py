"""Pallas: custom kernels over Refs to blocks of arrays, run over a grid
(``ember.experimental.pallas``).

``core`` (block specs, grids, the lowered ``PallasCall``), ``primitives`` (what kernels call),
``pallas_call`` (the primitive and its rules), ``interpret`` (running a call as a loop of
array operations, on any backend).
"""
