"""`labkit submit` and `labkit class`: a learner's work as data, and a class round that survives its files."""

import json
import os
import sys

import pytest
from lab03_answers import INTENT, mediation

from labkit.core.check import Check
from labkit.core.progress import record
from labkit.course.classroom.merge import load_folder, pass_counts, red_team
from labkit.course.classroom.submission import MAX_BYTES, build, read, submit
from labkit.refunds.guard_table import guard_table


def own_cards(call, state):
    return None if state.shop.owner_of(call.destination) == state.request.customer else "not theirs"


def lab03_progress():
    record("03", "intent_attack", Check(False, "not yet"), {"id": "x"})
    record("03", "intent_attack", Check(True, "ok"), INTENT)
    record("03", "mediation", Check(True, "ok"), guard_table(mediation))
    record("03", "guard", Check(True, "ok"), guard_table(own_cards))
    record("03", "retry_policy", Check(False, "a retry paid twice"))


def test_submit_writes_the_recorded_outcomes_attack_and_guards(cli, tmp_path):
    lab03_progress()
    (tmp_path / "out").mkdir()  # an existing folder: the file goes inside, named for the lab and learner
    code, out, err = cli("submit", "lab03", "--name", "ana", "-o", str(tmp_path / "out"))
    assert code == 0, err
    path = tmp_path / "out" / "lab03-ana.json"
    assert str(path) in out and "3 of 4 exercises passed, 1 attack(s), 2 guard(s)" in out
    data = read(path).data
    assert data["exercises"] == {
        "guard": {"passed": True, "attempts": 1, "first_passed_attempt": 1},
        "intent_attack": {"passed": True, "attempts": 2, "first_passed_attempt": 2},
        "mediation": {"passed": True, "attempts": 1, "first_passed_attempt": 1},
        "retry_policy": {"passed": False, "attempts": 1, "first_passed_attempt": None},
    }
    assert data["attacks"] == [INTENT] and set(data["guards"]) == {"guard", "mediation"}
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_submit_defaults_to_the_runs_folder_and_leaves_out_an_invalid_attack(cli, tmp_path):
    record("03", "intent_attack", Check(False, "no"), {**INTENT, "template": "no_such_template"})
    code, out, err = cli("submit", "3", "--name", "ben")
    assert code == 0
    assert (tmp_path / "runs" / "submissions" / "lab03-ben.json").is_file()
    assert err.count("\n") == 1 and "intent_attack attack is left out" in err and "no_such_template" in err


@pytest.mark.parametrize("argv, message", [
    (["submit", "2", "--name", "ana"], "no checker of lab 02 has run yet"),
    (["submit", "7", "--name", "ana"], "unknown lab '7'"),
    (["submit", "1", "--name", "../../etc/passwd"], "must be 1-32 letters"),
])
def test_submit_mistakes_are_one_line_and_write_nothing(cli, tmp_path, argv, message):
    record("01", "workflow", Check(True, "ok"))
    code, out, err = cli(*argv)
    assert code == 2 and message in err and err.count("\n") == 1 and out == ""
    assert not (tmp_path / "runs" / "submissions").exists()


def test_submit_from_a_notebook_cell_returns_the_file(tmp_path, capsys):
    record("04", "router", Check(True, "ok"))
    path = submit(4, "ana")
    assert path == tmp_path / "runs" / "submissions" / "lab04-ana.json" and read(path).lab == "04"
    out = capsys.readouterr().out
    assert out == f"wrote {path}: lab 04, 1 of 1 exercises passed. Hand this file to your instructor.\n"


def test_a_lab01_submission_holds_no_attacks_or_guards():
    record("01", "workflow", Check(True, "ok"), {"anything": 1})
    submission, notes = build("1", "ana")
    assert submission["attacks"] == [] and submission["guards"] == {} and notes == []


def _submissions(folder, count=8):
    """`count` lab-03 submissions made the way `labkit submit` makes them, varied per learner."""
    folder.mkdir(exist_ok=True)
    base, _ = build("03", "x")
    for i in range(count):
        data = json.loads(json.dumps(base))
        data["name"] = f"learner{i}"
        data["exercises"]["retry_policy"] = {"passed": i % 2 == 0, "attempts": 1 + i % 3,
                                             "first_passed_attempt": 1 + i % 3 if i % 2 == 0 else None}
        if i % 4 == 3:
            data["attacks"], data["guards"] = [], {}
        (folder / f"lab03-learner{i}.json").write_text(json.dumps(data))
    return base


def test_class_merges_ten_submissions_two_malformed(cli, tmp_path):
    lab03_progress()
    folder = tmp_path / "class"
    base = _submissions(folder)
    (folder / "broken.json").write_text('{"format": ')
    (folder / "wrong-types.json").write_text(json.dumps({**base, "exercises": ["mediation"]}))
    code, out, err = cli("class", str(folder), "--chart", str(tmp_path / "chart.png"))
    assert code == 0
    assert err.splitlines() == [
        "skipped broken.json: not valid JSON (line 1, column 12: Expecting value)",
        "skipped wrong-types.json: exercises: ['mediation'] is not of type 'object'",
    ]
    assert "8 submission(s)" in out and "2 skipped" in out
    assert "learner0:mediation" in out and "all_deterministic" in out
    assert (tmp_path / "chart.png").stat().st_size > 10_000


def test_class_json_counts_and_the_red_team_read_from_the_ledger(cli, tmp_path):
    lab03_progress()
    _submissions(tmp_path / "class")
    code, out, _ = cli("class", str(tmp_path / "class"), "--json", "--chart", str(tmp_path / "c.png"))
    result = json.loads(out)
    retry = next(r for r in result["exercises"] if r["exercise"] == "retry_policy")
    assert retry == {"lab": "03", "exercise": "retry_policy", "learners": 8, "attempted": 8, "passed": 4,
                     "median_attempts_to_pass": 1.5}  # first passes 1, 3, 2, 1
    defenses = {row["defense"]: row for row in result["red_team"]["defenses"]}
    # A tabulated copy of complete mediation scores exactly as the mediation defense itself.
    same = ("attacks_stopped", "attack_success_rate", "money_lost", "legit_paid")
    assert {k: defenses["learner0:mediation"][k] for k in same} == {k: defenses["mediation"][k] for k in same}
    assert defenses["all_deterministic"]["attack_success_rate"] == 0
    assert defenses["none"]["attacks_stopped"] == 0 and defenses["none"]["legit_paid"] == 1
    attacks = {row["attack"]: row for row in result["red_team"]["attacks"]}
    # The intent attack is a refund the rules allow: mediation and the learners' guards let it through.
    success = {row["attack"]: row for row in result["red_team"]["success"]}
    assert success["learner0"]["mediation"] > 0 and success["learner0"]["confirmation"] == 0
    assert attacks["learner0"]["by"] == "learner0" and "learner3" not in attacks


def test_the_class_round_hands_no_decision_to_a_timeout_thread(tmp_path, decision_waits):
    # labkit's own scripted policy cannot hang; handing each of its ~23,000 decisions to a
    # timeout thread tripled the round's time. Neither a step timeout nor a deadline may do it.
    lab03_progress()
    _submissions(tmp_path / "class", count=1)
    usable, _ = load_folder(tmp_path / "class")
    assert red_team(usable) is not None
    assert len(decision_waits) > 1000 and set(decision_waits) == {None}


def test_the_latest_submission_of_a_learner_wins(tmp_path):
    lab03_progress()
    folder = tmp_path / "class"
    base = _submissions(folder, count=1)
    later = {**base, "name": "learner0", "submitted": "2999-01-01T00:00:00+00:00"}
    (folder / "again.json").write_text(json.dumps(later))
    usable, skipped = load_folder(folder)
    assert [s.file for s in usable] == ["again.json"]
    assert skipped == ["skipped lab03-learner0.json: again.json is a later lab 03 submission by learner0"]


def _hostile(folder, base):
    """Files a class folder may hold: each must be skipped with one line, none may run anything."""
    deep = "[" * 100_000 + "]" * 100_000
    files = {
        "bad.json": b"{not json",
        "latin1.json": "{\"name\": \"J\u00e9r\u00f4me\"}".encode("latin-1"),
        "list.json": b"[]",
        "types.json": json.dumps({**base, "exercises": {"mediation": {
            "passed": "yes", "attempts": 1, "first_passed_attempt": None}}}).encode(),
        "huge-float.json": json.dumps(base).replace('"attempts": 1', '"attempts": 1e999', 1).encode(),
        "huge-int.json": json.dumps(base).replace('"attempts": 1', '"attempts": ' + "9" * 5000, 1).encode(),
        "big-count.json": json.dumps(base).replace('"attempts": 1', '"attempts": 10000000000', 1).encode(),
        "nan.json": json.dumps(base).replace('"attempts": 1', '"attempts": NaN', 1).encode(),
        "deep.json": deep.encode(),
        "deep-inside.json": json.dumps({**base, "guards": {"g": json.loads("[" * 500 + "]" * 500)}}).encode(),
        "path-name.json": json.dumps({**base, "name": "../../etc/passwd"}).encode(),
        "other-lab.json": json.dumps({**base, "lab": "01"}).encode(),
        "bad-table.json": json.dumps({**base, "guards": {"mediation": {**base["guards"]["mediation"],
                                                                       "verdicts": "a" * 10}}}).encode(),
        "bad-attack.json": json.dumps({**base, "attacks": [{**INTENT, "template": "__import__('os')"}]})
        .encode(),
        "extra-key.json": json.dumps({**base, "code": "import os; os.system('touch PWNED')"}).encode(),
        "pickle.json": b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00.",
        "line\nbreak.json": b"{}",
    }
    for name, content in files.items():
        (folder / name).write_bytes(content)
    with open(folder / "too-big.json", "wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    (folder / "folder.json").mkdir()
    (folder / "link.json").symlink_to(folder / "lab03-learner0.json")
    os.mkfifo(folder / "fifo.json")  # opening it would block forever: it must never be opened
    return len(files) + 4


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and symlinks")
def test_hostile_files_are_each_skipped_in_one_line_and_never_run(cli, tmp_path, monkeypatch):
    lab03_progress()
    folder = tmp_path / "class"
    base = _submissions(folder, count=2)
    hostile = _hostile(folder, base)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("class", str(folder), "--chart", str(tmp_path / "c.png"))
    assert code == 0 and "2 submission(s)" in out
    lines = err.splitlines()
    assert len(lines) == hostile and all(line.startswith("skipped ") for line in lines)
    assert all(len(line) < 400 for line in lines)
    assert "skipped 'line\\nbreak.json': " in err
    by_file = {line.split(":")[0].removeprefix("skipped "): line for line in lines}
    assert "not a regular file" in by_file["fifo.json"] and "not a regular file" in by_file["link.json"]
    assert "larger than" in by_file["too-big.json"] and "nested too deeply" in by_file["deep.json"]
    assert "not UTF-8" in by_file["latin1.json"] and "not UTF-8" in by_file["pickle.json"]
    assert "another version" not in by_file["bad-table.json"] and "exactly" in by_file["bad-table.json"]
    assert not (tmp_path / "PWNED").exists()


def test_a_folder_with_nothing_usable_is_one_line_and_status_2(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, err = cli("class", str(tmp_path / "empty"))
    assert code == 2 and "no usable submission" in err and out == ""
    code, _, err = cli("class", str(tmp_path / "missing"))
    assert code == 2 and "not a folder" in err


def test_pass_counts_and_red_team_of_non_lab03_submissions(tmp_path):
    record("01", "workflow", Check(True, "ok"))
    data, _ = build("01", "ana")
    (tmp_path / "a.json").write_text(json.dumps(data))
    usable, skipped = load_folder(tmp_path)
    assert skipped == [] and red_team(usable) is None
    assert pass_counts(usable).loc[("01", "workflow"), "passed"] == 1


def test_the_real_checkers_hand_submit_an_attack_and_a_guard_table(cli, tmp_path):
    from labkit.refunds import checks as lab03

    assert lab03.check_mediation(mediation).passed
    assert lab03.check_intent_attack(INTENT).passed
    code, out, err = cli("submit", "03", "--name", "cleo", "-o", str(tmp_path / "cleo.json"))
    assert code == 0, err
    data = read(tmp_path / "cleo.json").data
    assert data["attacks"] == [INTENT]
    assert data["guards"]["mediation"] == guard_table(mediation)
