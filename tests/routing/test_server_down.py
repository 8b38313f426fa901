"""Lab 04's live cells with a model server that does not answer: every run is a counted
`provider_error`, one line says which server did not answer, and no cell raises (Run All completes)."""

import socket

import pytest

from labkit.model.factory import parse_spec
from labkit.routing import model_reviser, reviser_trials


@pytest.fixture
def down():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the block ends
    return parse_spec("openai:smollm2", {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}), port


def test_the_judge_table_names_the_server_and_marks_every_text(down, capsys):
    backend, port = down
    table = model_reviser.judge_table(backend)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("no reply: the model server did not answer") and f"127.0.0.1:{port}" in line
    assert list(table["the model says"]) == ["provider_error"] * 4 and len(table) == 4


def test_reviser_runs_are_provider_error_and_say_so(down, capsys):
    backend, port = down
    table, revisers = model_reviser.control_table(backend)
    assert set(table["status"]) == {"provider_error"}
    said = model_reviser.reply_source(revisers["any text (L1)"]["with feedback"])
    assert said.startswith("no reply: the model server did not answer") and f"127.0.0.1:{port}" in said
    runs = reviser_trials.sampled_runs(backend, k=2)
    assert capsys.readouterr().out.startswith(f"no reply: the model server did not answer in {len(runs)} of")
    assert set(reviser_trials.reviser_table(runs)["provider_error"]) == {2}


def test_replayed_runs_keep_their_status():
    table, _ = model_reviser.control_table(None)
    assert "provider_error" not in set(table["status"])
