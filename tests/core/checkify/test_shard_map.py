"""checkify inside a shard_map body on one device (tests/sharding/test_checkify.py has 8):
the body is checked, its error comes out merged into the state."""

import numpy as np

import ember
import ember.numpy as enp
from ember.experimental import checkify
from ember.sharding import PartitionSpec as P


def _mapped():
    mesh = ember.make_mesh((1,), ("x",))

    def body(v):
        checkify.check(enp.all(v > 0), "non-positive in {}", v)
        return enp.sqrt(v)

    return ember.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))


def test_the_body_is_checked_eagerly_and_under_jit():
    for checked in (checkify.checkify(_mapped()), ember.jit(checkify.checkify(_mapped()))):
        err, out = checked(np.array([4.0, 9.0], np.float32))
        assert err.get() is None
        np.testing.assert_allclose(np.asarray(out), [2.0, 3.0])
        err, _ = checked(np.array([4.0, -9.0], np.float32))
        assert err.get().startswith("non-positive in [ 4. -9.] (`check` failed at ")


def test_the_checked_jaxpr_stacks_the_state_over_the_devices():
    jaxpr = ember.make_jaxpr(checkify.checkify(_mapped()))(np.ones(2, np.float32))
    (eqn,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "shard_map"]
    n_state = len(eqn.outvars) - 1
    assert n_state == 2  # the code and the check's payload slot
    assert [v.aval.shape for v in eqn.outvars[:n_state]] == [(1,), (1, 2)]
    assert all(s == P(("x",)) for s in eqn.params["out_specs"][:n_state])
