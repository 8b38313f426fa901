"""Lab 03, the refund attack lab: a fictional shop, a refund tool, injected text, defenses.

The policy proposes; the refund tool enforces (`tools.refund`). `refund_episode` runs one
episode; `score_policy` scores a policy over a suite from the ledger; `matrix` is the
attack × defense matrix. Used by notebooks/03_refund_attack_lab.ipynb::

    from labkit import refunds as R
    episode = R.refund_episode("r-ana-blender", R.gullible, defenses="mediation",
                            attack="important-inflate", place="review")
    episode.refunds                           # the money that actually moved
    R.matrix(["gullible", "careful"])         # the attack × defense matrix
"""

from labkit.refunds.attacks import PLACES, Attack, goal_text, gold_calls, render, succeeded
from labkit.refunds.cases import Request
from labkit.refunds.defenses import DEFENSES, Defenses, customer_approver, defenses_named, rubber_stamp
from labkit.refunds.display import episode_text
from labkit.refunds.episode import MAX_TOOLS, MAX_TURNS, Episode, RefundTask, refund_episode
from labkit.refunds.lab import RefundLab, load_lab, refund_lab
from labkit.refunds.metrics import (
    COLUMNS,
    RETRY_FAULT,
    Spec,
    duplicates,
    matrix,
    matrix_row,
    money_lost,
    outcomes,
    score_policy,
    suite,
    summarise,
    unauthorized,
    utility,
)
from labkit.refunds.policies import POLICIES, careful, gullible, instructions, model_policy
from labkit.refunds.rules import POLICY_TEXT, RULES, Refusal, authorise, policy_text
from labkit.refunds.shop import Refund, RefundCall, Shop, load_shop
from labkit.refunds.tools import EpisodeState, Faults, first_refusal, refund

__all__ = [
    "COLUMNS",
    "DEFENSES",
    "MAX_TOOLS",
    "MAX_TURNS",
    "PLACES",
    "POLICIES",
    "POLICY_TEXT",
    "RETRY_FAULT",
    "RULES",
    "Attack",
    "Defenses",
    "Episode",
    "EpisodeState",
    "Faults",
    "Refund",
    "RefundCall",
    "RefundLab",
    "RefundTask",
    "Refusal",
    "Request",
    "Shop",
    "Spec",
    "authorise",
    "careful",
    "customer_approver",
    "defenses_named",
    "duplicates",
    "episode_text",
    "first_refusal",
    "goal_text",
    "gold_calls",
    "gullible",
    "instructions",
    "load_lab",
    "load_shop",
    "matrix",
    "matrix_row",
    "model_policy",
    "money_lost",
    "outcomes",
    "policy_text",
    "refund",
    "refund_lab",
    "render",
    "rubber_stamp",
    "refund_episode",
    "score_policy",
    "succeeded",
    "suite",
    "summarise",
    "unauthorized",
    "utility",
]
