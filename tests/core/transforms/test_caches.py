"""ember.clear_caches: every jitted function and eager operation traces and compiles again."""

import numpy as np

import ember
import ember.numpy as enp


def _compiles(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if "compiling" in line]


def test_next_calls_recompile(capsys):
    x = enp.asarray(np.arange(4, dtype=np.float32))
    f = ember.jit(lambda a: a * 3)
    with ember.config.option("log_compiles", True):
        f(x)
        enp.sin(x)
        capsys.readouterr()
        f(x)
        enp.sin(x)
        assert _compiles(capsys) == []  # both cached
        ember.clear_caches()
        out = f(x)
        enp.sin(x)
        lines = _compiles(capsys)
    assert len(lines) == 2
    assert "jit_<lambda>" in lines[0] and "sin" in lines[1]
    np.testing.assert_allclose(np.asarray(out), [0, 3, 6, 9])


def test_numpy_composites_are_cleared_too(capsys):
    x = enp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    enp.mean(x, axis=0)  # one of ember.numpy's compiled composites
    ember.clear_caches()
    with ember.config.option("log_compiles", True):
        out = enp.mean(x, axis=0)
    assert _compiles(capsys)
    np.testing.assert_allclose(np.asarray(out), [1.5, 2.5, 3.5])
