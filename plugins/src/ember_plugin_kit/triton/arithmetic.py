"""Rules for elementwise arithmetic, comparisons, selection, casts, and math functions.

Operands of one equation may mix a scalar with a tensor (a literal ``2.0`` times a block);
the scalar is splatted to the result's shape first. Transcendental functions of f16/bf16 run
in f32, as Triton's ``math`` lowering expects.
"""

from __future__ import annotations

import numpy as np

from ember_plugin_kit.triton.context import KernelContext, rule
from ember_plugin_kit.triton.emitter import Value, is_float, is_unsigned
from ember_plugin_kit.triton.tensors import broadcast_to, convert

# primitive -> (op on floats, on signed integers, on unsigned integers and bools)
BINARY_OPS = {
    "add": ("arith.addf", "arith.addi", "arith.addi"),
    "sub": ("arith.subf", "arith.subi", "arith.subi"),
    "mul": ("arith.mulf", "arith.muli", "arith.muli"),
    "div": ("arith.divf", "arith.divsi", "arith.divui"),
    "rem": ("arith.remf", "arith.remsi", "arith.remui"),
    # JAX's max/min propagate NaN: maximumf, not maxnumf.
    "max": ("arith.maximumf", "arith.maxsi", "arith.maxui"),
    "min": ("arith.minimumf", "arith.minsi", "arith.minui"),
    "and": (None, "arith.andi", "arith.andi"),
    "or": (None, "arith.ori", "arith.ori"),
    "xor": (None, "arith.xori", "arith.xori"),
    "shift_left": (None, "arith.shli", "arith.shli"),
    "shift_right_arithmetic": (None, "arith.shrsi", "arith.shrsi"),
    "shift_right_logical": (None, "arith.shrui", "arith.shrui"),
}

# primitive -> (cmpf predicate, signed cmpi predicate, unsigned cmpi predicate)
_COMPARE = {
    "eq": ("oeq", "eq", "eq"),
    "ne": ("une", "ne", "ne"),
    "lt": ("olt", "slt", "ult"),
    "le": ("ole", "sle", "ule"),
    "gt": ("ogt", "sgt", "ugt"),
    "ge": ("oge", "sge", "uge"),
}

# Float functions Triton lowers from MLIR's math dialect itself.
_MATH = {
    "exp": "math.exp",
    "exp2": "math.exp2",
    "log": "math.log",
    "sqrt": "math.sqrt",
    "rsqrt": "math.rsqrt",
    "sin": "math.sin",
    "cos": "math.cos",
    "erf": "math.erf",
    "floor": "math.floor",
    "ceil": "math.ceil",
}

# Float functions Triton does not lower itself: CUDA's libdevice has them (``__nv_<name>f``
# for f32, ``__nv_<name>`` for f64), called through ``tt.extern_elementwise`` as JAX does.
_LIBDEVICE = {
    "log1p": "log1p",
    "expm1": "expm1",
    "cbrt": "cbrt",
    "tanh": "tanh",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
    "erf_inv": "erfinv",
    "lgamma": "lgamma",
    "pow": "pow",
    "atan2": "atan2",
    "round": "rint",  # ember's round is half to even, as NumPy's
}


def kind_index(dtype: np.dtype) -> int:
    if is_float(dtype):
        return 0
    return 2 if is_unsigned(dtype) else 1


def _same_shape(kctx: KernelContext, eqn, values) -> list[Value]:
    shape = tuple(eqn.outvars[0].aval.shape)
    return [broadcast_to(kctx.emitter, v, shape) for v in values]


def _binary(name: str):
    ops = BINARY_OPS[name]

    def lower(kctx: KernelContext, eqn, x: Value, y: Value) -> list:
        x, y = _same_shape(kctx, eqn, (x, y))
        op = ops[kind_index(x.dtype)]
        if op is None:
            raise kctx.fail(name, f"not defined for {x.dtype}")
        return [kctx.emitter.op(f"{op} {x.name}, {y.name} : {x.type}", x.shape, x.dtype)]

    return lower


for _name in BINARY_OPS:
    rule(_name)(_binary(_name))


def _compare(name: str):
    predicates = _COMPARE[name]

    def lower(kctx: KernelContext, eqn, x: Value, y: Value) -> list:
        x, y = _same_shape(kctx, eqn, (x, y))
        kind = kind_index(x.dtype)
        cmp = "arith.cmpf" if kind == 0 else "arith.cmpi"
        text = f"{cmp} {predicates[kind]}, {x.name}, {y.name} : {x.type}"
        return [kctx.emitter.op(text, x.shape, np.bool_)]

    return lower


for _name in _COMPARE:
    rule(_name)(_compare(_name))


def _in_f32(kctx: KernelContext, x: Value, fn) -> Value:
    """``fn(x)`` computed in f32 when ``x`` is f16/bf16, then rounded back."""
    if is_float(x.dtype) and np.dtype(x.dtype).itemsize < 4:
        return convert(kctx.emitter, fn(convert(kctx.emitter, x, np.float32)), x.dtype)
    return fn(x)


def _math(name: str):
    op = _MATH[name]

    def lower(kctx: KernelContext, eqn, x: Value) -> list:
        if not is_float(x.dtype):
            raise kctx.fail(name, f"not defined for {x.dtype}")
        return [
            _in_f32(
                kctx, x, lambda v: kctx.emitter.op(f"{op} {v.name} : {v.type}", v.shape, v.dtype)
            )
        ]

    return lower


for _name in _MATH:
    rule(_name)(_math(_name))


def _libdevice(name: str):
    function = _LIBDEVICE[name]

    def lower(kctx: KernelContext, eqn, *args: Value) -> list:
        args = _same_shape(kctx, eqn, args)
        dtype = np.dtype(args[0].dtype)
        if not is_float(dtype):
            raise kctx.fail(name, f"not defined for {dtype}")
        e = kctx.emitter

        def call(*xs: Value) -> Value:
            x = xs[0]
            symbol = f"__nv_{function}" + ("f" if x.dtype == np.float32 else "")
            names = ", ".join(v.name for v in xs)
            types = ", ".join(v.type for v in xs)
            return e.op(
                f'tt.extern_elementwise {names} {{libname = "", libpath = "", pure = true, '
                f'symbol = "{symbol}"}} : ({types}) -> {x.type}',
                x.shape,
                x.dtype,
            )

        if dtype.itemsize < 4:  # f16/bf16: in f32
            widened = [convert(e, a, np.float32) for a in args]
            return [convert(e, call(*widened), dtype)]
        return [call(*args)]

    return lower


for _name in _LIBDEVICE:
    rule(_name)(_libdevice(_name))


@rule("neg")
def _neg(kctx: KernelContext, eqn, x: Value) -> list:
    e = kctx.emitter
    if is_float(x.dtype):
        return [e.op(f"arith.negf {x.name} : {x.type}", x.shape, x.dtype)]
    zero = e.constant(0, x.dtype, x.shape)
    return [e.op(f"arith.subi {zero.name}, {x.name} : {x.type}", x.shape, x.dtype)]


@rule("abs")
def _abs(kctx: KernelContext, eqn, x: Value) -> list:
    op = "math.absf" if is_float(x.dtype) else "math.absi"
    if is_unsigned(x.dtype):
        return [x]
    return [kctx.emitter.op(f"{op} {x.name} : {x.type}", x.shape, x.dtype)]


@rule("not")
def _not(kctx: KernelContext, eqn, x: Value) -> list:
    ones = kctx.emitter.constant(True if x.dtype == np.bool_ else -1, x.dtype, x.shape)
    return [kctx.emitter.op(f"arith.xori {x.name}, {ones.name} : {x.type}", x.shape, x.dtype)]


@rule("sign")
def _sign(kctx: KernelContext, eqn, x: Value) -> list:
    # (x > 0) - (x < 0), in x's dtype (NaN gives 0 here, JAX gives NaN; rare in kernels)
    e = kctx.emitter
    zero = e.constant(0, x.dtype, x.shape)
    kind = kind_index(x.dtype)
    cmp = "arith.cmpf" if kind == 0 else "arith.cmpi"
    gt = e.op(f"{cmp} {_COMPARE['gt'][kind]}, {x.name}, {zero.name} : {x.type}", x.shape, np.bool_)
    lt = e.op(f"{cmp} {_COMPARE['lt'][kind]}, {x.name}, {zero.name} : {x.type}", x.shape, np.bool_)
    pos, neg = convert(e, gt, x.dtype), convert(e, lt, x.dtype)
    sub = "arith.subf" if kind == 0 else "arith.subi"
    return [e.op(f"{sub} {pos.name}, {neg.name} : {x.type}", x.shape, x.dtype)]


@rule("logistic")
def _logistic(kctx: KernelContext, eqn, x: Value) -> list:
    e = kctx.emitter

    def sigmoid(v: Value) -> Value:  # 1 / (1 + exp(-v))
        neg = e.op(f"arith.negf {v.name} : {v.type}", v.shape, v.dtype)
        exp = e.op(f"math.exp {neg.name} : {v.type}", v.shape, v.dtype)
        one = e.constant(1.0, v.dtype, v.shape)
        den = e.op(f"arith.addf {one.name}, {exp.name} : {v.type}", v.shape, v.dtype)
        return e.op(f"arith.divf {one.name}, {den.name} : {v.type}", v.shape, v.dtype)

    return [_in_f32(kctx, x, sigmoid)]


@rule("square")
def _square(kctx: KernelContext, eqn, x: Value) -> list:
    op = "arith.mulf" if is_float(x.dtype) else "arith.muli"
    return [kctx.emitter.op(f"{op} {x.name}, {x.name} : {x.type}", x.shape, x.dtype)]


@rule("integer_pow")
def _integer_pow(kctx: KernelContext, eqn, x: Value) -> list:
    """``x ** y`` for a static integer ``y``, by repeated squaring (as XLA expands it)."""
    e = kctx.emitter
    y = eqn.params["y"]
    mul = "arith.mulf" if is_float(x.dtype) else "arith.muli"
    result, base, n = None, x, abs(y)
    while n:
        if n & 1:
            result = (
                base
                if result is None
                else e.op(f"{mul} {result.name}, {base.name} : {x.type}", x.shape, x.dtype)
            )
        n >>= 1
        if n:
            base = e.op(f"{mul} {base.name}, {base.name} : {x.type}", x.shape, x.dtype)
    if result is None:
        result = e.constant(1, x.dtype, x.shape)
    if y < 0:
        if not is_float(x.dtype):
            raise kctx.fail("integer_pow", "a negative power of an integer")
        one = e.constant(1.0, x.dtype, x.shape)
        result = e.op(f"arith.divf {one.name}, {result.name} : {x.type}", x.shape, x.dtype)
    return [result]


@rule("is_finite")
def _is_finite(kctx: KernelContext, eqn, x: Value) -> list:
    e = kctx.emitter
    magnitude = e.op(f"math.absf {x.name} : {x.type}", x.shape, x.dtype)
    inf = e.constant(np.inf, x.dtype, x.shape)
    return [e.op(f"arith.cmpf olt, {magnitude.name}, {inf.name} : {x.type}", x.shape, np.bool_)]


def select(kctx: KernelContext, pred: Value, on_true: Value, on_false: Value) -> Value:
    """``arith.select``: elementwise when ``pred`` is a tensor."""
    types = f"{pred.type}, {on_true.type}" if pred.shape else on_true.type
    return kctx.emitter.op(
        f"arith.select {pred.name}, {on_true.name}, {on_false.name} : {types}",
        on_true.shape,
        on_true.dtype,
    )


@rule("select_n")
def _select_n(kctx: KernelContext, eqn, which: Value, *cases: Value) -> list:
    """``cases[which]``: a bool picks case 1 when true; an integer index is compared with each
    case number in turn, the last case taking every larger index."""
    e = kctx.emitter
    shape = tuple(eqn.outvars[0].aval.shape)
    cases = [broadcast_to(e, c, shape) for c in cases]
    which = broadcast_to(e, which, shape)
    if which.dtype == np.bool_:
        return [select(kctx, which, cases[1], cases[0]) if len(cases) == 2 else cases[0]]
    result = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        index = e.constant(i, which.dtype, shape)
        is_i = e.op(f"arith.cmpi eq, {which.name}, {index.name} : {which.type}", shape, np.bool_)
        result = select(kctx, is_i, cases[i], result)
    return [result]


@rule("convert_element_type")
def _convert_element_type(kctx: KernelContext, eqn, x: Value) -> list:
    return [convert(kctx.emitter, x, eqn.params["new_dtype"])]


@rule("clamp")
def _clamp(kctx: KernelContext, eqn, lo: Value, x: Value, hi: Value) -> list:
    lo, x, hi = _same_shape(kctx, eqn, (lo, x, hi))
    kind = kind_index(x.dtype)
    e = kctx.emitter
    low = e.op(f"{BINARY_OPS['max'][kind]} {x.name}, {lo.name} : {x.type}", x.shape, x.dtype)
    return [e.op(f"{BINARY_OPS['min'][kind]} {low.name}, {hi.name} : {x.type}", x.shape, x.dtype)]
