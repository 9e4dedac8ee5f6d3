"""The tests mirror the source (tests/README.md): ``tests/core/<package>/test_<name>.py`` tests
``core/src/ember/_src/<package>/<name>.py`` (or the package ``<package>/<name>/``), and
``tests/core/test_<name>.py`` a module at the top of ``_src``. A suite named after a module
that was renamed, split or moved fails here, so its tests follow the code they check."""

from __future__ import annotations

import pathlib

TESTS = pathlib.Path(__file__).resolve().parent
SRC = TESTS.parents[1] / "core" / "src" / "ember" / "_src"

# Suites about the whole core, at the top of tests/core/ (tests/README.md lists them).
WHOLE_CORE_SUITES = {
    "test_cli.py",
    "test_differential.py",
    "test_layering.py",
    "test_layout_of_tests.py",
    "test_no_jax.py",
    "test_primitive_rules.py",
    "test_readme.py",
}

# Suites inside a package named after what they check across its modules, with the reason.
# Keep this short: a suite about one module is named after that module.
EXCEPTIONS = {
    "lax/test_signatures.py": "JAX's parameter names and keywords, across every lax module",
    "numpy/test_signatures.py": "JAX's keyword parameters, across every ember.numpy module",
    "scipy/test_signatures.py": "JAX's signatures of ember.scipy, ember.image and lax.linalg",
    "numpy/test_elementwise_dtypes.py": "elementwise.py's second suite: dtypes and special values",
    "numpy/test_index_dtypes.py": "the index dtype of every index-returning function, JAX's",
    "nn/test_functions_activations.py": "functions.py's second suite: the other activations",
}


def _module_exists(relative: pathlib.PurePath) -> bool:
    """``relative`` is ``<package>/<name>`` (or ``<name>``) under ``_src``."""
    target = SRC / relative
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def _mismatches() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        relative = path.relative_to(TESTS)
        key = relative.as_posix()
        if (len(relative.parts) == 1 and key in WHOLE_CORE_SUITES) or key in EXCEPTIONS:
            continue
        module = relative.with_name(relative.name.removeprefix("test_")).with_suffix("")
        if not _module_exists(module):
            found.append(f"tests/core/{key} (no _src/{module.as_posix()}.py)")
    return found


def test_every_suite_is_named_after_a_source_module():
    assert not _mismatches(), (
        "rename or split these suites after the modules they test (tests/README.md):\n"
        + "\n".join(_mismatches())
    )


def test_exceptions_name_suites_that_exist_and_do_not_mirror_a_module():
    for key in EXCEPTIONS:
        path = TESTS / key
        assert path.is_file(), f"stale exception: tests/core/{key} is gone"
        module = pathlib.PurePath(key)
        module = module.with_name(module.name.removeprefix("test_")).with_suffix("")
        assert not _module_exists(module), f"tests/core/{key} mirrors a module: drop its exception"
    for name in WHOLE_CORE_SUITES:
        assert (TESTS / name).is_file(), f"stale whole-core suite: tests/core/{name} is gone"
