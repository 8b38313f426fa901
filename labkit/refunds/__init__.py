"""Lab 03, the refund attack lab: a fictional shop, a refund tool, injected text, defenses.

Used by notebooks/03_refund_attack_lab.ipynb (and its solutions notebook). The policy
proposes; the refund tool enforces. Everything a learner needs::

    from labkit import refunds
    episode = refunds.run("r-ana-blender", refunds.gullible, defenses="mediation",
                          attack="important-inflate", place="review")
    episode.refunds                      # the money that actually moved
    refunds.matrix(["gullible", "careful"])   # the attack × defense matrix

`run` is one episode; `evaluate` scores a policy over a suite of cases, from the ledger.

Modules, one job each:

- `shop`         the shop's records and texts, immutable.
- `rules`        the written refund policy: RULES, POLICY_TEXT and `authorise`.
- `cases`        the requests and their expected outcomes.
- `attacks`      templates, goals and each attack's security check.
- `defenses`     the defense switches and presets.
- `tools`        the per-episode tools and the refund enforcement point.
- `episode`      `run`, and the guarantee mediation gives.
- `policies`     gullible, careful, the model, and `factory_of`.
- `metrics`      ledger-based scoring (`evaluate`) and the matrix.
- `display`, `charts`  episode text, narrow tables, the utility-security chart.
- `model_rows`, `constraints`  the model's replayed rows and its constraint rules.
- `guard_table`  a learner's guard as data, for the class's red-team round.
- `checks`       the build-it cell and exercises (`labkit.exercises.lab03` re-exports it), with
                 `untrusted` (a learner's guard run under limits) and `hidden_cases` (the
                 boundary cases a check holds that the notebook never shows).

The package imports nothing from `labkit.course`: the course wing imports the lab, never
the other way round.

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
