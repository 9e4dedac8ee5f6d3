"""The pytest plugin behind the conformance suite (entry point ``pytest11``).

It only adds the ``--ember-platform`` option and the fixtures the suite uses; loading it costs
nothing in a test run that does not use them (ember is imported on first use of a fixture).
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ember", "ember backend conformance")
    group.addoption(
        "--ember-platform",
        default=None,
        help="platform to check with ember_plugin_kit.conformance (default: ember's default)",
    )


@pytest.fixture(scope="session")
def ember_platform(request: pytest.FixtureRequest) -> str:
    import ember  # noqa: PLC0415 - only runs that use the suite pay for importing ember

    name = request.config.getoption("--ember-platform")
    return ember.devices(name)[0].platform if name else ember.default_backend()


@pytest.fixture(scope="session")
def platform_device(ember_platform: str):
    import ember  # noqa: PLC0415

    return ember.devices(ember_platform)[0]


@pytest.fixture(scope="session")
def numpy_device():
    import ember  # noqa: PLC0415

    return ember.devices("reference")[0]
