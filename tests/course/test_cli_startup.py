"""Start-up: `import labkit` and `labkit --help` import nothing heavy, and lose nothing
(what is imported is checked, never how long it takes: benchmarks/startup.py times it)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import labkit
from labkit.course import commands
from labkit.course.cli import build_parser, command_modules

HEAVY = (
    "pandas",
    "numpy",
    "matplotlib",
    "jsonschema",
    "labkit.baseline.controllers",
    "labkit.baseline.corpus",
)


def _imported_after(code: str) -> set[str]:
    """Top-level module names (and labkit.*) loaded in a fresh interpreter after `code`."""
    probe = (
        f"import sys\n{code}\nimport json\n"
        "print(json.dumps(sorted({*(m.split('.')[0] for m in sys.modules), *sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_labkit_imports_no_heavy_module():
    loaded = _imported_after("import labkit")
    assert not loaded & set(HEAVY)


def test_help_imports_no_command_module():
    loaded = _imported_after(
        "from labkit.course.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert not {m for m in loaded if m.startswith("labkit.course.commands.")}
    assert not loaded & set(HEAVY)


def test_a_command_imports_only_its_own_module():
    loaded = _imported_after(
        "from labkit.course.cli import main\ntry:\n    main(['compare', '--help'])\n"
        "except SystemExit:\n    pass"
    )
    commands_loaded = {m for m in loaded if m.startswith("labkit.course.commands.")}
    assert commands_loaded == {"labkit.course.commands.compare"}


def test_every_command_module_has_a_summary_equal_to_its_registered_help():
    subparsers = next(a for a in build_parser(eager=True)._actions if a.dest == "command")
    registered = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert registered == commands.SUMMARIES
    assert list(registered) == list(command_modules())


def test_lazy_help_reads_exactly_as_with_every_module_imported():
    assert build_parser().format_help() == build_parser(eager=True).format_help()
    for name in commands.SUMMARIES:
        assert build_parser(name).format_help() == build_parser(eager=True).format_help()


def test_every_public_name_resolves_to_its_defining_module():
    assert set(labkit.__all__) == set(labkit._EXPORTS)
    for name, module in labkit._EXPORTS.items():
        assert getattr(labkit, name) is getattr(importlib.import_module(f"labkit.{module}"), name)
    assert sorted(labkit.__all__) == sorted(set(labkit.__all__))
    assert set(labkit.__all__) <= set(dir(labkit))


def test_controllers_stays_the_function_after_its_module_is_imported():
    # In a fresh interpreter: importing lab 01's module first must not shadow the function.
    probe = (
        "import labkit.baseline.controllers\nfrom labkit import controllers\n"
        "import labkit, sys\nprint(controllers is labkit.controllers is "
        "sys.modules['labkit.baseline.controllers'].controllers)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"]


def test_submodules_are_reachable_as_attributes():
    # In a fresh interpreter: in this one, another test may have imported the package already.
    out = _run(
        "import sys, labkit\nprint('labkit.routing' in sys.modules, "
        "labkit.routing is sys.modules['labkit.routing'])"
    )
    assert out == "False True\n"  # not imported by `import labkit`, imported by the attribute
    try:
        labkit.no_such_thing  # noqa: B018 - the attribute access is the test
    except AttributeError as error:
        assert "no_such_thing" in str(error)
    else:
        raise AssertionError("labkit.no_such_thing resolved")


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_labkit_keeps_jsonschema_from_building_the_iri_parser_and_still_validates():
    out = _run(
        "import sys, labkit, jsonschema\n"
        "jsonschema.Draft202012Validator({'type': 'object', 'required': ['id']}).validate({'id': 1})\n"
        "print(sys.modules['rfc3987_syntax'])"
    )
    assert out == "None\n"
    # A process that imported it first keeps it: labkit only fills an empty slot (a stand-in module).
    out = _run(
        "import sys, types\n"
        "before = sys.modules['rfc3987_syntax'] = types.ModuleType('rfc3987_syntax')\n"
        "import labkit\nprint(sys.modules['rfc3987_syntax'] is before)"
    )
    assert out == "True\n"
