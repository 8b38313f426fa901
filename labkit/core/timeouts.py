"""A call that the caller stops waiting for: what enforces a step timeout. A call that overruns keeps
running on its daemon thread (a ThreadPoolExecutor's is joined at exit: one hung call would hang the
kernel's exit), its value thrown away: the runtime runs no tool for a decision that came back TIMED_OUT."""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

TIMED_OUT = object()  # what `call_within` returns for a call that did not finish in time


def call_within(
    fn: Callable[..., Any], args: tuple, timeout: float, more: Callable[[float], float] | None = None
) -> Any:
    """`fn(*args)` if it finished within `timeout` seconds (judged by when it finished, not by when
    the waiting thread woke up), else TIMED_OUT; re-raises fn's error. When `timeout` passes with `fn`
    still running, `more(seconds waited)` may give it more seconds (0: no more), asked again each time."""
    future: Future = Future()
    start, finished = time.perf_counter(), [0.0]

    def work() -> None:
        try:
            value = fn(*args)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            finished[0] = time.perf_counter()
            future.set_exception(error)
        else:
            finished[0] = time.perf_counter()
            future.set_result(value)

    threading.Thread(target=work, name="labkit-decide", daemon=True).start()
    while True:
        try:  # waits; a TimeoutError fn raised is returned, not raised
            future.exception(max(timeout - (time.perf_counter() - start), 0.0))
            break
        except TimeoutError:
            extra = more(time.perf_counter() - start) if more is not None else 0.0
            if extra <= 0:
                return TIMED_OUT
            timeout += extra
    return TIMED_OUT if finished[0] - start > timeout else future.result()
