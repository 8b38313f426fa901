"""RetryPolicy as plain data: which errors it retries, the waits, and what it refuses to be."""

from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

from labkit.routing import GraphError, InvalidInput, RetryPolicy


def test_retry_on_matches_subclasses_and_predicates_but_never_an_invalid_input():
    policy = RetryPolicy()
    assert policy.retryable(ConnectionResetError()) and policy.retryable(TimeoutError())
    assert not policy.retryable(ValueError())
    assert not RetryPolicy(retry_on=(Exception,)).retryable(InvalidInput())
    by_message = RetryPolicy(retry_on=lambda error: "429" in str(error))
    assert by_message.retryable(RuntimeError("HTTP 429")) and not by_message.retryable(RuntimeError("404"))
    assert RetryPolicy(retry_on=KeyError).retry_on == (KeyError,)  # a lone class, not a predicate
    assert RetryPolicy(retry_on=[KeyError, OSError]).retry_on == (KeyError, OSError)


def test_backoff_grows_and_is_capped():
    assert RetryPolicy(max_attempts=5).delays() == [0.5, 1.0, 2.0, 4.0]
    capped = RetryPolicy(max_attempts=5, initial_interval=1, backoff_factor=10, max_interval=50)
    assert capped.delays() == [1, 10, 50, 50]
    assert RetryPolicy(max_attempts=1).delays() == []
    assert RetryPolicy().delay(5000) == 128.0  # no OverflowError


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_attempts": 0}, "max_attempts must be an int >= 1 (it counts the first try), got 0"),
        ({"max_attempts": 2.5}, "max_attempts must be an int >= 1 (it counts the first try), got 2.5"),
        ({"initial_interval": -1}, "initial_interval must be a finite number >= 0, got -1"),
        ({"max_interval": float("inf")}, "max_interval must be a finite number >= 0, got inf"),
        ({"backoff_factor": 0.5}, "backoff_factor must be >= 1 (waits never shrink), got 0.5"),
        ({"initial_interval": 5, "max_interval": 1}, "max_interval (1.0) must be >= initial_interval (5.0)"),
        ({"retry_on": (ValueError, "KeyError")}, "retry_on must hold exception types, got 'KeyError'"),
        ({"retry_on": 3}, "retry_on must be a tuple of exception types or a function error -> bool, got 3"),
        ({"initial_interval": True}, "initial_interval must be a finite number >= 0, got True"),
        (
            {"max_attempts": numpy.float64(3)},
            "max_attempts must be an int >= 1 (it counts the first try), got np.float64(3.0)",
        ),
    ],
)
def test_retry_policy_validation(kwargs, message):
    with pytest.raises(GraphError) as caught:
        RetryPolicy(**kwargs)
    assert str(caught.value) == message


def test_any_number_a_learner_writes_is_the_int_or_float_it_stands_for():
    # round 10: numpy's numbers, a Fraction and a Decimal were told "must be a finite number >= 0"
    for interval in (numpy.float64(0.2), Fraction(1, 5), Decimal("0.2"), 0.2):
        policy = RetryPolicy(max_attempts=numpy.int64(4), initial_interval=interval)
        assert policy == RetryPolicy(max_attempts=4, initial_interval=0.2)
        assert (type(policy.max_attempts), type(policy.initial_interval)) == (int, float)
