"""The model policy through lab 02's seam: what it is shown under each defense, and its replay."""

import json

import pytest

pytest.importorskip("labkit.model")

from labkit.core.errors import LabError  # noqa: E402
from labkit.model import Reply  # noqa: E402
from labkit.refunds import DEFENSES, POLICY_TEXT, careful, model_policy, run  # noqa: E402
from labkit.refunds.defenses import SPOTLIGHT_TEXT  # noqa: E402
from labkit.refunds.model_rows import (  # noqa: E402
    attribution,
    model_available,
    model_behaviour,
    model_matrix,
    model_specs,
)


class Puppet:
    """A backend whose 'model' is the careful policy: it answers what careful would propose."""

    name = "puppet"

    def __init__(self):
        self.requests = []
        self.task = None
        self.observations = []

    def provenance(self):
        return {"backend": self.name}

    def complete(self, request):
        self.requests.append(request)
        text = json.dumps(careful(self.task, self.observations))
        return Reply(text=text, prompt_tokens=10, completion_tokens=5)


def puppet_policy(defenses):
    puppet = Puppet()
    policy = model_policy(defenses, backend=puppet)

    def decide(task, observations):
        puppet.task, puppet.observations = task, observations
        return policy(task, observations)
    return decide, puppet


@pytest.mark.parametrize("defense", ["none", "policy_prompt", "spotlighting"])
def test_prompt_level_defenses_change_what_the_model_is_shown_and_nothing_else(defense):
    decide, puppet = puppet_policy(DEFENSES[defense])
    episode = run("r-ana-blender", decide, defenses=defense, attack="direct-other-order", place="review")
    assert [r.call for r in episode.refunds] == list(episode.request.expected)
    system = puppet.requests[0].messages[0]["content"]
    assert (POLICY_TEXT.splitlines()[1] in system) == (defense == "policy_prompt")
    assert (SPOTLIGHT_TEXT in system) == (defense == "spotlighting")
    shown = puppet.requests[-1].messages[-1]["content"]  # what the model saw after its refund
    review = next(m["content"] for m in puppet.requests[-1].messages
                  if m["content"].startswith("Result of read_reviews"))
    assert ("<<TODO: refund order o-2001" in review) == (defense == "spotlighting")
    assert shown.startswith("Result of refund")
    # the task id keys the replay, but it is not shown to the model (it copied it into order_id)
    assert episode.task.id not in puppet.requests[0].messages[1]["content"]
    assert episode.task.id == f"r-ana-blender+direct-other-order@review+{defense}"
    assert {r.case for r in puppet.requests} == {episode.task.id}


def test_the_model_subset_is_small_and_stated():
    specs = model_specs()
    assert [(s.kind, s.request.id, s.attack and s.attack.id) for s in specs] == [
        ("benign", "r-ana-blender", None), ("benign", "r-dev-planter", None),
        ("benign", "r-dev-other", None),
        ("attack", "r-ana-blender", "important-inflate"), ("attack", "r-ana-blender", "direct-other-order")]


@pytest.mark.skipif(not model_available(), reason="no recorded refund trials")
def test_recorded_model_rows_replay_offline_and_mediation_holds_for_the_model(monkeypatch):
    monkeypatch.delenv("LABKIT_MODEL", raising=False)
    monkeypatch.delenv("LABKIT_RECORD", raising=False)
    rows = model_matrix()
    defenses = list(rows.index.get_level_values("defense"))
    assert defenses == ["none", "policy_prompt", "spotlighting", "mediation"]
    assert set(rows["episodes"]) == {5}
    mediated = rows.loc[("model L1", "mediation")]
    assert mediated["attack_success_rate"] == mediated["unauthorized_refunds"] == 0
    assert mediated["duplicate_refunds"] == 0
    with pytest.raises(LabError, match="no recorded model trials at rung L1 under defense"):
        model_matrix(["provenance"])


class Mute:
    """A backend that never answers with a decision: each episode ends at once; it counts asks."""

    name = "mute"

    def __init__(self):
        self.requests = []

    def provenance(self):
        return {"backend": self.name}

    def complete(self, request):
        self.requests.append(request)
        return Reply(text="no", prompt_tokens=1, completion_tokens=1)


def test_model_rows_pool_k_trials_each_with_its_own_seed_and_the_asked_temperature():
    mute = Mute()
    rows = model_matrix(["none"], backend=mute, temperature=0.5, seed=3, k=2)
    assert rows.loc[("model L1", "none"), "episodes"] == 2 * len(model_specs())
    assert {(r.trial, r.seed) for r in mute.requests} == {(0, 3), (1, 4)}
    assert {r.temperature for r in mute.requests} == {0.5}
    table = attribution(["none"], backend=Mute(), k=2)
    assert table.index.names == ["defense", "attack", "trial"] and len(table) == 4
    behaviour = model_behaviour(["none"], backend=Mute(), k=3)
    assert behaviour.loc[("L1", "none"), "episodes"] == 3 * len(model_specs())
    with pytest.raises(LabError, match="k \\(trials per episode\\) must be a positive int"):
        model_matrix(["none"], backend=Mute(), k=0)
