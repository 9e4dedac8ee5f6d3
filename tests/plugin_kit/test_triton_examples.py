"""The example kernels of examples/kernels (forward and backward) through the Triton
lowering: every kernel's module verifies and compiles to PTX (where the CUDA wheels are), and
whole programs whose pallas_calls run as their Triton modules (by the test interpreter) give
what interpret mode gives."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxlib")

import ember
from ember_plugin_kit.triton import bytecode, lower_kernel
from tests.plugin_kit import triton_kernels, ttir_interpreter

_CALLS = ("jit", "custom_vjp_call", "custom_jvp_call")
_CALL_JAXPRS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


def _sub_jaxpr(eqn):
    for param in _CALL_JAXPRS:
        if param in eqn.params:
            return eqn.params[param]
    return None


def evaluate_with_triton(closed, *args, reverse=False):
    """``closed`` evaluated on the reference backend, except that every pallas_call runs as
    its Triton module (and calls around them are entered); ``reverse`` runs each grid's
    programs in the opposite order."""
    return _evaluate(closed.jaxpr, closed.consts, args, reverse)


def _evaluate(jaxpr, consts, args, reverse):
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom):
        return atom.val if hasattr(atom, "val") else env[atom]

    for eqn in jaxpr.eqns:
        values = [read(a) for a in eqn.invars]
        sub = _sub_jaxpr(eqn)
        if eqn.primitive.name == "pallas_call":
            call = eqn.params["call"]
            outs = ttir_interpreter.run_call(call, *map(np.asarray, values), reverse=reverse)
        elif eqn.primitive.name in _CALLS and sub is not None:
            jaxpr_, consts_ = getattr(sub, "jaxpr", sub), getattr(sub, "consts", ())
            outs = _evaluate(jaxpr_, consts_, values, reverse)
        else:
            outs = eqn.primitive.bind(*values, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [np.asarray(read(a)) for a in jaxpr.outvars]


def pallas_calls(closed):
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pallas_call":
                found.append(eqn.params["call"])
            sub = _sub_jaxpr(eqn)
            if sub is not None:
                walk(getattr(sub, "jaxpr", sub))

    walk(closed.jaxpr)
    return found


PROGRAMS = triton_kernels.example_programs()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_example_kernels_lower_verify_and_compile(name):
    make, args = PROGRAMS[name]
    calls = pallas_calls(ember.make_jaxpr(make(False))(*args))
    assert calls
    for call in calls:
        text = lower_kernel(call).text
        bytecode.verify(text)
        if bytecode.cuda_compiler_available():
            bytecode.compile_to_ptx(bytecode.to_bytecode(text))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_example_programs_compute_what_interpret_mode_does(name):
    make, args = PROGRAMS[name]
    closed = ember.make_jaxpr(make(False))(*args)
    expected = ember.tree_util.tree_leaves(make(True)(*args))
    # A GPU runs a grid's programs in any order; only the grid-k matmul depends on it.
    orders = [False] if name == "matmul" else [False, True]
    for reverse in orders:
        got = evaluate_with_triton(closed, *args, reverse=reverse)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, np.asarray(e), rtol=2e-4, atol=2e-4)


def test_the_matmul_example_depends_on_the_order_of_its_k_steps():
    # examples/kernels/matmul.py accumulates over a grid axis, which its doc says a GPU does
    # not run in order: run backwards, the k == 0 step zeroes what the others added.
    make, (x, y) = PROGRAMS["matmul"]
    (call,) = pallas_calls(ember.make_jaxpr(make(False))(x, y))
    (forwards,) = ttir_interpreter.run_call(call, x, y)
    (backwards,) = ttir_interpreter.run_call(call, x, y, reverse=True)
    np.testing.assert_allclose(forwards, x @ y, rtol=2e-4, atol=2e-4)
    assert not np.allclose(backwards, x @ y, rtol=2e-4, atol=2e-4)
