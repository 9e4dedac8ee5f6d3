"""Pallas kernels lowered to Triton-dialect modules (``ember_plugin_kit.triton``): the modules
verify with jaxlib's MLIR bindings and, where the CUDA plugin's wheels are installed, compile
to PTX for sm_90 without a GPU. Running them is test_triton_gpu.py's job."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
import ember.experimental.pallas as pl
import ember.numpy as enp
from ember import lax
from ember_plugin_kit.triton import bytecode, lower_kernel
from ember_plugin_kit.triton.custom_call import bytes_literal
from ember_plugin_kit.triton.emitter import float_literal, scalar_literal
from tests.plugin_kit import triton_kernels, ttir_interpreter

needs_ptx_compiler = pytest.mark.skipif(
    not bytecode.cuda_compiler_available(),
    reason="the CUDA PJRT plugin's wheels (jax-cuda12-plugin, jax-cuda12-pjrt) are not installed",
)

CASES = triton_kernels.cases()

# What each kernel's module must contain besides loads and stores.
EXPECTED_OPS = {
    "add": ["tt.get_program_id x", "tt.load %v", "arith.addf"],
    "matmul": ["tt.get_program_id y", "scf.for", "tt.dot", "iter_args"],
    "softmax": ['"tt.reduce"', "arith.maximumf", "math.exp", "arith.divf"],
    "flash_attention": ["scf.for", "tt.trans", "tt.dot", "math.exp", '"tt.reduce"'],
    "masked_sum": ["tt.atomic_rmw fadd, acq_rel, gpu", "arith.cmpi slt"],
    "scratch_sum": ["scf.for", "scf.if", "arith.addf"],
    "rope": ["tt.split", "tt.join", "tt.trans"],
}


def pallas_call_of(fn, *args):
    """The ``PallasCall`` of the one pallas_call ``fn(*args)`` makes."""
    closed = ember.make_jaxpr(fn)(*args)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "pallas_call"]
    return eqn.params["call"]


def checked_text(call):
    """The Triton module text of ``call``, after checking it verifies and (where the CUDA
    plugin's wheels are installed) compiles to PTX."""
    kernel = lower_kernel(call)
    bytecode.verify(kernel.text)
    if bytecode.cuda_compiler_available():
        ptx = bytecode.compile_to_ptx(bytecode.to_bytecode(kernel.text))
        assert f".entry {kernel.name}(" in ptx
    return kernel.text


def lowered(name):
    fn, args, _ = CASES[name]
    return lower_kernel(pallas_call_of(fn, *args))


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_lowers_to_a_triton_module_that_verifies(name):
    kernel = lowered(name)
    printed = bytecode.verify(kernel.text)
    assert f"tt.func public @{kernel.name}(" in printed
    for op in EXPECTED_OPS[name]:
        assert op in kernel.text, op
    assert "tt.store" in kernel.text or "tt.atomic_rmw" in kernel.text


@needs_ptx_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_compiles_to_ptx_without_a_gpu(name):
    fn, args, _ = CASES[name]
    call = pallas_call_of(fn, *args)
    kernel = lower_kernel(call)
    ptx = bytecode.compile_to_ptx(bytecode.to_bytecode(kernel.text), arch="9.0", num_warps=4)
    assert ".target sm_90a" in ptx
    entry = re.search(rf"\.visible \.entry {kernel.name}\((.*?)\)", ptx, re.S)
    assert entry is not None
    # One pointer per input and output, then Triton's two scratch pointers.
    assert entry.group(1).count(".param .u64") == len(call.block_mappings) + 2
    if name in ("matmul", "flash_attention"):
        assert "mma" in ptx  # tensor cores
    if name == "masked_sum":
        assert "atom.global" in ptx or "red.global" in ptx


def test_block_offsets_come_from_the_index_maps():
    kernel = lowered("matmul")  # x block (32, 64) at (i, 0); y (64, 32) at (0, j); o at (i, j)
    assert kernel.grid == (2, 2, 1)
    assert kernel.text.count("tt.get_program_id x") == 1
    assert kernel.text.count("tt.get_program_id y") == 1
    assert "arith.constant 32 : i32" in kernel.text  # block index * block size


def test_only_blocks_that_overhang_their_array_are_masked():
    add = lowered("add").text  # 1000 elements in blocks of 256: the last block overhangs
    assert re.search(r"tt\.load %v\d+, %v\d+, %v\d+ :", add)
    assert re.search(r"tt\.store %v\d+, %v\d+, %v\d+ :", add)
    softmax = lowered("softmax").text  # (16, 128) in blocks of (4, 128): no edge
    assert re.search(r"tt\.load %v\d+ :", softmax)
    assert not re.search(r"tt\.load %v\d+, ", softmax)


def _call(kernel, out_shape, *args, grid=(1,), in_specs=None, out_specs=None):
    kw = {}
    if in_specs is not None:
        kw = {"in_specs": in_specs, "out_specs": out_specs}
    return pallas_call_of(pl.pallas_call(kernel, out_shape=out_shape, grid=grid, **kw), *args)


def _struct(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


def test_loop_with_traced_bounds_becomes_scf_while():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = lax.fori_loop(0, pl.program_id(0) + 1, lambda i, v: v * 2.0, x)

    spec = pl.BlockSpec((64,), lambda i: (i,))
    call = _call(
        kernel,
        _struct((128,)),
        np.ones(128, np.float32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    text = checked_text(call)
    assert "scf.while" in text and "scf.condition" in text
    (result,) = ttir_interpreter.run_call(call, np.ones(128, np.float32))
    np.testing.assert_array_equal(result, [2.0] * 64 + [4.0] * 64)  # program i doubles i+1 times


def test_cond_becomes_scf_if():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = lax.cond(pl.program_id(0) == 0, lambda v: v * 2.0, lambda v: -v, x)

    spec = pl.BlockSpec((64,), lambda i: (i,))
    call = _call(
        kernel,
        _struct((128,)),
        np.ones(128, np.float32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    text = checked_text(call)
    assert "scf.if" in text and "arith.negf" in text
    (result,) = ttir_interpreter.run_call(call, np.ones(128, np.float32))
    np.testing.assert_array_equal(result, [2.0] * 64 + [-1.0] * 64)


def test_dtypes_bools_in_bytes_half_math_in_f32_unsigned_compare():
    def kernel(x_ref, u_ref, h_ref, b_ref, y_ref):
        b_ref[...] = (x_ref[...] > 0) & (u_ref[...] < 7)
        y_ref[...] = enp.exp(h_ref[...])

    x = np.arange(-32, 32, dtype=np.int32)
    u = np.arange(64, dtype=np.uint32) + np.uint32(2**32 - 16)  # the first 16 wrap past 0
    h = np.linspace(-2, 2, 64).astype(np.float16)
    call = _call(kernel, (_struct((64,), np.bool_), _struct((64,), np.float16)), x, u, h)
    text = checked_text(call)
    assert "!tt.ptr<i8>" in text  # a bool array is bytes in memory
    assert "arith.cmpi ult" in text and "arith.cmpi sgt" in text
    assert re.search(r"arith\.extf .* to tensor<64xf32>\n.*math\.exp .*tensor<64xf32>", text)
    b, y = ttir_interpreter.run_call(call, x, u, h)
    np.testing.assert_array_equal(b, (x > 0) & (u < 7))
    np.testing.assert_allclose(y, np.exp(h.astype(np.float32)).astype(np.float16), rtol=1e-3)


def test_iota_broadcast_reshape_reductions_and_casts():
    def kernel(x_ref, o_ref, m_ref):
        x = x_ref[...]  # (16, 32)
        cols = lax.broadcasted_iota(enp.int32, (16, 32), 1).astype(enp.float32)
        y = enp.where(x > cols, x, cols)
        o_ref[...] = y.sum(axis=0)[None, :] + y.max()
        m_ref[...] = enp.min(x, axis=1).astype(enp.int32)

    x = np.random.default_rng(0).uniform(-40, 40, (16, 32)).astype(np.float32)
    call = _call(kernel, (_struct((1, 32)), _struct((16,), np.int32)), x)
    text = checked_text(call)
    for op in ("tt.make_range", "tt.broadcast", "arith.select", "arith.minimumf", "arith.fptosi"):
        assert op in text, op
    o, m = ttir_interpreter.run_call(call, x)
    y = np.maximum(x, np.arange(32, dtype=np.float32))
    np.testing.assert_allclose(o, y.sum(axis=0)[None, :] + y.max(), rtol=1e-6)
    np.testing.assert_array_equal(m, x.min(axis=1).astype(np.int32))


def test_unsupported_primitive_is_named_with_the_kernel():
    def sorting_kernel(x_ref, o_ref):
        o_ref[...] = enp.sort(x_ref[...])

    call = _call(sorting_kernel, _struct((64,)), np.ones(64, np.float32))
    with pytest.raises(
        NotImplementedError,
        match=r"'sort' in Pallas kernel 'sorting_kernel' is not supported by the Triton "
        r"lowering \(at .*test_triton_lowering.py:\d+ \(sorting_kernel\)\); use interpret=True",
    ):
        lower_kernel(call)


def test_blocks_must_be_powers_of_two():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = pl.BlockSpec((100,), lambda i: (i,))
    call = _call(
        kernel,
        _struct((200,)),
        np.ones(200, np.float32),
        grid=(2,),
        in_specs=[spec],
        out_specs=spec,
    )
    with pytest.raises(NotImplementedError, match=r"power-of-two.*\(100,\)"):
        lower_kernel(call)


def test_grids_of_more_than_three_axes_fold_their_leading_axes_into_x():
    # Each program writes its four grid indices into its own row.
    def kernel(o_ref):
        for axis in range(4):
            o_ref[0, 0, 0, axis] = pl.program_id(axis)

    spec = pl.BlockSpec((1, 1, 1, 4), lambda a, b, c, d: (a * 3 + b, c, d, 0))
    call = _call(
        kernel, _struct((6, 4, 5, 4), np.int32), grid=(2, 3, 4, 5), in_specs=[], out_specs=spec
    )
    assert lower_kernel(call).grid == (6, 4, 5)
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call)
    a, b, c, d = np.meshgrid(*map(np.arange, (2, 3, 4, 5)), indexing="ij")
    expected = np.stack([a, b, c, d], axis=-1).reshape(6, 4, 5, 4)
    np.testing.assert_array_equal(result, expected)


def test_grid_axes_past_cuda_limits_are_refused():
    def kernel(o_ref):
        o_ref[...] = enp.zeros(o_ref.shape, o_ref.dtype)

    spec = pl.BlockSpec((16,), lambda i, j: (i,))
    call = _call(kernel, _struct((16,)), grid=(1, 70000), in_specs=[], out_specs=spec)
    with pytest.raises(NotImplementedError, match="at most 65535"):
        lower_kernel(call)


def test_small_dots_are_refused_with_the_reason():
    def kernel(x_ref, o_ref):
        o_ref[...] = pl.dot(x_ref[...], x_ref[...])

    call = _call(kernel, _struct((8, 8)), np.ones((8, 8), np.float32))
    with pytest.raises(NotImplementedError, match=">= 16"):
        lower_kernel(call)


def test_literals_are_exact():
    assert float_literal(np.inf, np.float32) == "0x7F800000"
    assert float_literal(-0.0, np.float32) == "0x80000000"
    assert float_literal(1.0, np.float16) == "0x3C00"
    assert scalar_literal(4294967295, np.uint32) == "-1"  # signless: the same bits
    assert scalar_literal(True, np.bool_) == "true"
    assert bytes_literal(b'a"\\\x00\xff') == '"a\\22\\5C\\00\\FF"'


def test_partial_kernels_get_a_valid_symbol_name():
    kernel = lower_kernel(pallas_call_of(*CASES["matmul"][:1], *CASES["matmul"][1]))
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kernel.name)


def test_kernel_without_refs_written_by_atomics_keeps_its_mask():
    text = lowered("masked_sum").text
    # pl.load's mask (offsets < n) guards the read; the atomic has an all-true mask.
    assert "arith.constant true" in text
    assert functools.reduce(lambda n, op: n + text.count(op), ["tt.load"], 0) == 1


ELEMENTWISE = {
    "exp": enp.exp,
    "log": enp.log,
    "log1p": enp.log1p,
    "expm1": enp.expm1,
    "sqrt": enp.sqrt,
    "rsqrt": lax.rsqrt,
    "tanh": enp.tanh,
    "sin": enp.sin,
    "tan": enp.tan,
    "arcsinh": enp.arcsinh,
    "floor": enp.floor,
    "round": enp.round,
    "pow": lambda x: x**x,
    "arctan2": lambda x: enp.arctan2(x, x),
    "sigmoid": lambda x: 1 / (1 + enp.exp(-x)),
    "sign": enp.sign,
    "remainder": lambda x: x % 3.0,
    "isfinite": lambda x: enp.where(enp.isfinite(x), x, 0.0),
    "cube": lambda x: x**3,
    "clip": lambda x: enp.clip(x, 0.0, 1.0),
    "half_tanh": lambda x: enp.tanh(x.astype(enp.float16)).astype(enp.float32),
    "int_ops": lambda x: ((x.astype(enp.int32) // 3) << 1 | 5).astype(enp.float32),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_functions_lower_and_compile(name):
    fn = ELEMENTWISE[name]

    def kernel(x_ref, o_ref):
        o_ref[...] = fn(x_ref[...])

    x = np.linspace(0.1, 0.9, 64, dtype=np.float32)
    call = _call(kernel, _struct((64,)), x)
    checked_text(call)
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_allclose(result, np.asarray(fn(enp.asarray(x))), rtol=2e-6, atol=1e-6)
    if bytecode.cuda_compiler_available():
        # Functions Triton does not lower itself come from libdevice, linked into the PTX.
        ptx = bytecode.compile_to_ptx(bytecode.to_bytecode(lower_kernel(call).text))
        assert ".extern .func" not in ptx


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_module_computes_the_numpy_answer(name):
    fn, args, expected = CASES[name]
    call = pallas_call_of(fn, *args)
    (result,) = ttir_interpreter.run_call(call, *args)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    # A GPU runs the programs in any order: the kernels must not depend on it.
    (backwards,) = ttir_interpreter.run_call(call, *args, reverse=True)
    np.testing.assert_allclose(backwards, expected, rtol=1e-5, atol=1e-5)


def test_squeezed_block_dims_and_a_three_axis_grid():
    # x: (batch 2, heads 2, 64, 16); each program scales one (head, 32-row) tile of one batch.
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * (pl.program_id(2) + 1).astype(enp.float32)

    spec = pl.BlockSpec((None, None, 32, 16), lambda b, h, i: (b, h, i, 0))
    x = np.arange(2 * 2 * 64 * 16, dtype=np.float32).reshape(2, 2, 64, 16)
    call = _call(kernel, _struct(x.shape), x, grid=(2, 2, 2), in_specs=[spec], out_specs=spec)
    assert lower_kernel(call).grid == (2, 2, 2)
    assert "tt.get_program_id z" in checked_text(call)
    (result,) = ttir_interpreter.run_call(call, x)
    scale = np.repeat([1.0, 2.0], 32)[None, None, :, None]
    np.testing.assert_array_equal(result, x * scale)


def test_when_writes_refs_in_one_branch():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        @pl.when(pl.program_id(0) == 1)
        def _():
            o_ref[...] = -x_ref[...]

    spec = pl.BlockSpec((64,), lambda i: (i,))
    x = np.arange(128, dtype=np.float32)
    call = _call(kernel, _struct((128,)), x, grid=(2,), in_specs=[spec], out_specs=spec)
    text = checked_text(call)
    assert "scf.if" in text
    (result,) = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(result, np.concatenate([x[:64], -x[64:]]))


def test_masked_store_and_integer_atomics():
    def kernel(x_ref, o_ref, m_ref):
        i = pl.program_id(0)
        offsets = i * 64 + enp.arange(64)
        x = pl.load(x_ref, pl.ds(i * 64, 64))
        pl.store(o_ref, pl.ds(i * 64, 64), x * 2, mask=offsets % 2 == 0)
        pl.atomic_max(m_ref, 0, enp.max(x))
        pl.atomic_xchg(m_ref, 1, i)

    x = np.random.default_rng(1).integers(-1000, 1000, 128).astype(np.int32)
    whole = pl.BlockSpec(memory_space=pl.ANY)
    call = _call(
        kernel,
        (_struct((128,), np.int32), _struct((2,), np.int32)),
        x,
        grid=(2,),
        in_specs=[whole],
        out_specs=[whole, whole],
    )
    text = checked_text(call)
    assert "tt.atomic_rmw max" in text and "tt.atomic_rmw exch" in text
    o, m = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(o, np.where(np.arange(128) % 2 == 0, x * 2, 0))
    assert m[0] == max(x.max(), 0) and m[1] == 1  # outputs start at zero here


def test_argmax_and_argmin_take_the_first_extreme_and_nan_wins():
    def kernel(x_ref, a_ref, b_ref):
        x = x_ref[...]
        a_ref[...] = enp.argmax(x, axis=1)
        b_ref[...] = enp.argmin(x, axis=0)

    x = np.random.default_rng(2).integers(0, 4, (16, 32)).astype(np.float32)  # many ties
    x[3, 7] = x[5, 0] = np.nan
    call = _call(kernel, (_struct((16,), np.int32), _struct((32,), np.int32)), x)
    checked_text(call)
    a, b = ttir_interpreter.run_call(call, x)
    np.testing.assert_array_equal(a, np.argmax(x, axis=1))
    np.testing.assert_array_equal(b, np.argmin(x, axis=0))


def test_atomic_compare_and_swap_claims_a_slot_once():
    # Every program tries to claim slot 0 (0 -> its id + 1); only the first succeeds, and
    # each program records the old value it saw.
    def kernel(slots_ref, seen_ref):
        i = pl.program_id(0)
        old = pl.atomic_cas(slots_ref, 0, i + 1)
        seen_ref[pl.ds(i, 1)] = enp.full((1,), old, enp.int32)

    whole = pl.BlockSpec(memory_space=pl.ANY)
    call = _call(
        kernel,
        _struct((4,), np.int32),
        np.zeros((), np.int32),
        grid=(4,),
        in_specs=[whole],
        out_specs=whole,
    )
    text = checked_text(call)
    assert "tt.atomic_cas acq_rel, gpu" in text
    (seen,) = ttir_interpreter.run_call(call, np.zeros((), np.int32))
    np.testing.assert_array_equal(seen, [0, 1, 1, 1])


@pytest.mark.parametrize(
    "dtype, preferred, out, precision",
    [
        (np.float16, None, np.float16, "ieee"),  # accumulates in f32, rounds once
        ("bfloat16", np.float32, np.float32, "ieee"),
        (np.int8, np.int32, np.int32, "ieee"),
        (np.float32, None, np.float32, "tf32"),  # Triton's default for f32, as JAX's
    ],
)
def test_dots_of_each_dtype(dtype, preferred, out, precision):
    dtype = np.dtype(dtype)

    def kernel(x_ref, y_ref, o_ref):
        product = lax.dot(x_ref[...], y_ref[...], preferred_element_type=preferred)
        o_ref[...] = product.astype(o_ref.dtype)

    rng = np.random.default_rng(3)
    x, y = rng.integers(-3, 4, (2, 32, 32)).astype(dtype)  # exact in every dtype here
    call = _call(kernel, _struct((32, 32), out), x, y)
    text = checked_text(call)
    assert f"inputPrecision = {precision}" in text
    (result,) = ttir_interpreter.run_call(call, x, y)
    np.testing.assert_array_equal(result, (x.astype(np.int64) @ y.astype(np.int64)).astype(out))


def test_running_sums_products_and_extremes_become_tt_scan():
    def kernel(x_ref, s_ref, p_ref, m_ref):
        x = x_ref[...]  # (16, 32)
        s_ref[...] = enp.cumsum(x, axis=1)
        p_ref[...] = lax.cumprod(x, 0, reverse=True)
        m_ref[...] = lax.cummax(x, 1) + lax.cummin(x, 0)

    x = np.random.default_rng(3).uniform(0.5, 1.5, (16, 32)).astype(np.float32)
    outs = (_struct((16, 32)), _struct((16, 32)), _struct((16, 32)))
    call = _call(kernel, outs, x)
    text = checked_text(call)
    assert text.count('"tt.scan"') == 4 and "reverse = true" in text
    s, p, m = ttir_interpreter.run_call(call, x)
    np.testing.assert_allclose(s, np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(p, np.cumprod(x[::-1], axis=0)[::-1], rtol=1e-5)
    want = np.maximum.accumulate(x, axis=1) + np.minimum.accumulate(x, axis=0)
    np.testing.assert_allclose(m, want, rtol=1e-6)
