"""`labkit compare`: lab 01's table on any corpus in the fixture schema, one-line errors."""

import json
import re

import pytest

BASELINE = {
    "keyword route": {"passed": 9, "total": 18, "tool_calls": 9},
    "search/read workflow": {"passed": 17, "total": 18, "tool_calls": 36},
    "scripted loop": {"passed": 17, "total": 18, "tool_calls": 36},
}
ADDED = ("spell-correct-first workflow", "fallback workflow", "two-rule workflow", "adaptive loop")


def passed_and_calls(out):
    return {name: (row["passed"], row["tool_calls"]) for name, row in json.loads(out).items()}


def test_json_prints_the_baseline_table_plus_the_adaptive_controllers(cli):
    code, out, err = cli("compare", "--json")
    assert (code, err) == (0, "")
    table = json.loads(out)
    assert list(table) == [*BASELINE, *ADDED]
    assert {name: table[name] for name in BASELINE} == BASELINE
    assert all(table[name] == {"passed": 17, "total": 18, "tool_calls": 36} for name in ADDED)


def test_cases_top_k_and_max_tools_reach_every_controller(cli):
    _, out, _ = cli("compare", "--cases", "adaptive", "--json")
    assert passed_and_calls(out)["two-rule workflow"] == (6, 18)
    _, out, _ = cli("compare", "--cases", "all", "--top-k", "1", "--json")
    assert json.loads(out)["adaptive loop"] == {"passed": 20, "total": 24, "tool_calls": 51}
    _, out, _ = cli("compare", "--cases", "adaptive", "--max-tools", "2", "--json")
    passing = {name: passed for name, (passed, _) in passed_and_calls(out).items() if passed}
    assert passing == {"spell-correct-first workflow": 3}


def test_plain_output_is_a_table(cli):
    code, out, _ = cli("compare")
    assert code == 0
    assert re.search(r"^search/read workflow +17 +18 +36$", out, re.MULTILINE)


@pytest.fixture
def unseen_corpus(tmp_path):
    """A corpus the course has never seen: two topics in one version, three cases."""
    topics = (
        ("backup", "Backups", "Take a snapshot backup of a volume."),
        ("restore", "Restore", "Restore a volume from a snapshot."),
    )
    pages = [
        {"id": f"{id}-v1", "version": "v1", "title": title, "text": text, "command": f"tool {id}"}
        for id, title, text in topics
    ]
    asks = (
        ("c1", "backup", "How do I backup a volume?"),
        ("c2", "restore", "How do I recover a volume?"),
        ("c3", "restore", "Bring back a snapshot"),
    )
    fields = ("id", "family", "question", "version", "expected_doc", "expected_command")
    cases = [dict(zip(fields, (*ask, "v1", f"{ask[1]}-v1", f"tool {ask[1]}"), strict=True)) for ask in asks]
    (tmp_path / "documents.json").write_text(json.dumps(pages))
    (tmp_path / "glossary.json").write_text(json.dumps({"recover": "restore"}))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    return tmp_path


def test_runs_on_a_corpus_it_has_never_seen(cli, unseen_corpus):
    code, out, _ = cli("compare", "--fixtures", str(unseen_corpus), "--json")
    assert code == 0
    # c1: keyword 'backup'; c2: alias recover -> restore; c3: both pages mention snapshot and the
    # tie goes to backup-v1 by id, so retrieval fails it.
    assert json.loads(out) == {
        "keyword route": {"passed": 1, "total": 3, "tool_calls": 1},
        "search/read workflow": {"passed": 2, "total": 3, "tool_calls": 6},
        "scripted loop": {"passed": 2, "total": 3, "tool_calls": 6},
    }


@pytest.mark.parametrize(
    "args, damage, error",
    [
        (["--top-k", "4"], None, "argument --top-k: invalid choice: 4 (choose from 1, 2, 3)"),
        (["--cases", "all"], None, "--cases all needs adaptive_cases.json"),
        ([], lambda folder: (folder / "cases.json").unlink(), "cases.json: file not found"),
        ([], lambda folder: (folder / "documents.json").write_text('[{"id": "x"}]'), "record 0 (id 'x')"),
    ],
)
def test_a_bad_option_or_file_is_one_line_and_exit_2(cli, unseen_corpus, args, damage, error):
    if damage:
        damage(unseen_corpus)
    code, out, err = cli("compare", "--fixtures", str(unseen_corpus), *args)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith("labkit compare: error: ") and error in err
