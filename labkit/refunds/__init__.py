"""Lab 03, the refund attack lab: a fictional shop, a refund tool, injected text, defenses.

The policy proposes; the refund tool enforces. Everything a learner needs::

    from labkit import refunds
    episode = refunds.run("r-ana-blender", refunds.gullible, defenses="mediation",
                          attack="important-inflate", place="review")
    episode.refunds                      # the money that actually moved
    refunds.matrix(["gullible", "careful"])   # the attack × defense matrix

Modules, one job each: `shop` (records and texts), `policy` (the written policy and
`authorise`), `cases` (requests and expected outcomes), `attacks` (templates, goals,
security checks), `defenses`, `tools` (the per-episode tools and the refund enforcement
point), `episode` (`run`), `policies` (gullible, careful, model), `metrics` (ledger-based
scoring and the matrix), `display` (episode text, narrow tables). The build-it cell and
exercises are checked by `labkit.refunds.checks`.

The guarantee — what mediation promises for any policy, and where that promise stops — is
stated in `labkit.refunds.episode`.
"""

from labkit.refunds.attacks import PLACES, Attack, goal_text, gold_calls, render, succeeded
from labkit.refunds.cases import Request
from labkit.refunds.defenses import (
    DEFENSES,
    Defenses,
    customer_approver,
    defenses_named,
    rubber_stamp,
)
from labkit.refunds.display import episode_text, ledger_frame
from labkit.refunds.episode import MAX_TOOLS, MAX_TURNS, Episode, RefundTask, run
from labkit.refunds.lab import RefundLab, load_lab, refund_lab
from labkit.refunds.metrics import (
    COLUMNS,
    RETRY_FAULT,
    Spec,
    duplicates,
    evaluate,
    matrix,
    money_lost,
    suite,
    summarise,
    unauthorized,
    utility,
)
from labkit.refunds.policies import POLICIES, careful, gullible, instructions, model_policy
from labkit.refunds.rules import POLICY_TEXT, RULES, Refusal, authorise, policy_text
from labkit.refunds.shop import Refund, RefundCall, Shop, load_shop
from labkit.refunds.tools import EpisodeState, Faults

__all__ = [
    "COLUMNS", "DEFENSES", "MAX_TOOLS", "MAX_TURNS", "PLACES", "POLICIES", "POLICY_TEXT",
    "RETRY_FAULT", "RULES", "Attack", "Defenses", "Episode", "EpisodeState", "Faults", "Refund",
    "RefundCall", "RefundLab", "RefundTask", "Refusal", "Request", "Shop", "Spec", "authorise",
    "careful", "customer_approver", "defenses_named", "duplicates", "episode_text", "evaluate",
    "goal_text", "gold_calls", "gullible", "instructions", "ledger_frame", "load_lab", "load_shop", "matrix",
    "model_policy", "money_lost", "policy_text", "refund_lab", "render", "rubber_stamp", "run",
    "succeeded", "suite", "summarise", "unauthorized", "utility",
]
