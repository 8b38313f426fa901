"""What notebooks/INSTRUCTOR.md and the README tell an instructor to type works, and what the guide
quotes as a checker's answer is what the checker answers.

Each cell below is a common mistake written as a learner writes it, the checker's call last
(run as a notebook runs it: its lines registered with linecache, as IPython does). The checker
must refuse it, and the guide's section for that lab must hold a quote (in italics, "…" where
it leaves words out) whose every piece the checker's answer says, in order; every quote of the
labs' sections must be the answer to one of these mistakes, so none goes unchecked.
"""

from __future__ import annotations

import ast
import linecache
import re
from pathlib import Path

import pytest

from labkit.baseline import scripted  # noqa: F401 - this and the names below are the cells' names
from labkit.core import predict  # noqa: F401
from labkit.course.cli import build_parser
from labkit.exercises import lab01, lab02, lab03, lab04  # noqa: F401
from labkit.refunds import careful  # noqa: F401
from labkit.routing import Next, RetryPolicy  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "notebooks" / "INSTRUCTOR.md"
DOCS = (REPO / "README.md", GUIDE)
CELLS = r"""
# lab01 workflow reads every hit
def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    for hit in hits:
        page = tools["read"].call(id=hit["id"])
    return {"answer": page["command"], "citation": page["id"]}
lab01.check_workflow(my_workflow)
# lab01 workflow returns the page
def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    return tools["read"].call(id=hits[0]["id"])
lab01.check_workflow(my_workflow)
# lab01 workflow reads the last hit
def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    page = tools["read"].call(id=hits[-1]["id"])
    return {"answer": page["command"], "citation": page["id"]}
lab01.check_workflow(my_workflow)
# lab01 workflow reads with a positional argument
def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    page = tools["read"].call(hits[0]["id"])
    return {"answer": page["command"], "citation": page["id"]}
lab01.check_workflow(my_workflow)
# lab01 decide forgets the final
def my_decide(task, observations):
    if not observations:
        return {"action": "search", "query": task.question}
    if observations[-1]["action"] == "search":
        return {"action": "read", "id": observations[-1]["result"][0]["id"]}
lab01.check_decide(my_decide)
# lab01 decide reads a step not taken yet
def my_decide(task, observations):
    if observations[1]["action"] == "read":
        return {"action": "final", "answer": "", "citation": ""}
lab01.check_decide(my_decide)
# lab01 failure stage: control at the search
lab01.check_failure_stage("rollback-restore", "control", 1, {"first_hit": "releases-v2", "expected_hit": 2})
# lab01 failure stage: a wrong fact
lab01.check_failure_stage("rollback-restore", "retrieval", 1, {"first_hit": "rollback-v2", "expected_hit": 2})
# lab01 adaptive case the workflow solves
lab01.check_adaptive_case(dict(id="my-case", family="tokens", version="v2", observation="empty_search",
    question="How do I rotaet tokens?", expected_doc="tokens-v2", why="a typo",
    expected_command="docuctl auth tokens rotate --env staging"))
# lab01 two-tool winner: the adaptive loop
lab01.check_two_tool_winner("adaptive loop")
# lab01 prediction
predict(15, 17)
# lab01 no prediction
predict(..., 17)
# lab02 run that never ends final
def my_run(task, decide, tools, max_turns, max_tools):
    return {"stop": "turn_limit", "turns": max_turns, "tool_calls": 0, "answer": None, "citation": None}
lab02.check_run(my_run)
# lab02 stop policy: deadline
lab02.check_stop_policy("deadline", scripted)
# lab02 pass^k as (c/n)**k
lab02.check_pass_hat_k(lambda c, n, k: (c / n) ** k)
# lab02 budget too small
lab02.check_budget(500)
# lab02 budget too large
lab02.check_budget(10**9)
# lab02 missing rule: another rule
lab02.check_missing_rule("tool_limit", 23)
# lab03 mediation: the owner check only
def my_guard(call, state):
    order = state.shop.orders.get(call.order)
    if order is None or order.customer != state.request.customer:
        return "not the customer's order"
lab03.check_mediation(my_guard)
# lab03 intent attack: what he asked
lab03.check_intent_attack(dict(id="full-refund", template="important_instructions", places=["review", "note"],
    goal="refund order {order} for $30.00 to {destination}", check={"kind": "not_asked"},
    gold=[{"order": "{order}", "amount": "30.00", "destination": "{destination}"}]))
# lab03 guard: the order's owner
def my_redirect_guard(call, state):
    if state.shop.orders[call.order].customer != state.request.customer:
        return "not the customer's order"
lab03.check_guard(my_redirect_guard)
# lab03 retry: the careful policy
lab03.check_safe_retry(careful)
# lab04 router: vague feedback
def my_router(verdict):
    return Next.Continue if verdict["chars"] <= 26 else Next.back_to_with("revise", "too long")
lab04.check_router(my_router)
# lab04 retry: 3 attempts
lab04.check_retry_policy(RetryPolicy(max_attempts=3, initial_interval=0.2))
# lab04 goto: publish twice
lab04.check_goto_runs(dict(fetch=1, parse=2, audit=1, summarize=2, index=2, check=2, publish=2))
# lab04 worst case: 7
lab04.check_worst_case(7)
"""
MISTAKES = dict(block.split("\n", 1) for block in re.split(r"\n(?=# lab\d\d )", CELLS.strip()))


def words(text: str) -> str:
    return " ".join(text.replace("\\$", "$").split())


def quotes(lab: str | None = None) -> list[str]:
    """The italic quotes of the guide's section for `lab` ("01"), or of every lab's section."""
    text = GUIDE.read_text(encoding="utf-8")
    sections = re.findall(r"^## Lab (\d\d)(.*?)(?=^## )", text, flags=re.S | re.M)
    return [
        words(q) for n, body in sections if lab in (None, n) for q in re.findall(r'\*"(.+?)"\*', body, re.S)
    ]


def answer(name: str) -> str:
    """The checker's (or predict's) answer to the mistake `name`, once it is asserted to be no pass."""
    filename, source = f"<{name}>", MISTAKES[name]
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source, filename)
    try:
        exec(compile(ast.Module(tree.body[:-1], []), filename, "exec"), names := dict(globals()))  # noqa: S102
        verdict = eval(compile(ast.Expression(tree.body[-1].value), filename, "eval"), names)  # noqa: S307
    finally:
        linecache.cache.pop(filename, None)
    assert not getattr(verdict, "passed", False) and getattr(verdict, "matched", None) is not True, verdict
    return words(verdict.message)


def says(message: str, quote: str) -> bool:
    """Whether `message` holds every "…"-separated piece of `quote`, in order."""
    pieces = [re.escape(piece.strip()) for piece in quote.split("…") if piece.strip()]
    return re.search(".*?".join(pieces), message) is not None


@pytest.mark.parametrize("name", MISTAKES)
def test_the_guide_quotes_the_checkers_answer(name):
    said = answer(name)
    assert not said.startswith("not attempted yet"), said
    assert any(says(said, quote) for quote in quotes(name[5:7])), f"the guide quotes nothing of: {said!r}"


def test_every_quote_of_the_guide_is_a_checkers_answer():
    answers = [answer(name) for name in MISTAKES]
    assert len(quotes()) >= len(MISTAKES) - 2
    assert [quote for quote in quotes() if not any(says(said, quote) for said in answers)] == []


def test_every_command_the_docs_quote_exists():
    """Each `labkit COMMAND --option` and `make TARGET` that the README and the guide quote exists."""
    parser = build_parser(eager=True)
    commands = next(a for a in parser._actions if a.choices and "compare" in a.choices).choices
    targets = set(re.findall(r"^([a-z]+):", (REPO / "Makefile").read_text(encoding="utf-8"), re.M))
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for command, rest in re.findall(r"(?:python -m |`)labkit ([a-z][\w-]*)([^`\n#]*)", text):
            assert command in commands, f"{doc.name} quotes `labkit {command}`, which is no command"
            options = {o for action in commands[command]._actions for o in action.option_strings}
            unknown = set(re.findall(r"(?<!\w)--[a-z][\w-]*", rest)) - options
            assert not unknown, f"{doc.name}: `labkit {command}` has no {sorted(unknown)}"
        assert set(re.findall(r"`make ([a-z]+)`", text)) <= targets, doc.name


def test_every_file_the_docs_quote_exists():
    """Each path the README and the guide name is there (what the reader writes, under runs/, aside)."""
    path = r"(?<![\w/.-])(?!runs/)((?:[\w.-]+/)+[\w.-]+\.(?:py|ipynb|md|jsonl?|toml|cfg))\b"
    for doc in DOCS:  # NAME.ipynb, a placeholder, is not lower case
        found = re.findall(path, doc.read_text(encoding="utf-8"))
        missing = [p for p in found if p.islower() and not (REPO / p).exists()]
        assert not missing, f"{doc.name} names files that are not there: {sorted(set(missing))}"
