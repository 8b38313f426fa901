"""Start-up: `import labkit` and `labkit --help` import nothing heavy, and lose nothing
(what is imported is checked, never how long it takes: benchmarks/startup.py times it)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import subprocess
import sys

import pytest

from labkit.course import commands
from labkit.course.cli import build_parser

HEAVY = {"pandas", "numpy", "matplotlib", "jsonschema"} | {
    "labkit.baseline.controllers",
    "labkit.baseline.corpus",
}
MAIN = "from labkit.course.cli import main\ntry:\n    main({argv})\nexcept SystemExit:\n    pass"


def _run(code: str) -> str:
    """What `code` prints, run in a fresh interpreter (in this one, other tests imported things)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(
    ("code", "command_modules_loaded"),
    [
        ("import labkit", set()),
        (MAIN.format(argv=["--help"]), set()),
        (MAIN.format(argv=["compare", "--help"]), {"labkit.course.commands.compare"}),
    ],
)
def test_start_up_imports_nothing_heavy_and_only_the_command_run(code, command_modules_loaded):
    names = "print(json.dumps(sorted({*(m.split('.')[0] for m in sys.modules), *sys.modules})))"
    loaded = set(json.loads(_run(f"import sys\n{code}\nimport json\n{names}").splitlines()[-1]))
    assert not loaded & HEAVY or command_modules_loaded  # a command imports what it needs
    assert {m for m in loaded if m.startswith("labkit.course.commands.")} == command_modules_loaded


def test_every_command_module_has_a_summary_and_lazy_help_reads_as_eager_help():
    subparsers = next(a for a in build_parser(eager=True)._actions if a.dest == "command")
    registered = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert registered == commands.SUMMARIES
    for name in [None, *commands.SUMMARIES]:
        assert build_parser(name).format_help() == build_parser(eager=True).format_help()


FACES = ["labkit.core", "labkit.baseline", "labkit.decision_loop", "labkit.refunds", "labkit.routing"]


@pytest.mark.parametrize("name", FACES)
def test_a_face_loads_nothing_until_asked_and_no_public_name_is_a_module_name(name):
    # Asking for one name imports its module only; a public name that were also a submodule's name
    # would be shadowed by the module once something imported it (labkit.core.face).
    code = f"import sys, {name}\nprint(sorted(m for m in sys.modules if m.startswith('{name}.')))"
    # `import labkit` loads the kernel's two hooks (errors in one line, table cells unbroken): no pandas.
    hooks = "['labkit.core.cells', 'labkit.core.errors', 'labkit.core.face']\n"
    assert _run(code) == (hooks if name == "labkit.core" else "[]\n")
    face = importlib.import_module(name)
    assert set(face.__all__) <= set(dir(face))
    for public in face.__all__:
        is_module = importlib.util.find_spec(f"{name}.{public}") is not None
        assert inspect.ismodule(getattr(face, public)) == is_module, f"{name}.{public}"
    with pytest.raises(AttributeError, match="no_such_thing"):
        face.no_such_thing  # noqa: B018 - the attribute access is the test


def test_a_learners_kernel_loads_every_lab_without_jsonschema_and_labkit_patches_no_module():
    # Valid shipped data is recognised by fastjsonschema (labkit.core.fixtures): jsonschema, whose import
    # builds an RFC 3987 parser where jupyter-events installed it, is imported only for a wrong file.
    out = _run(
        "import sys, labkit\n"
        "from labkit.baseline import docuctl\nfrom labkit.refunds import read_records, refund_lab, TRIALS\n"
        "from labkit.routing.checks import _cases\n"
        "docuctl(), refund_lab(), _cases(), [list(read_records(f)) for f in sorted(TRIALS.glob('*.jsonl'))]\n"
        "print('jsonschema' in sys.modules, 'rfc3987_syntax' in sys.modules)"
    )
    assert out == "False False\n"


# The commands that take a model: --model SPEC (trials, rerun), a grid's models, or LABKIT_MODEL's.
MODEL_COMMANDS = {"grid", "refund-lab", "rerun", "routing", "trials"}


@pytest.mark.parametrize("command", sorted(commands.SUMMARIES))
def test_the_help_of_a_command_that_takes_a_model_and_only_its_names_every_backend(cli, command):
    code, out, _ = cli(command, "--help")
    text = " ".join(out.split())
    assert code == 0 and "%%" not in text
    if command in MODEL_COMMANDS:
        for backend in ("replay (default)", "replay:<file>", "local", "ollama:<tag>", "openai:<model>"):
            assert backend in text
    else:  # submit, class, serve, ...: no model to choose
        assert "Model backends" not in text and "ollama:<tag>" not in text


def test_every_command_with_a_model_option_is_one_whose_help_names_the_backends():
    subparsers = next(a for a in build_parser(eager=True)._actions if a.dest == "command")
    taking = {name for name, sub in subparsers.choices.items() if "--model" in sub._option_string_actions}
    assert taking == {"rerun", "trials"} and taking <= MODEL_COMMANDS
