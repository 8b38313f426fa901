"""The review loop with a model as the reviser or the judge, through lab 02's seam (replayed by default).
Visit n of `revise` is turn n of ``announcement+<variant>``: changing the prompts, DRAFT, LIMIT or the
options makes replay stop with a ReplayMiss naming case and turn."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations, product
from typing import Any

import pandas as pd

from labkit.core.errors import LabError, ProviderError
from labkit.core.fixtures import FIXTURES, read_text
from labkit.model import Backend, ModelPolicy, backend_from_env, trial_files
from labkit.model.constraints import StateRules
from labkit.routing.clock import FakeClock
from labkit.routing.experiments import (
    DRAFT,
    LIMIT,
    compare_revisers,
    loop_graph,
    summary_row,
    within_limit,
    without_feedback,
)
from labkit.routing.plan import Context
from labkit.routing.result import RunResult
from labkit.routing.route import Next

REVISER_LAB = "routing"
RECORDED = {"max_visits": 5, "limit": LIMIT}  # what fixtures/trials/routing-smollm2.jsonl was made with
VARIANTS = {"without feedback": "no-feedback", "with feedback": "feedback"}  # variant -> task id suffix
# What each level of control lets the reviser write: its rung and the fewest words cut per visit.
GRID_CONTROLS = {"L1": ("L1", 0), "L2": ("L2", 0), "L2+cut1": ("L2", 1)}
_CONTROL_LABELS = {
    "L1": "any text (L1)",
    "L2": "deletions only (L2)",
    "L2+cut1": "must cut a word (L2, min_cut=1)",
}
# The prompts are data (fixtures/routing/*.txt); the recordings replay only while they are unchanged.
# The worked example is another sentence, not a placeholder: with SmolLM2-135M, an instruction
# showing `"answer": "<the shortened announcement>"` made it reply with that placeholder.
_INSTRUCTIONS = read_text(FIXTURES / "routing" / "reviser_instructions.txt").removesuffix("\n")
_AGAIN = "Revise it again."
_MAX_WORDS = 12  # 4,095 deletions: the enum of admissible answers stays a small grammar


@dataclass(frozen=True)
class _Announcement:
    """The model's task: `id` keys the replay, `text` is the announcement, `limit` is stated to it."""

    id: str
    text: str
    limit: int


def _task_text(task: _Announcement) -> str:
    return f"Shorten this announcement to at most {task.limit} characters:\n{task.text}"


def _told(observation: Mapping[str, Any]) -> str:
    """What the reviser is told on a later visit: the router's feedback, if any, then _AGAIN."""
    feedback = observation.get("result")
    return f"{feedback}. {_AGAIN}" if feedback else _AGAIN


def _answer_text(decision: Any) -> str:
    """The text in a model decision; ValueError (its job fails) if it has none.
    (serves: policy — this decision does not pass the runtime's validation)"""
    answer = decision.get("answer") if isinstance(decision, dict) else None
    if isinstance(answer, str) and decision.get("action") == "final":
        return answer
    raise ValueError(f"the model's decision has no answer text: {decision!r}")


def _policy(
    owner: Any, instructions: str, describe: Any, answers: Any, rung: str, observe: Any = None
) -> ModelPolicy:
    """A policy for one-answer decisions with `owner`'s backend, temperature, seed and trial; at rung
    L2 the answer is one of `answers(task, observations)` and the citation "none"."""
    slots = {("final", "answer"): answers, ("final", "citation"): lambda task, seen: ["none"]}
    rules = StateRules(slots=slots) if rung == "L2" else None
    options = (owner.backend, owner.temperature, owner.seed, owner.trial)
    return ModelPolicy(
        REVISER_LAB, {}, instructions, describe, *options, observe=observe, rung=rung, rules=rules
    )


@dataclass
class ModelReviser:
    """A `revise` job backed by a model; `variant` is its task's suffix (VARIANTS' values) and
    `history` lists the text of every visit. Visit n asks turn n, told each earlier Goto's feedback."""

    variant: str
    backend: Backend | None = None
    limit: int = LIMIT
    rung: str = "L1"
    min_cut: int = 0
    temperature: float = 0.0  # the recordings: temperature 0, seed 0, trial 0
    seed: int = 0
    trial: int = 0
    history: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        case = f"announcement+{self.variant}" + (f"+cut{self.min_cut}" if self.min_cut else "")
        self.task = _Announcement(case, DRAFT, self.limit)
        self.policy = _policy(self, _INSTRUCTIONS, _task_text, self.deletions, self.rung, _told)
        self.observations: list[dict[str, Any]] = []
        self.error: str | None = None  # the server's failure, when a call got no reply

    def deletions(self, task: _Announcement, observations: Any = ()) -> list[str]:
        """L2's admissible answers: deletions of the last text this reviser wrote (the draft first)."""
        return deletions_of(self.history[-1] if self.history else task.text, self.min_cut)

    def __call__(self, ctx: Context) -> str:
        if ctx.visit == 1:
            self.observations = []
        else:
            self.observations.append({"action": "final", "result": ctx.feedback})
        try:
            text = _answer_text(self.policy(self.task, list(self.observations)))
        # serves: environment — a model server that cannot answer fails the job
        except ProviderError as error:  # the run fails this job; `source` and `status` say why
            self.error = str(error)
            raise
        self.history.append(text)
        return text


def deletions_of(text: str, min_cut: int = 0) -> list[str]:
    """Every non-empty subsequence of the words of `text` with at least `min_cut` words cut,
    longest first (the text itself too when `min_cut` is 0); a one-word text is its own only one."""
    words = text.split()
    if len(words) > _MAX_WORDS:  # serves: user
        raise LabError(f"a deletion-constrained draft may have at most {_MAX_WORDS} words, got {len(words)}")
    longest = max(len(words) - min_cut, 1)
    return [" ".join(kept) for size in range(longest, 0, -1) for kept in combinations(words, size)]


def recorded() -> bool:
    """True when replay has a recording for this lab (`fixtures/trials/routing*.jsonl`)."""
    return bool(trial_files(REVISER_LAB))


def reply_source(reviser: ModelReviser) -> str:
    """Where the reviser's last reply came from: the recording and its model, or the live backend."""
    reply, temperature = reviser.policy.last_reply, reviser.policy.temperature
    if reviser.error is not None:
        return (
            f"no reply: the model server did not answer, so these runs are provider_error ({reviser.error})"
        )
    if reply is None:
        return "no reply yet"
    extra = reply.extra or {}
    if "recorded" not in extra:
        return f"live {reviser.policy.backend.name}, temperature {temperature:g}"
    provenance = extra.get("provenance", {})
    return (
        f"replayed from {extra['recorded'].split(':')[0]} ({provenance.get('backend')} "
        f"{provenance.get('model', '')}, temperature {temperature:g})"
    )


def model_feedback_experiment(
    max_visits: int = RECORDED["max_visits"],
    limit: int = RECORDED["limit"],
    backend: Backend | None = None,
    rung: str = "L1",
    min_cut: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, RunResult], dict[str, ModelReviser]]:
    """`experiments.compare_revisers` with a `ModelReviser` in each variant, and the revisers.
    Rung L1 lets the model write any text, L2 only a deletion of words from its last text."""
    if rung not in ("L1", "L2") or (min_cut and rung != "L2"):  # serves: user
        raise LabError(f"the model reviser runs at rung L1 or L2 (min_cut at L2 only), not {rung!r}")
    backend = backend_from_env() if backend is None else backend
    options = {"limit": limit, "rung": rung, "min_cut": min_cut}
    revisers = {name: ModelReviser(suffix, backend, **options) for name, suffix in VARIANTS.items()}
    return (*compare_revisers(revisers, max_visits, limit), revisers)


def run_variant(
    variant: str, backend: Backend | None, control: str, **settings: Any
) -> tuple[ModelReviser, RunResult]:
    """One variant (a task suffix of VARIANTS) of the review loop under one of GRID_CONTROLS, at the
    recorded settings: the reviser and the run. `settings`: the reviser's temperature, seed, trial."""
    rung, min_cut = GRID_CONTROLS[control]
    reviser = ModelReviser(variant, backend, rung=rung, min_cut=min_cut, **settings)
    graph, _ = loop_graph(router=within_limit if variant == "feedback" else without_feedback, reviser=reviser)
    return reviser, graph.run(max_visits=RECORDED["max_visits"], clock=FakeClock())


def trial_runs(backend: Backend | None, trials: Mapping[float, int], *, seed: int = 0) -> pd.DataFrame:
    """Every control and variant, `trials[T]` runs at temperature T (trial t with seed `seed + t`): a row
    per run with its reviser, the texts it wrote, the run's status and what was published (or None)."""
    backend, rows = backend_from_env() if backend is None else backend, []
    for control, variant, (temperature, k) in product(GRID_CONTROLS, VARIANTS.values(), trials.items()):
        for trial in range(k):
            settings = {"temperature": temperature, "seed": seed + trial, "trial": trial}
            reviser, result = run_variant(variant, backend, control, **settings)
            published = result.results.get("publish")
            rows.append(
                {
                    "control": control,
                    "variant": variant,
                    "T": temperature,
                    "trial": trial,
                    "reviser": reviser,
                    "texts": reviser.history,
                    "status": status(reviser, result),
                    "published": published if isinstance(published, str) else None,
                }
            )
    return pd.DataFrame(rows)


def status(reviser: ModelReviser, result: RunResult) -> str:
    """The run's status, or ``provider_error`` when it failed because the model server did not answer:
    a counted outcome of the server, not a choice of the model."""
    return "provider_error" if reviser.error is not None else result.status


def control_table(
    backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0, k: int = 1
) -> tuple[pd.DataFrame, dict[str, dict[str, ModelReviser]]]:
    """The review loop under each of GRID_CONTROLS, a row per (level, variant), and the revisers per
    level. `k` trials each (trial t with seed `seed + t`; with k > 1 the trial is a third index
    level and the revisers are the last trial's)."""
    if type(k) is not int or k < 1:  # serves: user
        raise LabError(f"k (trials per variant) must be a positive int, got {k!r}")
    runs = trial_runs(backend, {temperature: k}, seed=seed)
    names = {suffix: name for name, suffix in VARIANTS.items()}
    chars = runs["texts"].map(lambda texts: " ".join(str(len(t)) for t in texts))
    same = runs.groupby(["control", "trial"])["texts"].transform(lambda t: t.map(tuple).nunique() == 1)
    table = pd.DataFrame(
        {
            "reviser may write": runs["control"].map(_CONTROL_LABELS),
            "variant": runs["variant"].map(names),
            "trial": runs["trial"],
            "characters per visit": chars,
            "status": runs["status"],
            "published": runs["published"].fillna("-"),
            "same texts both variants": same,
        }
    )
    last, revisers = runs[runs["trial"] == k - 1], {}
    for control, variant, reviser in zip(last["control"], last["variant"], last["reviser"], strict=True):
        revisers.setdefault(_CONTROL_LABELS[control], {})[names[variant]] = reviser
    index = ["reviser may write", "variant"] + (["trial"] if k > 1 else [])
    return table.set_index(index).drop(columns="trial", errors="ignore"), revisers


# The model as the judge: the same model, asked whether its own text meets the limit.
_JUDGE_INSTRUCTIONS = read_text(FIXTURES / "routing" / "judge_instructions.txt").removesuffix("\n")
_JUDGE_ANSWERS = ("yes", "no")
JUDGE_FEEDBACK = "the reviewer says it is too long"  # all a yes/no judge can say: it gives no count


def _judge_question(task: _Announcement) -> str:
    return f"You wrote this announcement:\n{task.text}\nIs it at most {task.limit} characters long?"


@dataclass
class ModelJudge:
    """A router for `review` whose criterion is the model's "yes" or "no" (rung L2), not `len`.
    Each call is a fresh one-turn conversation, case ``judge+<name>+<n>``; `calls` holds a row each."""

    name: str
    backend: Backend | None = None
    limit: int = LIMIT
    temperature: float = 0.0
    seed: int = 0
    trial: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        answers = lambda task, seen: list(_JUDGE_ANSWERS)  # noqa: E731
        self.policy = _policy(self, _JUDGE_INSTRUCTIONS, _judge_question, answers, "L2")

    def judge(self, text: str) -> bool:
        """True when the model says `text` is within the limit (one recorded call)."""
        task = _Announcement(f"judge+{self.name}+{len(self.calls) + 1}", text, self.limit)
        says = _answer_text(self.policy(task, []))
        if says not in _JUDGE_ANSWERS:  # serves: policy — a model's answer is adversarial
            raise ValueError(f"the judge answered {says!r}, not yes or no")
        within, fits = f"len(text) <= {self.limit}", len(text) <= self.limit
        self.calls.append({"text": text, "characters": len(text), within: fits, "the model says": says})
        return says == "yes"

    def __call__(self, verdict: Mapping[str, Any]) -> Next:
        return Next.Continue if self.judge(verdict["text"]) else Next.back_to_with("revise", JUDGE_FEEDBACK)


def judge_table(backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """The judge against `len` on the draft and every text the scripted reviser writes with
    feedback (45, 33, 28, 24 characters): a row per text."""
    graph, reviser = loop_graph()
    graph.run(max_visits=RECORDED["max_visits"], clock=FakeClock())
    judge = ModelJudge("texts", backend=backend, temperature=temperature, seed=seed)
    texts = [DRAFT, *reviser.history]
    for n, text in enumerate(texts):
        try:
            judge.judge(text)
        # serves: environment — a server that is not answering is one line
        except ProviderError as error:  # one line, then the rest unasked: the server is not answering
            print(f"no reply: the model server did not answer ({error}); the judge's rows are provider_error")
            within = f"len(text) <= {judge.limit}"
            rows = [{"text": t, "characters": len(t), within: len(t) <= judge.limit} for t in texts[n:]]
            judge.calls += [row | {"the model says": "provider_error"} for row in rows]
            break
    return pd.DataFrame(judge.calls).set_index("text")


def judge_experiment(
    backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, RunResult], ModelJudge]:
    """The model reviser (rung L1, told why) in the review loop under `within_limit` and under a
    `ModelJudge` of the same model: a row per router, the runs and the judge."""
    backend = backend_from_env() if backend is None else backend
    options = {"backend": backend, "temperature": temperature, "seed": seed}
    judge = ModelJudge("loop", **options)
    told, judged = ModelReviser("feedback", **options), ModelReviser("judged", **options)
    loops = {
        f"len(text) <= {LIMIT} (code)": loop_graph(reviser=told)[0],
        "the same model as judge": loop_graph(reviser=judged, router=judge)[0],
    }
    runs, rows = {}, []
    for router, graph in loops.items():
        runs[router] = result = graph.run(max_visits=RECORDED["max_visits"], clock=FakeClock())
        published = result.results.get("publish")
        chars = len(published) if isinstance(published, str) else "-"
        rows.append(summary_row(router, result) | {"published characters": chars})
    return pd.DataFrame(rows).set_index("variant").rename_axis("router"), runs, judge
