"""Asking a GPU driver a question with a deadline.

A wedged driver (a GPU fallen off the bus, a hung kernel module) can block its first call
indefinitely; the question runs on a helper thread, and the caller gets an error at the
deadline instead of a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def call_within(
    ask: Callable[[], T],
    timeout_s: float,
    *,
    error: type[Exception],
    timeout_message: str,
    thread_name: str = "ember-gpu-driver-probe",
) -> T:
    """``ask()``'s answer, re-raising the ``error`` it raised, or ``error(timeout_message)``
    when it has not returned within ``timeout_s`` seconds. Any other exception from ``ask``
    propagates as it is."""
    answer: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            answer.append(ask())
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    # A daemon thread: if the driver never returns, the process can still exit.
    thread = threading.Thread(target=run, name=thread_name, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if failure:
        raise failure[0]
    if not answer:
        raise error(timeout_message)
    return answer[0]
