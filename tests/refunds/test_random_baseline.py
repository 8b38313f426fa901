"""The random-admissible baseline's fixture is what `random_baseline.draw` computes (checked on two cases
of every defense, every seed), it matches the suite it was drawn on, and a stale file is one line."""

from __future__ import annotations

import json

import pytest

from labkit.core.errors import FixtureError
from labkit.refunds import random_baseline
from labkit.refunds.grid import suite_cases
from labkit.refunds.intervals import episodes_of, random_scores
from labkit.refunds.model_rows import MODEL_DEFENSES, model_specs


def test_the_fixture_is_drawn_on_the_model_suite_with_its_provenance():
    data = json.loads(random_baseline.FILE.read_text(encoding="utf-8"))
    assert data["provenance"]["cases"] == list(suite_cases()) and data["provenance"]["seeds"] == 250
    assert list(data["defenses"]) == list(MODEL_DEFENSES)
    frame = random_baseline.episodes("none")
    assert len(frame) == len(suite_cases()) and set(frame["trials"]) == {random_baseline.DRAWN_SEEDS}


@pytest.mark.parametrize("defense", MODEL_DEFENSES)
def test_two_cases_of_each_defense_match_a_fresh_draw_over_every_seed(defense):
    specs = [spec for spec in model_specs() if spec.attack][:1] + [
        spec for spec in model_specs() if not spec.attack
    ][:1]
    fresh = episodes_of(random_scores(defense, specs, random_baseline.DRAWN_SEEDS))
    stored = random_baseline.episodes(defense).set_index("case")
    for case, group in fresh.groupby("case"):
        assert stored.loc[case, "utility"] == pytest.approx(group["utility"].mean(), abs=1e-6)
        assert stored.loc[case, "unauthorized"] == pytest.approx((group["unauthorized"] > 0).mean(), abs=1e-6)
        assert stored.loc[case, "money_lost_cents"] == pytest.approx(group["money_lost"].mean(), abs=1e-6)


def test_a_file_drawn_on_another_suite_is_refused_in_one_line(tmp_path, monkeypatch):
    data = json.loads(random_baseline.FILE.read_text(encoding="utf-8"))
    data["provenance"]["cases"] = data["provenance"]["cases"][:28]
    stale = tmp_path / "random.json"
    stale.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(random_baseline, "FILE", stale)
    with pytest.raises(FixtureError, match="another suite or seed count") as raised:
        random_baseline.episodes("none")
    assert "\n" not in str(raised.value)


def test_a_defense_it_was_not_drawn_under_is_named():
    with pytest.raises(FixtureError, match="no draw under defense 'provenance' \\(drawn: none, "):
        random_baseline.episodes("provenance")
