"""`labkit submit` and `labkit class`: a learner's work as data; files from the room are untrusted data,
skipped one line each, never run, never overwritten, and the round goes on."""

import functools
import json
import os
import sys

import pytest
from lab03_answers import INTENT, mediation

from labkit.core.check import Check
from labkit.core.verdicts import record
from labkit.course.classroom.merge import PRESETS, chart, load_folder, pass_counts, red_team
from labkit.course.classroom.submission import MAX_BYTES, build, read, submit
from labkit.refunds import red_team as red_team_round
from labkit.refunds.guard_table import guard_table

# These tests' guards are plain functions that always answer alike: each is tabulated once per process.
guard_table = functools.cache(guard_table)


def own_cards(call, state):
    return None if state.shop.owner_of(call.destination) == state.request.customer else "not theirs"


def lab03_progress():
    record("03", "intent_attack", Check(False, "not yet"), {"id": "x"})
    record("03", "intent_attack", Check(True, "ok"), INTENT)
    record("03", "mediation", Check(True, "ok"), guard_table(mediation))
    record("03", "guard", Check(True, "ok"), guard_table(own_cards))
    record("03", "safe_retry", Check(False, "a retry paid twice"))


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
        "safe_retry": {"passed": False, "attempts": 1, "first_passed_attempt": None},
    }
    assert data["attacks"] == [INTENT] and set(data["guards"]) == {"guard", "mediation"}
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_submit_defaults_to_the_runs_folder_and_leaves_out_an_invalid_attack(cli, tmp_path):
    record("03", "intent_attack", Check(False, "no"), {**INTENT, "template": "no_such_template"})
    code, out, err = cli("submit", "3", "--name", "ben")
    assert code == 0
    assert (tmp_path / "runs" / "submissions" / "lab03-ben.json").is_file()
    assert err.count("\n") == 1 and "intent_attack attack is left out" in err and "no_such_template" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["submit", "2", "--name", "ana"], "no checker of lab 02 has run yet"),
        (["submit", "7", "--name", "ana"], "unknown lab '7'"),
        (["submit", "1", "--name", "../../etc/passwd"], "must be 1-32 letters"),
    ],
)
def test_submit_mistakes_are_one_line_and_write_nothing(cli, tmp_path, argv, message):
    record("01", "workflow", Check(True, "ok"))
    code, out, err = cli(*argv)
    assert code == 2 and message in err and err.count("\n") == 1 and out == ""
    assert not (tmp_path / "runs" / "submissions").exists()


def test_submit_from_a_notebook_cell_keeps_a_pass_after_experimenting(tmp_path, capsys):
    record("04", "router", Check(True, "ok"))
    record("04", "router", Check(False, "broke it while experimenting"))
    record("04", "ready", Check(False, "not yet"))
    path = submit(4, "ana")
    assert path == tmp_path / "runs" / "submissions" / "lab04-ana.json"
    assert capsys.readouterr().out.startswith(f"wrote {path}: lab 04, 1 of 2 exercises passed.")
    router = read(path).data["exercises"]["router"]
    assert (router["passed"], router["attempts"], router["first_passed_attempt"]) == (True, 2, 1)


def _submissions(tmp_path, count=8):
    """A class folder of `count` lab-03 submissions made the way `labkit submit` makes them from
    `lab03_progress`, varied per learner; the folder, and the submission they vary."""
    lab03_progress()
    folder = tmp_path / "class"
    folder.mkdir()
    base, _ = build("03", "x")
    for i in range(count):
        data = json.loads(json.dumps(base))
        data["name"] = f"learner{i}"
        data["exercises"]["safe_retry"] = {
            "passed": i % 2 == 0,
            "attempts": 1 + i % 3,
            "first_passed_attempt": 1 + i % 3 if i % 2 == 0 else None,
        }
        if i % 4 == 3:
            data["attacks"], data["guards"] = [], {}
        (folder / f"lab03-learner{i}.json").write_text(json.dumps(data))
    return folder, base


def test_class_merges_ten_submissions_two_malformed_and_scores_the_red_team_from_the_ledger(cli, tmp_path):
    folder, base = _submissions(tmp_path)
    (folder / "broken.json").write_text('{"format": ')
    (folder / "wrong-types.json").write_text(json.dumps({**base, "exercises": ["mediation"]}))
    code, out, err = cli("class", str(folder), "--chart", str(tmp_path / "chart.png"))
    assert code == 0
    assert err.splitlines() == [
        "skipped broken.json: not valid JSON (line 1, column 12: Expecting value)",
        "skipped wrong-types.json: exercises: ['mediation'] is not of type 'object'",
    ]
    assert "8 submission(s)" in out and "2 skipped" in out and "learner0:mediation" in out
    assert (tmp_path / "chart.png").stat().st_size > 10_000
    result = json.loads(cli("class", str(folder), "--json", "--chart", str(tmp_path / "c.png"))[1])
    retry = next(r for r in result["exercises"] if r["exercise"] == "safe_retry")
    counts = ("learners", "attempted", "passed", "median_attempts_to_pass")
    assert [retry[name] for name in counts] == [8, 8, 4, 1.5]  # first passes 1, 3, 2, 1
    defenses = {row["defense"]: row for row in result["red_team"]["defenses"]}
    # A tabulated copy of complete mediation scores exactly as the mediation defense itself.
    same = ("attacks_stopped", "attack_success_rate", "money_lost", "legit_paid")
    assert {k: defenses["learner0:mediation"][k] for k in same} == {k: defenses["mediation"][k] for k in same}
    assert defenses["all_deterministic"]["attack_success_rate"] == 0
    assert defenses["none"]["attacks_stopped"] == 0 and defenses["none"]["legit_paid"] == 1
    attacks = {row["attack"]: row for row in result["red_team"]["attacks"]}
    # The intent attack is a refund the rules allow: mediation and the learners' guards let it through.
    success = {row["attack"]: row for row in result["red_team"]["success"]}
    assert success["learner0:attack"]["mediation"] > 0 and success["learner0:attack"]["confirmation"] == 0
    assert attacks["learner0:attack"]["by"] == "learner0" and "learner3:attack" not in attacks


def test_learners_who_hand_in_the_same_table_are_scored_once_and_alike(tmp_path, monkeypatch):
    from labkit.refunds import metrics

    folder, base = _submissions(tmp_path, count=3)  # three learners, the same two tables each
    allow_all = json.loads(json.dumps(base))
    table = allow_all["guards"]["mediation"]
    table["verdicts"] = "a" * len(table["verdicts"])  # a table that lets every refund through
    allow_all["name"] = "dora"
    (folder / "lab03-dora.json").write_text(json.dumps(allow_all))
    evaluated, score = [], metrics.score_policy
    monkeypatch.setattr(
        red_team_round, "score_policy", lambda *a, **k: evaluated.append(a[1].name) or score(*a, **k)
    )
    usable, _ = load_folder(folder)
    board = red_team(usable).defenses
    # the five presets, then each distinct table once, under the first learner who handed it in:
    # dora's two (her guard is everyone's), then the mediation table the three learners share
    assert evaluated == [*PRESETS, "dora:guard", "dora:mediation", "learner0:mediation"]
    # each learner's row is the better of their two passing guards: the three alike, dora's not hers
    # that allows all, which scores as no guard at all
    rows = board.drop(columns=["by", "shown"])
    learners = [f"learner{i}:mediation" for i in range(3)]
    assert [d for d in board.index if ":" in d] == [*learners, "dora:guard"]
    assert set(board.loc[board["by"] != "course", "shown"]) == {"passed, best of 2"}
    assert rows.loc["learner2:mediation"].equals(rows.loc["learner0:mediation"])
    assert not rows.loc["dora:guard"].equals(rows.loc["none"])


def test_a_learner_is_shown_with_the_guard_that_passed_else_their_best(cli, tmp_path):
    def allow_all(call, state):
        return None

    record("03", "mediation", Check(True, "ok"), guard_table(mediation))
    record("03", "mediation", Check(False, "experimenting"), guard_table(allow_all))
    record("03", "guard", Check(False, "not yet"), guard_table(own_cards))
    ana, _ = build("03", "ana")  # passed, then experimented: her passing guard is handed in
    assert ana["guards"] == {"mediation": guard_table(mediation), "guard": guard_table(own_cards)}
    failed = {"passed": False, "attempts": 2, "first_passed_attempt": None}
    ben = {**ana, "name": "ben", "exercises": {**ana["exercises"], "mediation": failed}}
    ben["guards"] = {"mediation": guard_table(allow_all), "guard": guard_table(own_cards)}
    cleo = {**ben, "name": "cleo", "guards": {"mediation": guard_table(allow_all)}}
    folder = tmp_path / "class"
    folder.mkdir()
    for data in (ana, ben, cleo):
        (folder / f"{data['name']}.json").write_text(json.dumps(data))
    board = red_team(load_folder(folder)[0]).defenses
    learners = board[board["by"] != "course"]
    assert learners["shown"].to_dict() == {
        "ana:mediation": "passed",
        "ben:guard": "none passed, best of 2",
        "cleo:mediation": "none passed",
    }
    same = ["attacks_stopped", "attack_success_rate", "money_lost"]
    assert board.loc["ana:mediation", same].equals(board.loc["mediation", same])
    assert board.loc["cleo:mediation", same].equals(board.loc["none", same])  # her only guard, shown
    assert board.loc["ben:guard", "money_lost"] < board.loc["none", "money_lost"]


def test_a_later_file_under_a_name_supersedes_the_earlier_and_says_so(tmp_path):
    # Names are self-reported: the latest `submitted` under a name counts, every earlier one is listed.
    folder, base = _submissions(tmp_path, count=2)
    later = {**base, "name": "learner0", "submitted": "2999-01-01T00:00:00+00:00"}
    (folder / "again.json").write_text(json.dumps(later))
    (folder / "copy.json").write_text((folder / "lab03-learner1.json").read_text())
    tied = {**base, "name": "tie", "submitted": "2999-01-01T00:00:00"}  # no zone: read as UTC
    (folder / "tie-a.json").write_text(json.dumps(tied))
    (folder / "tie-b.json").write_text(json.dumps({**tied, "attacks": [], "submitted": later["submitted"]}))
    usable, skipped = load_folder(folder)
    assert [s.file for s in usable] == ["again.json", "copy.json", "tie-a.json"]  # a tie: first by name
    later = "replaced by {} submitted 2999-01-01T00:00:00{}"
    assert sorted(skipped) == [
        "skipped lab03-learner1.json: the same lab 03 submission by learner1 as copy.json",
        f"superseded lab03-learner0.json: lab 03 by learner0 submitted {base['submitted']}, "
        + later.format("again.json", "+00:00"),
        "superseded tie-b.json: lab 03 by tie submitted 2999-01-01T00:00:00+00:00, "
        + later.format("tie-a.json", ""),
    ]


def _hostile(folder, base):
    """Files a class folder may hold: each must be skipped with one line, none may run anything."""
    deep = "[" * 100_000 + "]" * 100_000

    def changed(**fields):
        return json.dumps({**base, **fields}).encode()

    mediation = base["guards"]["mediation"]
    files = {
        "bad.json": b"{not json",
        "list.json": b"[]",
        "huge-int.json": json.dumps(base).replace('"attempts": 1', '"attempts": ' + "9" * 5000, 1).encode(),
        "nan.json": json.dumps(base).replace('"attempts": 1', '"attempts": NaN', 1).encode(),
        "deep.json": deep.encode(),
        "path-name.json": changed(name="../../etc/passwd"),
        "other-lab.json": changed(lab="01"),
        "bad-table.json": changed(guards={"mediation": {**mediation, "verdicts": "a" * 10}}),
        "bad-attack.json": changed(attacks=[{**INTENT, "template": "__import__('os')"}]),
        "extra-key.json": changed(code="import os; os.system('touch PWNED')"),
        "format-spec.json": changed(attacks=[{**INTENT, "goal": "to {destination} {user:>10000000}"}]),
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
    folder, base = _submissions(tmp_path, count=2)
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
    assert "not UTF-8" in by_file["pickle.json"]
    assert "another version" not in by_file["bad-table.json"] and "exactly" in by_file["bad-table.json"]
    assert "placeholder" in by_file["format-spec.json"] and "format spec" in by_file["format-spec.json"]
    assert not (tmp_path / "PWNED").exists()


def test_a_folder_with_nothing_usable_is_one_line_and_status_2(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, err = cli("class", str(tmp_path / "empty"))
    assert code == 2 and "no usable submission" in err and out == ""
    code, _, err = cli("class", str(tmp_path / "missing"))
    assert code == 2 and "not a folder" in err


def test_pass_counts_and_red_team_of_non_lab03_submissions(tmp_path, cli):
    record("01", "workflow", Check(True, "ok"))
    record("01", "decide", Check(False, "not yet"))
    data, _ = build("01", "ana")
    (tmp_path / "a.json").write_text(json.dumps(data))
    usable, skipped = load_folder(tmp_path)
    assert skipped == [] and red_team(usable) is None
    assert pass_counts(usable).loc[("01", "workflow"), "passed"] == 1
    code, out, _ = cli("class", str(tmp_path), "--chart", str(tmp_path / "c.png"))
    decide = next(line for line in out.splitlines() if " decide " in f" {line} ")
    assert code == 0 and decide.split()[-1] == "n/a"  # no one passed it: no median attempt


def test_the_real_checkers_hand_submit_an_attack_and_a_guard_table(cli, tmp_path):
    from labkit.refunds import checks as lab03

    assert lab03.check_mediation(mediation).passed
    assert lab03.check_intent_attack(INTENT).passed
    code, out, err = cli("submit", "03", "--name", "cleo", "-o", str(tmp_path / "cleo.json"))
    assert code == 0, err
    data = read(tmp_path / "cleo.json").data
    assert data["attacks"] == [INTENT]
    assert data["guards"]["mediation"] == guard_table(mediation)


def _lab01(folder, name="ana", **changes):
    """A lab-01 submission as `labkit submit` writes it, with `changes` applied; its path."""
    record("01", "workflow", Check(True, "ok"))
    data, _ = build("01", "x")
    data = {**data, "name": name, **changes}
    folder.mkdir(exist_ok=True)
    path = folder / f"lab01-{name}-{len(list(folder.iterdir()))}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_learner_named_like_a_course_row_never_replaces_it(cli, tmp_path):
    # One round with a learner named after each kind of course row (a defense preset, the
    # deterministic bundle, no defense, an attack): every course row stays the course's.
    names = ["mediation", "all_deterministic", "none", "direct-other-order"]
    folder, base = _submissions(tmp_path, count=1)
    for name in names:
        (folder / f"{name}.json").write_text(json.dumps({**base, "name": name}))
    code, out, err = cli("class", str(folder), "--json", "--chart", str(tmp_path / "c.png"))
    assert code == 0, err
    result = json.loads(out)
    defenses = {row["defense"]: row["by"] for row in result["red_team"]["defenses"]}
    attacks = {row["attack"]: row["by"] for row in result["red_team"]["attacks"]}
    assert all(defenses[preset] == "course" for preset in ("none", "mediation", "all_deterministic"))
    assert attacks["direct-other-order"] == "course"
    for name in names:
        assert defenses[f"{name}:mediation"] == name and attacks[f"{name}:attack"] == name
    rows = [*defenses.items(), *attacks.items()]
    assert all(by == "course" or label.startswith(f"{by}:") for label, by in rows)


def entry(exercise="workflow", passed=True, attempts=1, first=1):
    return {"exercises": {exercise: {"passed": passed, "attempts": attempts, "first_passed_attempt": first}}}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"submitted": "zzzz-not-a-date"}, "is not an ISO date"),
        (entry("mediation"), "lab 01 has no exercise 'mediation'"),
        (entry(attempts=0), "0 is less than the minimum of 1"),
        (entry(attempts=2, first=5), "first passed at attempt 5 of only 2"),
        (entry(attempts=3, first=None), "passed, but no attempt passed it"),
        (entry(attempts=True), "True is not of type 'integer'"),
    ],
)
def test_self_reported_counts_and_names_are_checked_against_the_lab(tmp_path, changes, message):
    folder = tmp_path / "class"
    _lab01(folder, "ana")
    _lab01(folder, "ben", **changes)
    usable, skipped = load_folder(folder)
    assert [s.name for s in usable] == ["ana"]
    assert len(skipped) == 1 and message in skipped[0] and skipped[0].startswith("skipped lab01-ben-1.json: ")


@pytest.mark.parametrize(
    "chart, message",
    [
        ("x.txt", "x.txt must end in .png"),
        ("notes.txt/c.png", "is a file, not a folder"),
        ("/proc/c.png", "cannot create a file in /proc"),
        ("folder", "folder is a folder"),
    ],
)
def test_a_bad_chart_path_is_one_line_before_the_round_runs(cli, tmp_path, monkeypatch, chart, message):
    from labkit.course.commands import class_

    _lab01(tmp_path / "class")
    (tmp_path / "notes.txt").write_text("my notes")
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(class_, "load_folder", lambda folder: pytest.fail("the round ran"))
    code, out, err = cli("class", str(tmp_path / "class"), "--chart", chart)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert (tmp_path / "notes.txt").read_text() == "my notes" and list((tmp_path / "folder").iterdir()) == []


def test_a_guard_that_raised_everywhere_is_no_guard(cli, tmp_path):
    def broken(call, state):
        raise TypeError("not written yet")

    record("03", "guard", Check(False, "raised"), guard_table(broken))
    record("03", "mediation", Check(True, "ok"), guard_table(mediation))
    code, _, err = cli("submit", "3", "--name", "ana", "-o", str(tmp_path / "a.json"))
    assert code == 0 and "your guard guard is left out: the guard raised on every call" in err
    assert set(read(tmp_path / "a.json").data["guards"]) == {"mediation"}


def _progress_file(content: bytes):
    from labkit.core.verdicts import progress_path

    path = progress_path("03")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_a_progress_file_nested_100000_deep_is_one_line(cli):
    _progress_file(b'{"exercises": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    code, out, err = cli("submit", "3", "--name", "ana")
    assert code == 2 and out == "" and err.count("\n") == 1 and "nested too deeply" in err
    from labkit.refunds import checks as lab03  # the lab's checkers still answer, and start afresh

    assert lab03.check_guard(lambda call, state: None).passed is False


@pytest.mark.parametrize("attempts", [10**30, -3, True, 0, "7"])
def test_a_tampered_count_is_left_out_with_a_line_and_the_file_is_one_class_accepts(cli, tmp_path, attempts):
    data = {
        "lab": "03",
        "exercises": {
            "safe_retry": {"passed": True, "attempts": 1, "first_passed_attempt": 1},
            "guard": {"passed": True, "attempts": attempts, "first_passed_attempt": 1},
            "not_an_exercise": {"passed": True, "attempts": 1, "first_passed_attempt": 1},
        },
    }
    _progress_file(json.dumps(data).encode())
    code, out, err = cli("submit", "3", "--name", "ana", "-o", str(tmp_path / "class" / "a.json"))
    assert code == 0 and "Hand this file to your instructor" in out
    assert "exercise 'guard' is left out" in err and "exercise 'not_an_exercise' is left out" in err
    usable, skipped = load_folder(tmp_path / "class")
    assert skipped == [] and set(usable[0].data["exercises"]) == {"safe_retry"}


def test_submit_to_a_shared_folder_never_overwrites_another_learners_file(cli, tmp_path):
    stick = tmp_path / "usb"
    stick.mkdir()
    record("01", "workflow", Check(True, "ok"))
    code, out, err = cli("submit", "1", "--name", "ana", "--to", str(stick))
    assert code == 0, err
    assert out.startswith(f"wrote {stick / 'lab01-ana.json'}: lab 01, 1 of 1 exercises passed")
    first = (stick / "lab01-ana.json").read_bytes()
    record("01", "decide", Check(False, "not yet"))  # another ana, or the same one later
    code, out, err = cli("submit", "1", "--name", "ana", "--to", str(stick))
    assert code == 0
    assert out.startswith(f"wrote {stick / 'lab01-ana-2.json'} (lab01-ana.json is already there")
    assert (stick / "lab01-ana.json").read_bytes() == first
    assert sorted(p.name for p in stick.iterdir()) == ["lab01-ana-2.json", "lab01-ana.json"]
    second = json.loads((stick / "lab01-ana-2.json").read_text())
    if second["submitted"] == json.loads(first)["submitted"]:  # within one second: make it later
        second["submitted"] = "2999-01-01T00:00:00+00:00"
        (stick / "lab01-ana-2.json").write_text(json.dumps(second))
    code, out, err = cli("class", str(stick), "--chart", str(tmp_path / "c.png"))
    assert code == 0 and "1 submission(s)" in out and "1 superseded, 0 skipped" in out
    assert "names are self-reported" in out and "01  decide " in out  # the resubmit counts
    assert err.startswith("superseded lab01-ana.json: lab 01 by ana submitted ") and err.count("\n") == 1
    code, _, err = cli("submit", "1", "--name", "ana", "--to", str(tmp_path / "missing"))
    assert code == 2 and "is not a folder" in err and err.count("\n") == 1


def test_sixty_learners_read_in_tables_120_wide_and_a_bounded_chart(cli, tmp_path, monkeypatch):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from labkit.course.commands import class_

    folder, base = _submissions(tmp_path, count=0)  # the class folder and base; the learners are below
    for i in range(60):  # the longest names a submission may have; the same tables, scored once
        name = f"learner-{i:02d}".ljust(32, "x")
        (folder / f"{name}.json").write_text(json.dumps({**base, "name": name}))
    figures = []
    monkeypatch.setattr(class_, "chart", lambda *a: figures.append(chart(*a)) or figures[-1])
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("class", "class", "--chart", "c.png")
    assert code == 0 and err == "" and "60 submission(s)" in out and "60/60" in out
    assert max(len(line) for line in out.splitlines()) <= 120
    (figure,) = figures
    assert figure.get_figwidth() <= 14 and figure.get_figheight() <= 12
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    for axes in figure.axes[:2]:
        for labels in (axes.get_xticklabels(), axes.get_yticklabels()):
            boxes = [label.get_window_extent(renderer) for label in labels if label.get_text()]
            assert boxes and not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:], strict=False))
    assert len(figure.axes[1].get_yticklabels()) == 30  # the strongest 30 of 69 attacks


def test_junk_files_that_sort_first_never_push_out_a_valid_one(tmp_path):
    folder = tmp_path / "class"
    _lab01(folder, "zoe")
    for i in range(600):
        (folder / f"0-junk-{i:03d}.json").write_text("{}")
    usable, skipped = load_folder(folder)
    assert [s.name for s in usable] == ["zoe"] and len(skipped) == 600
