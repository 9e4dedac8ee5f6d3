"""The interpreter: unchecked primitives run as they are; bodies are padded to one state."""

import numpy as np

import ember
import ember.numpy as enp
from ember import lax
from ember._src.checkify.check import user_site
from ember._src.checkify.error import all_checks
from ember._src.checkify.interpreter import checkify_jaxpr, jaxpr_body, pad_for
from ember._src.checkify.state import ErrorState
from ember.experimental import checkify, io_callback

SCALAR = ember.ShapeDtypeStruct((), np.float32)


def test_a_jaxpr_without_checks_evaluates_to_its_outputs_and_no_error():
    closed = ember.make_jaxpr(lambda x: (enp.cumsum(x) * 2, x.argmax()))(enp.arange(4.0))
    state = ErrorState.empty()
    outs = checkify_jaxpr(closed.jaxpr, closed.consts, state, all_checks, [enp.arange(4.0)])
    np.testing.assert_array_equal(outs[0], [0.0, 2.0, 6.0, 12.0])
    assert int(outs[1]) == 3
    assert state.to_error().get() is None


def test_pad_for_gives_the_state_every_slot_a_body_adds():
    adding = ember.make_jaxpr(lambda x: x + 1.0)(np.float32(1.0))
    state = ErrorState.empty()
    pad_for(state, [jaxpr_body(adding, all_checks)], adding.in_avals)
    assert state.keys() == []  # an addition checks nothing here: nothing to pad

    def checking(state, args):
        (x,) = args
        site, payload = user_site("{} and {}", (x, enp.stack([x, x])), {})
        state.record(x <= 0, site, payload)
        return [x]

    pad_for(state, [checking], adding.in_avals)
    assert state.keys() == [(((), "float32"), ((2,), "float32"))]
    np.testing.assert_array_equal(state.slots[state.keys()[0]][1], [0.0, 0.0])


# -- effects pass through: debug.print, debug.callback and io_callback keep running ------------


def _effectful(seen):
    def f(x):
        ember.debug.print("x = {}", x)
        ember.debug.callback(lambda v: seen.append(("callback", float(v))), x)
        y = io_callback(lambda v: (seen.append(("io", float(v))), v + 1)[1], SCALAR, x)
        checkify.check(x > 0, "x must be positive, got {}", x)
        return y * 2.0

    return f


def _printed(capsys) -> list[str]:
    ember.effects_barrier()
    return capsys.readouterr().out.splitlines()


def test_the_checked_jaxpr_keeps_every_effectful_equation():
    jaxpr = ember.make_jaxpr(checkify.checkify(_effectful([])))(np.float32(1.0))
    names = [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns]
    assert names[:3] == ["debug_callback", "debug_callback", "io_callback"]
    assert "check" not in names  # functionalized


def test_effects_run_under_jit_of_checkify(capsys):
    seen = []
    f = ember.jit(checkify.checkify(_effectful(seen)))
    err, out = f(np.float32(3.0))
    assert err.get() is None and float(out) == 8.0
    err, out = f(np.float32(-1.0))  # the cached program: the effects run again
    assert err.get().startswith("x must be positive, got -1.0") and float(out) == 0.0
    assert _printed(capsys) == ["x = 3.0", "x = -1.0"]
    assert seen == [("callback", 3.0), ("io", 3.0), ("callback", -1.0), ("io", -1.0)]


def test_effects_run_under_checkify_of_jit(capsys):
    seen = []
    err, out = checkify.checkify(ember.jit(_effectful(seen)))(np.float32(-2.0))
    assert err.get().startswith("x must be positive, got -2.0") and float(out) == -2.0
    assert _printed(capsys) == ["x = -2.0"]
    assert seen == [("callback", -2.0), ("io", -2.0)]


def test_effects_run_once_per_lane_under_vmap(capsys):
    seen = []
    err, out = ember.vmap(checkify.checkify(_effectful(seen)))(enp.asarray([1.0, -2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(out), [4.0, -2.0, 8.0])
    assert err.get().startswith("at mapped index 1: x must be positive, got -2.0")
    assert sorted(_printed(capsys)) == ["x = -2.0", "x = 1.0", "x = 3.0"]
    assert sorted(seen) == sorted(
        [(kind, v) for kind in ("callback", "io") for v in (1.0, -2.0, 3.0)]
    )


def test_effects_inside_a_checked_loop_run_every_step(capsys):
    def f(x):
        def step(i, c):
            ember.debug.print("step {} carry {}", i, c)
            checkify.check(c < 4.0, "carry {} too big", c)
            return c * 2.0

        return lax.fori_loop(0, 3, step, x)

    err, out = ember.jit(checkify.checkify(f))(np.float32(1.0))
    assert err.get().startswith("carry 4.0 too big") and float(out) == 8.0
    assert _printed(capsys) == ["step 0 carry 1.0", "step 1 carry 2.0", "step 2 carry 4.0"]
