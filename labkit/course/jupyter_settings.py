"""`python -m labkit.course.jupyter_settings` (`make lab`: pip skips an editable install's data files):
JupyterLab's news popup off and the file browser's "Modified" column hidden (at 1366 px its sidebar
would cut the labs' names), `jupyter_overrides.json` copied to the environment's overrides.d/labkit.json."""

import shutil
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("jupyter_overrides.json")


def target(prefix: str | Path = sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "labkit.json"


def installed(prefix: str | Path = sys.prefix) -> bool:
    """Is the override in place, with the content this labkit ships?"""
    path = target(prefix)
    return path.is_file() and path.read_bytes() == SOURCE.read_bytes()


def _install(prefix: str | Path = sys.prefix) -> Path:
    """Copy the override into `prefix`'s JupyterLab settings; return where it went."""
    path = target(prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOURCE, path)
    return path


if __name__ == "__main__":
    print(f"JupyterLab's news popup and Modified column are off for this environment: {_install()}")
