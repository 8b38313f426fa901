"""A package's public face: the names a notebook imports from it, each loaded on first use.

A lab's `__init__` lists its public names by the module that defines them and hands the list to `face`;
`from labkit.refunds import matrix` then imports `labkit.refunds.metrics` and nothing else (PEP 562), so
the CLI, which reaches into one module of a lab, does not pay for the rest of it. A public name is never
also the name of one of the package's modules: importing that module would set the package's attribute
to the module and shadow the name (tests/test_layout.py checks this for every face).
"""

import importlib
from collections.abc import Callable
from typing import Any


def face(
    namespace: dict[str, Any], defined_in: dict[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for the package whose `globals()` are `namespace` (a name,
    once loaded, is written there, so later lookups skip `__getattr__`), its public names `defined_in`: a
    module and the names it defines (or re-exports), separated by spaces. A module is relative to the
    package unless it starts with "labkit." (a name another package defines, such as lab 01's task in
    lab 02's face); "" lists submodules of the package by name. An unknown name raises AttributeError."""
    package = namespace["__name__"]
    exports = {name: module for module, names in defined_in.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = exports[name]
        if not module:  # a submodule, listed by name
            value = importlib.import_module(f"{package}.{name}")
        else:
            where = module if module.startswith("labkit.") else f"{package}.{module}"
            value = getattr(importlib.import_module(where), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return sorted(exports), __getattr__, __dir__
