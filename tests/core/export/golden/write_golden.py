"""Writes the golden exported programs of this directory (run from the repository root with
the CPU backend: ``EMBER_PLATFORMS=cpu,reference python -m tests.core.export.golden.write_golden
[NAME ...]``, NAME a file to write, all of them by default). The programs over several devices
(``MESH_GOLDEN``) run on the CPU backend's first devices; tests/sharding/test_export.py runs them.

The files are committed and never rewritten: tests/core/export/test_serialization.py loads and
runs them, the promise that a program exported by this version of ember still loads later.
Rewrite them only when the format version changes, keeping the old ones beside the new.
"""

import os
import pathlib
import sys

import numpy as np

import ember
import ember.numpy as enp
from ember import lax
from ember.export import export, symbolic_shape

HERE = pathlib.Path(__file__).resolve().parent
f32 = np.float32


def mlp(params, x):
    """Two dense layers, tanh between: params {"w1", "b1", "w2", "b2"}, x f32[4, 3]."""
    hidden = enp.tanh(x @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


MLP_ARGS = (
    {
        "w1": ember.ShapeDtypeStruct((3, 5), f32),
        "b1": ember.ShapeDtypeStruct((5,), f32),
        "w2": ember.ShapeDtypeStruct((5, 2), f32),
        "b2": ember.ShapeDtypeStruct((2,), f32),
    },
    ember.ShapeDtypeStruct((4, 3), f32),
)


def mixed(count, scale, flags):
    """Several dtypes, a tuple and a dict out: i32[3], f32[], bool[3]."""
    return {"total": enp.sum(count), "scaled": (count * 2, enp.where(flags, scale, -scale))}


MIXED_ARGS = (
    ember.ShapeDtypeStruct((3,), np.int32),
    ember.ShapeDtypeStruct((), f32),
    ember.ShapeDtypeStruct((3,), np.bool_),
)


def running_sum(xs):
    """A scan: the running sums of the rows of f32[5, 2], and the last one."""

    def step(carry, x):
        carry = carry + x
        return carry, carry * 1.0

    return lax.scan(step, enp.zeros(2, f32), xs)


SCAN_ARGS = (ember.ShapeDtypeStruct((5, 2), f32),)


def softplus(x):
    """For the two-platform export (cpu and cuda): log(1 + exp(x)) of f32[6]."""
    return enp.logaddexp(x, 0.0)


SOFTPLUS_ARGS = (ember.ShapeDtypeStruct((6,), f32),)


def batched_affine(x, w):
    """Shape-polymorphic: x f32[b, 3] @ w f32[3, 2] + 1, for any batch size b."""
    return x @ w + 1.0


POLY_ARGS = (
    ember.ShapeDtypeStruct(symbolic_shape("b, 3"), f32),
    ember.ShapeDtypeStruct((3, 2), f32),
)


def sharded_affine(x, w):
    """Over 2 devices (mesh axis "batch"): x f32[4, 3], its rows split, @ w f32[3, 2]
    replicated, + 1; the result's rows split too."""
    return x @ w + 1.0


def sharded_affine_reference(x, w):
    return x @ w + 1.0


def two_device_layouts():
    """jit's shardings for sharded_affine, over the first 2 devices."""
    mesh = ember.make_mesh(
        (2,), ("batch",), devices=ember.devices()[:2], axis_types=(ember.sharding.AxisType.Auto,)
    )
    rows = ember.sharding.NamedSharding(mesh, ember.sharding.P("batch"))
    whole = ember.sharding.NamedSharding(mesh, ember.sharding.P())
    return {"in_shardings": (rows, whole), "out_shardings": rows}


SHARDED_ARGS = (ember.ShapeDtypeStruct((4, 3), f32), ember.ShapeDtypeStruct((3, 2), f32))

# Programs over several devices: name -> (function, arguments, jit's shardings when written).
MESH_GOLDEN = {
    "sharded_affine_2dev.emberexp": (sharded_affine, SHARDED_ARGS, two_device_layouts),
}

GOLDEN = {
    "mlp_vjp1.emberexp": (mlp, MLP_ARGS, {}, 1),
    "mixed_dtypes.emberexp": (mixed, MIXED_ARGS, {}, 0),
    "scan.emberexp": (running_sum, SCAN_ARGS, {}, 0),
    "softplus_cpu_cuda.emberexp": (softplus, SOFTPLUS_ARGS, {"platforms": ("cpu", "cuda")}, 0),
    "batched_affine_poly_vjp1.emberexp": (batched_affine, POLY_ARGS, {}, 1),
}


def main(names: list[str]) -> None:
    for name in names or [*GOLDEN, *MESH_GOLDEN]:
        if name in MESH_GOLDEN:
            fun, args, layouts = MESH_GOLDEN[name]
            blob = export(ember.jit(fun, **layouts()))(*args).serialize()
        else:
            fun, args, options, vjp_order = GOLDEN[name]
            blob = export(ember.jit(fun), **options)(*args).serialize(vjp_order=vjp_order)
        (HERE / name).write_bytes(blob)
        print(f"wrote {name}: {len(blob)} bytes")


if __name__ == "__main__":
    # Before any backend starts: the programs over several devices need them.
    os.environ.setdefault("EMBER_CPU_DEVICE_COUNT", "2")
    main(sys.argv[1:])
