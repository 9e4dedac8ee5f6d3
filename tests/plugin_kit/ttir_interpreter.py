"""A NumPy interpreter of the Triton-dialect subset ember's Triton lowering emits, so that
the tests check what the lowered kernels *compute* on a machine without a GPU.

It walks the module jaxlib's MLIR bindings parse (the same text XLA gets as bytecode) and runs
the function once per program of the grid, sequentially: every tensor is a NumPy array, a
pointer tensor is (buffer, element offsets), and masked-off loads give their ``other`` value.
Integers are kept as signed NumPy integers of their width; the ops that are unsigned (``divui``,
``cmpi ult``, ``extui``...) reinterpret them, as the hardware does.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember_plugin_kit.triton import lower_kernel

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    _BF16 = None

_ELEMENTS = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "bf16": _BF16,
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

# arith.cmpf / arith.cmpi predicates, by their enum values
_CMPF = {
    1: np.equal,
    2: np.greater,
    3: np.greater_equal,
    4: np.less,
    5: np.less_equal,
    6: np.not_equal,
    13: np.not_equal,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
}
_CMPI = {
    0: ("eq", False),
    1: ("ne", False),
    2: ("lt", False),
    3: ("le", False),
    4: ("gt", False),
    5: ("ge", False),
    6: ("lt", True),
    7: ("le", True),
    8: ("gt", True),
    9: ("ge", True),
}
_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}

_BINARY = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.shli": np.left_shift,
    "arith.shrsi": np.right_shift,
}
_UNSIGNED_BINARY = {
    "arith.maxui": np.maximum,
    "arith.minui": np.minimum,
    "arith.shrui": np.right_shift,
}

_UNARY = {
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.log": np.log,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: 1 / np.sqrt(x),
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.absf": np.abs,
    "math.absi": np.abs,
    "arith.negf": np.negative,
}

_LIBDEVICE = {
    "tanh": np.tanh,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "cbrt": np.cbrt,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "rint": np.rint,
    "pow": np.power,
    "atan2": np.arctan2,
}


# tt.atomic_rmw kinds (RMWOp): the new value from the old one and the operand
_ATOMIC = {
    1: np.bitwise_and,
    2: np.bitwise_or,
    3: np.bitwise_xor,
    4: np.add,
    5: np.add,
    6: np.maximum,
    7: np.minimum,
    8: lambda old, v: np.maximum(_unsigned(old), _unsigned(v)).view(old.dtype),
    9: lambda old, v: np.minimum(_unsigned(old), _unsigned(v)).view(old.dtype),
    10: lambda old, v: v,
}


@dataclass
class Pointers:
    """Pointers into buffer ``buffer`` (an index into the memory): ``offsets`` in elements."""

    buffer: int
    offsets: Any  # an int64 array, or an int


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype == np.bool_ else x.view(f"u{x.dtype.itemsize}")


def _int_attr(attribute: Any) -> int:
    return int(str(attribute).split(":")[0].strip())


class Interpreter:
    def __init__(self, text: str):
        self._ir = importlib.import_module("jaxlib.mlir.ir")
        triton = importlib.import_module("jaxlib.triton.dialect")
        self._context = self._ir.Context()
        triton.register_dialect(self._context)
        self._context.load_all_available_dialects()
        with self._context:
            self.module = self._ir.Module.parse(text)
        (self.function,) = list(self.module.body.operations)

    # -- types and values ---------------------------------------------------------------------

    def _dtype(self, mlir_type: Any) -> np.dtype:
        text = str(mlir_type)
        if text.startswith("tensor<"):
            text = text[len("tensor<") : -1].split("x")[-1]
        return _ELEMENTS[text]

    def _shape(self, mlir_type: Any) -> tuple[int, ...]:
        text = str(mlir_type)
        if not text.startswith("tensor<"):
            return ()
        return tuple(int(d) for d in text[len("tensor<") : -1].split("x")[:-1])

    def _constant(self, op: Any) -> np.ndarray:
        result = op.results[0]
        dtype, shape = self._dtype(result.type), self._shape(result.type)
        text = str(op.attributes["value"])
        if text.startswith("dense<"):
            text = text[len("dense<") :].split(">")[0]
        else:
            text = text.split(":")[0].strip()
        if text in ("true", "false"):
            value = text == "true"
        elif text.startswith("0x"):
            bits = np.array(int(text, 16), dtype=f"u{dtype.itemsize}")
            value = bits.view(dtype)
        else:
            value = float(text) if dtype.kind == "f" or dtype == _BF16 else int(text)
        return np.full(shape, value, dtype=dtype) if shape else np.asarray(value, dtype=dtype)

    # -- running ------------------------------------------------------------------------------

    def run(
        self, arrays: Sequence[np.ndarray], grid: Sequence[int], reverse: bool = False
    ) -> list[np.ndarray]:
        """Run the kernel over ``grid`` on copies of ``arrays`` (inputs, then outputs'
        initial values); returns the final contents of every buffer. Programs run one after
        another, x fastest; ``reverse`` runs them in the opposite order (a GPU runs them in
        any order, so a correct kernel gives the same either way)."""
        self.memory = [np.array(a).reshape(-1).copy() for a in arrays]
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        block = self.function.regions[0].blocks[0]
        programs = [
            (x, y, z)
            for z in range(self.grid[2])
            for y in range(self.grid[1])
            for x in range(self.grid[0])
        ]
        for program in reversed(programs) if reverse else programs:
            self.program = program
            env = {arg: Pointers(i, 0) for i, arg in enumerate(block.arguments)}
            self._block(block, env)
        return [m.reshape(np.shape(a)) for m, a in zip(self.memory, arrays)]

    def _block(self, block: Any, env: dict) -> list:
        """Run a block's operations; returns the operands of its terminator."""
        for op in block.operations:
            name = op.operation.name
            if name in (
                "scf.yield",
                "tt.reduce.return",
                "tt.scan.return",
                "tt.return",
                "scf.condition",
            ):
                return [env[v] for v in op.operation.operands]
            results = self._op(op.operation, env)
            for value, result in zip(op.operation.results, results):
                env[value] = result
        return []

    def _region(self, region: Any, env: dict, args: Sequence[Any]) -> list:
        block = region.blocks[0]
        inner = dict(env)
        for arg, value in zip(block.arguments, args):
            inner[arg] = value
        return self._block(block, inner)

    def _op(self, op: Any, env: dict) -> list:
        name = op.name
        args = [env[v] for v in op.operands]
        out_type = op.results[0].type if len(op.results) else None
        if name == "arith.constant":
            return [self._constant(op)]
        if name in _BINARY:
            with np.errstate(all="ignore"):
                return [np.asarray(_BINARY[name](args[0], args[1])).astype(args[0].dtype)]
        if name in _UNSIGNED_BINARY:
            a, b = _unsigned(args[0]), _unsigned(args[1])
            return [np.asarray(_UNSIGNED_BINARY[name](a, b)).view(args[0].dtype)]
        if name in ("arith.divsi", "arith.remsi"):
            a, b = args[0].astype(np.int64), args[1].astype(np.int64)
            q = np.trunc(a / b).astype(np.int64)  # C division truncates toward zero
            return [(q if name == "arith.divsi" else a - q * b).astype(args[0].dtype)]
        if name in ("arith.divui", "arith.remui"):
            a, b = _unsigned(args[0]), _unsigned(args[1])
            out = a // b if name == "arith.divui" else a % b
            return [out.view(args[0].dtype)]
        if name in _UNARY:
            with np.errstate(all="ignore"):
                return [np.asarray(_UNARY[name](args[0])).astype(args[0].dtype)]
        if name == "math.erf":
            erf = np.vectorize(math.erf, otypes=[np.float64])
            return [erf(args[0]).astype(args[0].dtype)]
        if name == "tt.extern_elementwise":
            symbol = str(op.attributes["symbol"]).strip('"')
            fn = _LIBDEVICE[symbol[len("__nv_") :].rstrip("f")]
            with np.errstate(all="ignore"):
                return [np.asarray(fn(*args)).astype(args[0].dtype)]
        if name == "arith.cmpf":
            return [_CMPF[_int_attr(op.attributes["predicate"])](args[0], args[1])]
        if name == "arith.cmpi":
            kind, unsigned = _CMPI[_int_attr(op.attributes["predicate"])]
            a, b = (_unsigned(args[0]), _unsigned(args[1])) if unsigned else args
            return [_COMPARE[kind](a, b)]
        if name == "arith.select":
            return [np.where(args[0], args[1], args[2])]
        if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi"):
            return [np.asarray(args[0]).astype(self._dtype(out_type))]
        if name == "arith.uitofp":
            return [_unsigned(args[0]).astype(self._dtype(out_type))]
        if name == "arith.fptoui":
            dtype = self._dtype(out_type)
            return [args[0].astype(f"u{dtype.itemsize}").view(dtype)]
        if name == "arith.extsi":
            return [args[0].astype(self._dtype(out_type))]
        if name == "arith.extui":
            return [_unsigned(args[0]).astype(self._dtype(out_type))]
        if name == "arith.trunci":
            return [args[0].astype(self._dtype(out_type))]
        if name in ("tt.get_program_id", "tt.get_num_programs"):
            axis = _int_attr(op.attributes["axis"])
            source = self.program if name == "tt.get_program_id" else self.grid
            return [np.int32(source[axis])]
        if name == "tt.make_range":
            start, end = _int_attr(op.attributes["start"]), _int_attr(op.attributes["end"])
            return [np.arange(start, end, dtype=np.int32)]
        if name in ("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.unsplat"):
            shape = self._shape(out_type)
            x = args[0]
            if isinstance(x, Pointers):
                return [Pointers(x.buffer, np.broadcast_to(x.offsets, shape).copy())]
            if name in ("tt.splat", "tt.broadcast"):
                return [np.broadcast_to(x, shape).copy()]
            return [np.reshape(x, shape)]
        if name == "tt.trans":
            order = [
                int(i) for i in str(op.attributes["order"]).split(":")[1].rstrip(">").split(",")
            ]
            return [np.transpose(args[0], order)]
        if name == "tt.split":
            return [args[0][..., 0], args[0][..., 1]]
        if name == "tt.join":
            return [np.stack([args[0], args[1]], axis=-1)]
        if name == "tt.print":
            # As CUDA's printf from Triton: the program, the text, then the values.
            prefix = str(op.attributes["prefix"]).strip('"')
            values = " ".join(np.array2string(np.asarray(a)) for a in args)
            print(f"pid {self.program} {prefix}{values}")
            return []
        if name == "tt.addptr":
            return [Pointers(args[0].buffer, np.asarray(args[0].offsets) + args[1])]
        if name == "tt.load":
            pointers = args[0]
            mask = args[1] if len(args) > 1 else np.ones(np.shape(pointers.offsets), bool)
            other = args[2] if len(args) > 2 else 0
            buffer = self.memory[pointers.buffer]
            offsets = np.where(mask, pointers.offsets, 0)
            return [np.where(mask, buffer[offsets], other).astype(buffer.dtype)]
        if name == "tt.store":
            pointers, values = args[0], args[1]
            mask = args[2] if len(args) > 2 else np.ones(np.shape(pointers.offsets), bool)
            offsets = np.asarray(pointers.offsets)
            target = self.memory[pointers.buffer]
            target[offsets[mask]] = np.broadcast_to(values, offsets.shape)[mask]
            return []
        if name == "tt.atomic_rmw":
            pointers, values, mask = args
            kind = _int_attr(op.attributes["atomic_rmw_op"])
            target = self.memory[pointers.buffer]
            shape = np.shape(values)
            offsets = np.atleast_1d(np.broadcast_to(pointers.offsets, shape))
            flat_values = np.atleast_1d(values)
            old = target[np.where(mask, offsets, 0)].reshape(shape).copy()
            for index in np.nonzero(np.atleast_1d(np.broadcast_to(mask, shape)).ravel())[0]:
                where, value = offsets.ravel()[index], flat_values.ravel()[index]
                target[where] = _ATOMIC[kind](target[where], value)
            return [old]
        if name == "tt.atomic_cas":
            pointers, expected, value = args
            target = self.memory[pointers.buffer]
            old = target[pointers.offsets].copy()
            if old == expected:
                target[pointers.offsets] = value
            return [old]
        if name == "tt.dot":
            a, b, acc = args
            return [(a.astype(np.float64) @ b.astype(np.float64) + acc).astype(acc.dtype)]
        if name == "tt.reduce":
            return [self._reduce(op, args[0])]
        if name == "tt.scan":
            return [self._scan(op, args[0])]
        if name == "scf.for":
            lower, upper, step, *carried = args
            for i in range(int(lower), int(upper), int(step)):
                carried = self._region(op.regions[0], env, [np.int32(i), *carried])
            return carried
        if name == "scf.while":
            carried = args
            while True:
                condition = self._region(op.regions[0], env, carried)
                if not bool(condition[0]):
                    return condition[1:]
                carried = self._region(op.regions[1], env, condition[1:])
        if name == "scf.if":
            branch = op.regions[0] if bool(args[0]) else op.regions[1]
            if not branch.blocks:
                return []
            return self._region(branch, env, [])
        raise NotImplementedError(f"the test interpreter has no {name}")

    def _reduce(self, op: Any, x: np.ndarray) -> np.ndarray:
        axis = _int_attr(op.attributes["axis"])
        (combiner,) = [o.operation.name for o in op.regions[0].blocks[0].operations][:-1]
        ufunc = _BINARY.get(combiner) or _UNSIGNED_BINARY[combiner]
        return np.asarray(ufunc.reduce(x, axis=axis)).astype(x.dtype)

    def _scan(self, op: Any, x: np.ndarray) -> np.ndarray:
        axis = _int_attr(op.attributes["axis"])
        reverse = str(op.attributes["reverse"]) == "true"
        (combiner,) = [o.operation.name for o in op.regions[0].blocks[0].operations][:-1]
        ufunc = _BINARY.get(combiner) or _UNSIGNED_BINARY[combiner]
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def run_call(call: Any, *inputs: np.ndarray, reverse: bool = False) -> list[np.ndarray]:
    """The outputs of ``call`` (a ``PallasCall``) on ``inputs`` as its Triton module computes
    them, one program after another (see ``Interpreter.run``)."""
    kernel = lower_kernel(call)
    outputs = [np.zeros(a.shape, a.dtype) for a in call.out_avals]
    for operand, output in call.input_output_aliases:
        outputs[output] = np.array(inputs[operand])
    arrays = [np.asarray(x) for x in inputs] + outputs
    memory = Interpreter(kernel.text).run(arrays, kernel.grid, reverse)
    return memory[len(inputs) :]
