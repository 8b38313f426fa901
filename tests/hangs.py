"""Learner code that hangs, and the limit it is checked within: no test races code meant to finish against
a clock. `hangs` waits on an event that never fires, so it times out however busy the machine; only it gets
`short_limit`'s 0.2 s, and every answer meant to return gets the checker's own 3 s."""

import threading

NEVER = threading.Event()  # never set


def hangs(*args, **kwargs):
    """A learner's function that never returns: only the checker's limit ends it (60 s bounds a hang
    that a check forgot to limit: a slow failure, not a stuck suite)."""
    NEVER.wait(60)


def limited(answer, request):
    """`answer`, with `short_limit` in force if it is `hangs`, else the checker's own limit."""
    if answer is hangs:
        request.getfixturevalue("short_limit")
    return answer
