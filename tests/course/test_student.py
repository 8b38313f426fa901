"""`make student`: output-free copies of the labs, solutions never included."""

import json
import shutil
from pathlib import Path

from labkit.course.student import main

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def kept(cells):
    return [(c["source"], c.get("metadata", {}).get("tags")) for c in cells]


def test_student_copies_have_every_cell_and_no_output_and_no_solution(tmp_path, capsys):
    source = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, source)
    (source / "solutions").mkdir(exist_ok=True)
    shutil.copy(next(source.glob("01_*.ipynb")), source / "solutions" / "01_solution.ipynb")
    assert main([str(source), str(tmp_path / "student")]) == 0
    labs = sorted(p.name for p in source.glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in (tmp_path / "student").iterdir()) == labs and len(labs) >= 4
    for name in labs:
        original = json.loads((source / name).read_text())
        copy = json.loads((tmp_path / "student" / name).read_text())
        assert kept(copy["cells"]) == kept(original["cells"])
        code = [c for c in copy["cells"] if c["cell_type"] == "code"]
        assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert f"{len(labs)} output-free notebooks" in capsys.readouterr().out


def test_student_copies_of_a_missing_folder_is_one_line_and_status_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope"), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_make_lab_opens_the_output_free_copies_without_solutions_and_keeps_a_learners_work(tmp_path):
    makefile = (NOTEBOOKS.parent / "Makefile").read_text()
    recipe = makefile.split("\nlab: ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [line.split()[1:4] for line in recipe] == [
        ["-m", "labkit.course.student", "notebooks"],
        ["lab", "$(STUDENT)/", "$(AS_ROOT)"],
    ] and recipe[0].split()[4] == "$(STUDENT)"
    folder = tmp_path / "student"
    assert main([str(NOTEBOOKS), str(folder)]) == 0  # what `make lab` writes, then opens
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) and "solutions" not in names
    mine = folder / names[1]
    mine.write_text(mine.read_text().replace('"source": [', '"source": ["# my work\\n", ', 1))
    assert main([str(NOTEBOOKS), str(folder)]) == 0  # `make lab` again: the learner's work stays
    assert "# my work" in mine.read_text()
