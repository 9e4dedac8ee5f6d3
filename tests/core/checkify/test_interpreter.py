"""The interpreter: unchecked primitives run as they are; bodies are padded to one state."""

import numpy as np

import ember
import ember.numpy as enp
from ember._src.checkify.check import user_site
from ember._src.checkify.error import all_checks
from ember._src.checkify.interpreter import checkify_jaxpr, jaxpr_body, pad_for
from ember._src.checkify.state import ErrorState


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
