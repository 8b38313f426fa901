"""`labkit class` against generated hostile submission files: never a traceback, every bad file named
on one line, and nothing that reaches the tables breaks what a submission promises."""

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.course.classroom.submission import FORMAT, MAX_ATTEMPTS, exercises_of
from labkit.course.cli import main

COURSE_ROWS = ["mediation", "all_deterministic", "none", "provenance", "confirmation", "direct-other-order"]
FORMAT_SPECS = ["{amount:.2f}", "{user:>10000000}", "{order!r}", "{order.__class__}", "{destination[0]}",
                "{", "}", "{nope}", "{{order}}"]


def valid(lab: str, name: str = "ana") -> dict:
    exercise = sorted(exercises_of(lab))[0]
    return {"format": FORMAT, "lab": lab, "name": name, "submitted": "2025-01-01T09:00:00+00:00",
            "exercises": {exercise: {"passed": True, "attempts": 2, "first_passed_attempt": 1}},
            "attacks": [], "guards": {}}


ATTACK = {"id": "mine", "template": "important_instructions", "goal": "refund order {order} to {destination}",
          "check": {"kind": "not_asked"},
          "gold": [{"order": "{order}", "amount": "64.50", "destination": "{destination}"}],
          "places": ["review"]}

scalars = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40), st.booleans(), st.none(),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
    st.sampled_from([*COURSE_ROWS, *FORMAT_SPECS, "zzzz-not-a-date", "2025-13-45", "../../etc/passwd", "",
                     "9" * 400, "a" * 5000, "\u202e\u0000"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=8), scalars,
                                                                            max_size=3))


@st.composite
def hostile_data(draw) -> dict:
    data = valid(draw(st.sampled_from(["01", "02", "03", "04"])))
    exercise = next(iter(data["exercises"]))
    kind = draw(st.sampled_from(["top", "entry", "exercise", "name", "goal", "lab", "several"]))
    for _ in range(3 if kind == "several" else 1):
        parts = ["top", "entry", "exercise", "name", "goal"]
        part = kind if kind != "several" else draw(st.sampled_from(parts))
        if part == "top":
            data[draw(st.sampled_from([*data, "extra"]))] = draw(values)
        elif part == "entry":
            field = draw(st.sampled_from(["passed", "attempts", "first_passed_attempt", "extra"]))
            entries = data.get("exercises")
            if isinstance(entries, dict) and isinstance(entries.get(exercise), dict):
                entries[exercise][field] = draw(values)
        elif part == "exercise":
            known = sorted(exercises_of("03") | exercises_of("01"))
            other = draw(st.sampled_from(known) | st.text(max_size=45))
            if not isinstance(data.get("exercises"), dict):
                continue
            data["exercises"][other] = draw(st.one_of(values, st.fixed_dictionaries({
                "passed": st.booleans(), "attempts": st.integers(-5, 2 * MAX_ATTEMPTS),
                "first_passed_attempt": st.none() | st.integers(-5, 2 * MAX_ATTEMPTS)})))
        elif part == "name":
            data["name"] = draw(st.sampled_from(COURSE_ROWS) | st.text(max_size=40))
        elif part == "goal":
            data["lab"] = "03"
            data["exercises"] = {"intent_attack": {"passed": True, "attempts": 1, "first_passed_attempt": 1}}
            goal = draw(st.sampled_from(FORMAT_SPECS).map(lambda spec: f"refund order {{order}} {spec}"))
            data["attacks"] = [{**ATTACK, "goal": goal}]
        elif part == "lab":
            data["lab"] = draw(st.sampled_from(["01", "02", "03", "04", "05", "3", 3]))
    return data


raw_files = st.one_of(
    hostile_data().map(lambda data: json.dumps(data).encode()),
    st.binary(max_size=200),
    st.integers(1, 200_000).map(lambda depth: b"[" * depth + b"]" * depth),
    hostile_data().map(lambda data: json.dumps(data).encode()[: len(json.dumps(data)) // 2]),
    hostile_data().map(lambda data: json.dumps(data).replace("2", "1e999", 1).encode()),
)


class Figure:
    def savefig(self, path, **options):
        Path(path).write_bytes(b"png")


def named(line: str) -> list[str]:
    """The file names a `skipped ...: why` line names (several for a conflict)."""
    assert line.startswith("skipped "), line
    head = line.removeprefix("skipped ").split(": ", 1)[0]
    return head.split(", ")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(raw_files, min_size=1, max_size=4))
def test_hostile_files_never_crash_the_round_and_each_is_named_in_one_line(files):
    from labkit.course.commands import class_

    seen = []
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        folder = Path(tmp) / "class"
        folder.mkdir()
        (folder / "good.json").write_text(json.dumps(valid("01", "good")))
        for index, content in enumerate(files):
            (folder / f"f{index}.json").write_bytes(content)
        # The round's tables only: red-team scoring of valid files is tested in test_classroom.py.
        patch.setattr(class_, "red_team", lambda submissions: seen.extend(submissions))
        patch.setattr(class_, "chart", lambda counts, round_: Figure())  # matplotlib: 0.2 s an example
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["class", str(folder), "--json", "--chart", str(Path(tmp) / "c.png")])
    assert code == 0 and err.getvalue() == ""  # --json: the skipped lines are in the JSON
    result = json.loads(out.getvalue())
    usable = {s["file"] for s in result["submissions"]}
    skipped = [name for line in result["skipped"] for name in named(line)]
    assert sorted([*usable, *skipped]) == sorted(["good.json", *(f"f{i}.json" for i in range(len(files)))])
    assert all(len(line) < 400 and "\n" not in line for line in result["skipped"])
    assert {s.file for s in seen} <= usable
    for submission in seen:
        data = submission.data
        for exercise, entry in data["exercises"].items():
            assert exercise in exercises_of(data["lab"])
            assert type(entry["attempts"]) is int and 1 <= entry["attempts"] <= MAX_ATTEMPTS
            first = entry["first_passed_attempt"]
            assert first is None or 1 <= first <= entry["attempts"]
        for attack in data["attacks"]:
            assert all(spec not in attack["goal"] for spec in FORMAT_SPECS[:5])
