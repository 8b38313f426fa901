"""Retry policies as plain data. ``RetryPolicy()`` is LangGraph's default: at most 3 attempts *counting
the first try*; the wait after failed attempt n is ``min(initial_interval * backoff_factor ** (n - 1),
max_interval)``, no jitter. `retry_on`: exception types or ``error -> bool``; InvalidInput never retries."""

import decimal
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labkit.routing.errors import GraphError, InvalidInput

_RetryOn = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


def _is_error_type(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed attempt is tried again, and after how long. Validated on construction: GraphError
    (one line) for max_attempts that is not an int >= 1, an interval that is not a finite number >= 0,
    a backoff_factor below 1, a max_interval below initial_interval, or a retry_on that is neither
    exception types nor a callable."""

    max_attempts: int = 3
    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    retry_on: _RetryOn = (ConnectionError, TimeoutError)

    def __post_init__(self) -> None:  # serves: user — a RetryPolicy set up wrong is one line
        # Any whole or real number a learner writes (numpy's, a Fraction, a Decimal) is kept as the int or
        # float it stands for; a bool is no number here.
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, numbers.Integral) or attempts < 1:
            raise GraphError(f"max_attempts must be an int >= 1 (it counts the first try), got {attempts!r}")
        object.__setattr__(self, "max_attempts", int(attempts))
        for name in ("initial_interval", "backoff_factor", "max_interval"):
            value = getattr(self, name)
            real = isinstance(value, numbers.Real | decimal.Decimal) and not isinstance(value, bool)
            if not real or not math.isfinite(value) or value < 0:
                raise GraphError(f"{name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.backoff_factor < 1:
            raise GraphError(f"backoff_factor must be >= 1 (waits never shrink), got {self.backoff_factor!r}")
        if self.max_interval < self.initial_interval:
            raise GraphError(
                f"max_interval ({self.max_interval!r}) must be >= initial_interval "
                f"({self.initial_interval!r})"
            )
        retry_on = self.retry_on
        if _is_error_type(retry_on):  # a lone class is callable too: never mistake it for a predicate
            retry_on = (retry_on,)
        elif isinstance(retry_on, list):
            retry_on = tuple(retry_on)
        if isinstance(retry_on, tuple):
            bad = [item for item in retry_on if not _is_error_type(item)]
            if bad:
                raise GraphError(f"retry_on must hold exception types, got {bad[0]!r}")
        elif not callable(retry_on):
            raise GraphError(
                f"retry_on must be a tuple of exception types or a function error -> bool, got {retry_on!r}"
            )
        object.__setattr__(self, "retry_on", retry_on)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based) before the next one."""
        try:
            raw = self.initial_interval * self.backoff_factor ** (attempt - 1)
        except OverflowError:  # 2.0 ** 2000: the cap applies long before
            raw = math.inf
        return float(min(raw, self.max_interval))

    def delays(self) -> list[float]:
        """Every wait one visit can incur: max_attempts - 1 of them."""
        return [self.delay(n) for n in range(1, self.max_attempts)]

    def retryable(self, error: BaseException) -> bool:
        """True if `error` is the kind this policy retries (never for InvalidInput)."""
        if isinstance(error, InvalidInput):
            return False
        if isinstance(self.retry_on, tuple):
            return isinstance(error, self.retry_on)
        return bool(self.retry_on(error))

    def refusal(self, error: BaseException, attempt: int) -> str | None:
        """Why failed attempt `attempt` is not tried again, or None if it is."""
        if isinstance(error, InvalidInput):
            return "invalid input is never retried"
        try:
            retryable = self.retryable(error)
        except Exception as broken:  # noqa: BLE001 - a learner's predicate: a refusal, not a crash
            return f"retry_on raised {type(broken).__name__}: {broken}; not retried"
        if not retryable:
            return f"{type(error).__name__} is not retryable"
        if attempt >= self.max_attempts:
            return f"attempt {attempt} of {self.max_attempts}"
        return None
