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
    group.addoption(
        "--ember-config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set an ember option before the backend starts, e.g. cpu_device_count=8 so that "
        "the multi-device checks run (repeatable)",
    )
    group.addoption(
        "--ember-skip-unavailable",
        action="store_true",
        default=False,
        help="skip the suite, with the platform's reason, when its backend cannot start here "
        "(a plugin whose hardware this machine lacks); without it that is an error",
    )


def _apply_config(settings: list[str]) -> None:
    import ember  # noqa: PLC0415 - only runs that use the suite pay for importing ember

    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or not name:
            raise pytest.UsageError(f"--ember-config expects NAME=VALUE, got {setting!r}")
        ember.config.update(name.strip(), _parse(value.strip()))


def _parse(value: str):
    """Integers and booleans as such; anything else stays a string."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(value)
    except ValueError:
        return value


@pytest.fixture(scope="session")
def ember_platform(request: pytest.FixtureRequest) -> str:
    import ember  # noqa: PLC0415 - only runs that use the suite pay for importing ember

    _apply_config(request.config.getoption("--ember-config"))
    name = request.config.getoption("--ember-platform")
    try:
        return ember.devices(name)[0].platform if name else ember.default_backend()
    except ember.errors.BackendError as exc:
        if not request.config.getoption("--ember-skip-unavailable"):
            raise
        pytest.skip(f"platform {name or 'default'} cannot start here: {exc}")


@pytest.fixture(scope="session")
def platform_device(ember_platform: str):
    import ember  # noqa: PLC0415

    return ember.devices(ember_platform)[0]


@pytest.fixture(scope="session")
def platform_devices(ember_platform: str):
    """Every device of the platform; the multi-device checks skip with fewer than two."""
    import ember  # noqa: PLC0415

    devices = ember.devices(ember_platform)
    if len(devices) < 2:
        pytest.skip(
            f"{ember_platform} has one device: give it more (e.g. --ember-config "
            f"{ember_platform}_device_count=8) to run the multi-device checks"
        )
    return devices


@pytest.fixture(scope="session")
def numpy_device():
    import ember  # noqa: PLC0415

    return ember.devices("reference")[0]
