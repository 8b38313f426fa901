"""Names as people write them (letters of any script, spaces, hyphens, apostrophes), and two learners
who type the same name are never merged: the class round keeps both and says so."""

import pytest

from labkit.core.check import Check
from labkit.core.errors import LabError
from labkit.core.verdicts import record
from labkit.course.classroom.merge import load_folder, pass_counts
from labkit.course.classroom.submission import build, read


@pytest.mark.parametrize(
    ("name", "file"),
    [
        ("José", "lab01-José.json"),
        ("Ana Maria", "lab01-Ana-Maria.json"),
        ("O'Neil", "lab01-ONeil.json"),
        ("李雷", "lab01-李雷.json"),
        ("Zoë-Jane  Smith", "lab01-Zoë-Jane-Smith.json"),
    ],
)
def test_a_name_of_any_script_is_handed_in_under_a_plain_file_name(cli, tmp_path, name, file):
    record("01", "workflow", Check(True, "ok"))
    (tmp_path / "usb").mkdir()
    code, out, err = cli("submit", "1", "--name", name, "--to", str(tmp_path / "usb"))
    assert code == 0, err
    submission = read(tmp_path / "usb" / file)
    assert submission.name == " ".join(name.split())


@pytest.mark.parametrize("name", ["", " ", "../x", "a/b", "a\\b", "_ana", "x" * 33, "ana:1"])
def test_a_name_that_cannot_name_a_file_is_refused_in_one_line(cli, tmp_path, name):
    record("01", "workflow", Check(True, "ok"))
    code, out, err = cli("submit", "1", "--name", name)
    assert code == 2 and "must be 1-32 letters" in err and err.count("\n") == 1
    assert not (tmp_path / "runs" / "submissions").exists()
    with pytest.raises(LabError, match="must be 1-32 letters"):
        build(1, "-" + name)  # a leading hyphen too (which the shell would take for an option)


def test_two_learners_with_one_name_are_both_kept_and_a_resubmit_still_replaces(cli, tmp_path, monkeypatch):
    usb = tmp_path / "usb"
    usb.mkdir()
    for laptop, passed in (("first", True), ("second", False), ("first", True)):
        monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / laptop))  # another checkout: another author
        record("01", "workflow", Check(passed, "ok" if passed else "not yet"))
        assert cli("submit", "1", "--name", "ana", "--to", str(usb))[0] == 0
    usable, notes = load_folder(usb)
    assert sorted(s.name for s in usable) == ["ana", "ana (2)"]
    assert any(
        n.startswith("same name, different learners: lab 01 by 'ana' came from 2 checkouts") for n in notes
    )
    assert (
        sum(n.startswith("superseded ") for n in notes) == 1
    )  # the first laptop's resubmit replaced its own
    assert len(pass_counts(usable).columns) >= 1
