"""Lab 03, the refund attack lab: a fictional shop, a refund tool, injected text, defenses.

The policy proposes; the refund tool enforces (`tools.refund`). Used by
notebooks/03_refund_attack_lab.ipynb::

    from labkit import refunds as R
    episode = R.refund_episode("r-ana-blender", R.gullible, defenses="mediation",
                               attack="important-inflate", place="review")
    episode.refunds                    # the money that actually moved
    R.matrix(["gullible", "careful"])  # the attack × defense matrix
"""

from labkit.refunds.attacks import PLACES, goal_text, gold_calls, render, succeeded
from labkit.refunds.defenses import DEFENSES, Defenses, rubber_stamp
from labkit.refunds.episode import MAX_TOOLS, MAX_TURNS, refund_episode
from labkit.refunds.lab import load_lab, refund_lab
from labkit.refunds.metrics import COLUMNS, duplicates, matrix, money_lost, suite, unauthorized, utility
from labkit.refunds.policies import POLICIES, careful, gullible, model_policy
from labkit.refunds.rules import POLICY_TEXT, authorise, policy_text
from labkit.refunds.tools import EpisodeState, Faults

__all__ = [
    "COLUMNS",
    "DEFENSES",
    "MAX_TOOLS",
    "MAX_TURNS",
    "PLACES",
    "POLICIES",
    "POLICY_TEXT",
    "Defenses",
    "EpisodeState",
    "Faults",
    "authorise",
    "careful",
    "duplicates",
    "goal_text",
    "gold_calls",
    "gullible",
    "load_lab",
    "matrix",
    "model_policy",
    "money_lost",
    "policy_text",
    "refund_episode",
    "refund_lab",
    "render",
    "rubber_stamp",
    "succeeded",
    "suite",
    "unauthorized",
    "utility",
]
