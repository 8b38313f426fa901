"""Every build-it cell is solvable: the intended solution passes its checker, and a plausible
wrong attempt fails with a sentence that says what to fix (never a traceback)."""

import inspect

import pytest
from verdicts import verdict

from labkit.exercises import lab01, lab02, lab03, lab04


def untouched(checker):
    """The checker called as a learner's untouched cell calls it: every required argument None."""
    params = inspect.signature(checker).parameters.values()
    return checker(*(None for p in params if p.default is inspect.Parameter.empty))


@pytest.mark.parametrize("module", [lab01, lab02, lab03, lab04])
def test_every_checker_says_not_attempted_for_an_untouched_cell(module):
    checkers = [name for name in module.__all__ if name.startswith("check_")]
    assert checkers
    for name in checkers:
        checker = getattr(module, name)
        required = [p for p in inspect.signature(checker).parameters.values() if p.default is p.empty]
        # a checker that also takes what the cell gives (a case id, a stop reason) still answers
        # an all-None call with a sentence, not a traceback
        verdict(untouched(checker), False, *(["not attempted"] if len(required) == 1 else []))
