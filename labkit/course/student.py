"""Output-free copies of the labs (`make lab` writes them, then opens them): each `NN_name.ipynb` in the
folder, never a subfolder (solutions); a copy already there is the learner's work, kept as it is."""

import json
import re
import sys
from pathlib import Path

_LAB_NOTEBOOK = re.compile(r"^\d\d_[A-Za-z0-9_]+\.ipynb$")


def student_copies(source: Path, destination: Path) -> list[Path]:
    """Write an output-free copy of every lab notebook in `source` that `destination` lacks; the new ones."""
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(p for p in source.iterdir() if p.is_file() and _LAB_NOTEBOOK.match(p.name)):
        target = destination / path.name
        if target.exists():
            continue
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "code":
                cell["outputs"], cell["execution_count"] = [], None
            cell.get("metadata", {}).pop("execution", None)  # per-cell timings some front ends record
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2:  # serves: user, as is the folder check below
        print("usage: python -m labkit.course.student SOURCE_FOLDER DESTINATION_FOLDER", file=sys.stderr)
        return 2
    source, destination = map(Path, argv)
    if not source.is_dir():
        print(f"labkit.course.student: error: {source}: not a folder", file=sys.stderr)
        return 2
    written = student_copies(source, destination)
    kept = ", ".join(sorted(p.name for p in destination.glob("*.ipynb") if p not in written))
    if written:
        print(f"{len(written)} output-free notebooks in {destination}/: {', '.join(p.name for p in written)}")
    elif kept:
        print(f"the copies are already in {destination}/ (nothing new to copy from {source}/)")
    else:
        print(f"no lab notebooks (NN_name.ipynb) in {source}/: nothing copied to {destination}/")
    if kept:
        print(f"kept as they are (your work: delete one to start it afresh): {kept}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
