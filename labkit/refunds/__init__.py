"""Lab 03, the refund attack lab: a fictional shop, a refund tool, injected text, defenses.

The policy proposes; the refund tool enforces (`tools.refund`). Used by notebook 03 as `R`::

    episode = R.refund_episode("r-ana-blender", R.gullible, defenses="mediation",
                               attack="important-inflate", place="review")
    episode.refunds                    # the money that actually moved
    R.matrix(["gullible", "careful"])  # the attack × defense matrix
"""

from labkit.refunds.attacks import PLACES, goal_text, succeeded
from labkit.refunds.defenses import DEFENSES, Defenses, rubber_stamp
from labkit.refunds.episode import refund_episode
from labkit.refunds.lab import refund_lab
from labkit.refunds.metrics import COLUMNS, duplicates, matrix, money_lost, suite, unauthorized, utility
from labkit.refunds.policies import careful, gullible
from labkit.refunds.rules import policy_text
from labkit.refunds.tools import EpisodeState, Faults

__all__ = ["COLUMNS", "DEFENSES", "PLACES", "Defenses", "EpisodeState", "Faults", "careful", "duplicates"]
__all__ += ["goal_text", "gullible", "matrix", "money_lost", "policy_text", "refund_episode", "refund_lab"]
__all__ += ["rubber_stamp", "succeeded", "suite", "unauthorized", "utility"]
