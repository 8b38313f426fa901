"""Output-free copies of the labs for learners: `python -m labkit.course.student notebooks student`.

A learner who sees the committed outputs reads the answer before predicting it. This copies
each lab notebook directly in the source folder (`NN_name.ipynb`: 00 to 04) with every output
and execution count removed and everything else — cells, tags, metadata — unchanged. Only
those files are read: `notebooks/solutions/` and any other subfolder is never copied.
The destination is replaced file by file; nothing else in it is touched.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

LAB = re.compile(r"^\d\d_[A-Za-z0-9_]+\.ipynb$")


def strip(notebook: dict) -> dict:
    """`notebook` (nbformat 4 JSON) with no outputs and no execution counts."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)  # per-cell timings some front ends record
    return notebook


def student_copies(source: Path, destination: Path) -> list[Path]:
    """Write an output-free copy of every lab notebook in `source` into `destination`."""
    labs = sorted(p for p in source.iterdir() if p.is_file() and LAB.match(p.name))
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for path in labs:
        notebook = strip(json.loads(path.read_text(encoding="utf-8")))
        target = destination / path.name
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m labkit.course.student SOURCE_FOLDER DESTINATION_FOLDER", file=sys.stderr)
        return 2
    source, destination = map(Path, argv)
    if not source.is_dir():
        print(f"labkit.course.student: error: {source}: not a folder", file=sys.stderr)
        return 2
    written = student_copies(source, destination)
    print(f"{len(written)} output-free notebooks in {destination}/: {', '.join(p.name for p in written)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
