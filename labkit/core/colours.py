"""One colour per controller, policy and outcome, the same in every lab's charts (not
matplotlib's cycle, whose colour depends on a table's order)."""

# Fixed controllers are blues and greys, loops greens, the language model purple, and
# lab 03's policies keep the same logic: the obedient one orange, the careful one green.
CONTROLLERS = {
    "keyword route": "#757575",
    "search/read workflow": "#1565c0",
    "workflow": "#1565c0",
    "fallback workflow": "#0288d1",
    "two-rule workflow": "#0d47a1",
    "spell-correct-first workflow": "#5c6bc0",
    "scripted loop": "#388e3c",
    "adaptive loop": "#1b5e20",
    "model": "#8e24aa",
    "SmolLM2": "#8e24aa",
    "gullible": "#e65100",
    "careful": "#2e7d32",
}

OUTCOMES = {"correct": "#2e7d32", "wrong": "#8d2d1a"}

_FALLBACK = "#757575"


def colour(name: str) -> str:
    """The colour of controller or policy `name` (its prefix before " (" also counts)."""
    return CONTROLLERS.get(name) or CONTROLLERS.get(name.split(" (")[0], _FALLBACK)
