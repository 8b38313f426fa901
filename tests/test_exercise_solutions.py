"""Every build-it cell is solvable: the intended solution passes its checker, and a plausible
wrong attempt fails with a sentence that says what to fix (never a traceback)."""

import pytest

from labkit.exercises import Check, lab01, lab02, lab03, lab04
from labkit.exercises_02 import REACHABLE
from labkit.orchestrator.route import Next
from labkit.runtime import validate_decision


def verdict(check: Check, passed: bool, *phrases: str) -> None:
    assert isinstance(check, Check) and check.passed is passed, repr(check)
    text = repr(check)
    assert "Traceback" not in text and len(check.message) < 400
    for phrase in phrases:
        assert phrase in check.message, check.message


# -- lab 01: the workflow and the loop's decide ------------------------------------------------


def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    if not hits:
        return None
    page = tools["read"].call(id=hits[0]["id"])
    return {"answer": page["command"], "citation": page["id"]}


def my_decide(task, observations):
    if not observations:
        return {"action": "search", "query": task.question}
    last = observations[-1]
    if last["action"] == "search":
        if not last["result"]:
            return {"action": "final", "answer": "No matching page was found.", "citation": ""}
        return {"action": "read", "id": last["result"][0]["id"]}
    page = last["result"]
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def test_lab01_workflow_and_decide_solutions_pass_with_the_seeds_figures():
    verdict(lab01.check_workflow(my_workflow), True, "17 passed with 36 tool calls")
    verdict(lab01.check_decide(my_decide), True, "17 passed, 36 tool calls")


def test_lab01_wrong_attempts_say_what_to_fix():
    def reads_last_hit(task, tools):
        hits = tools["search"].call(query=task.question)
        page = tools["read"].call(id=hits[-1]["id"])
        return {"answer": page["command"], "citation": page["id"]}

    def reads_both(task, tools):
        hits = tools["search"].call(query=task.question)
        for hit in hits:
            page = tools["read"].call(id=hit["id"])
        return {"answer": page["command"], "citation": page["id"]}

    verdict(lab01.check_workflow(reads_last_hit), False, "'deploy-build'", "first hit was 'deploy-v2'")
    verdict(lab01.check_workflow(reads_both), False, "3 tool calls", "budget is 2")
    verdict(lab01.check_workflow(lambda task, tools: tools["lookup"]), False, "raised KeyError")
    verdict(lab01.check_workflow(None), False, "not attempted yet")
    verdict(
        lab01.check_decide(lambda task, obs: {"action": "search", "query": task.question}),
        False,
        "tool_limit",
    )


def test_lab01_failure_stage_accepts_a_reasoned_diagnosis_either_way():
    verdict(
        lab01.check_failure_stage("rollback-restore", "retrieval", "search ranked releases-v2 first"), True
    )
    verdict(
        lab01.check_failure_stage(
            "rollback-restore",
            "control",
            "rollback-v2 was the second hit, but the workflow only reads the first",
        ),
        True,
    )
    verdict(lab01.check_failure_stage("rollback-restore", "control", "just because"), False, "your reason")
    verdict(lab01.check_failure_stage("rollback-restore", "answer", "x"), False, "copied the command")
    verdict(lab01.check_failure_stage("deploy-build", "retrieval", "rank"), False, "passes")


# -- lab 02: the heart of run ----------------------------------------------------------------


def my_run(task, decide, tools, max_turns, max_tools):
    observations, sources, tool_calls = [], set(), 0

    def stop(reason, turns, answer=None, citation=None):
        return {
            "stop": reason,
            "turns": turns,
            "tool_calls": tool_calls,
            "answer": answer,
            "citation": citation,
        }

    for turn in range(1, max_turns + 1):
        try:
            proposal = decide(task, list(observations))
        except OSError:
            return stop("provider_error", turn)
        except Exception:
            return stop("invalid_decision", turn)
        try:
            decision = validate_decision(proposal, tools)
        except ValueError:
            return stop("invalid_decision", turn)
        if decision["action"] == "final":
            if decision["citation"] and decision["citation"] not in sources:
                return stop("unread_citation", turn)
            return stop("final", turn, decision["answer"], decision["citation"])
        if tool_calls == max_tools:
            return stop("tool_limit", turn)
        tool = tools[decision["action"]]
        try:
            result = tool.call(**{name: decision[name] for name in tool.params})
        except Exception as error:
            result = {"error": str(error)}
        tool_calls += 1
        if tool.source and isinstance(result, dict) and isinstance(result.get("id"), str):
            sources.add(result["id"])
        observations.append({"action": decision["action"], "result": result})
    return stop("turn_limit", max_turns)


def test_lab02_run_solution_matches_the_runtime_on_every_case():
    check = lab02.check_run(my_run)
    verdict(check, True, f"all {len(lab02.scenarios())} cases")
    # Every stop reason a policy can reach alone appears among the cases.
    assert set(check.table["stop"]) == set(REACHABLE)


def test_lab02_wrong_runs_are_answered_with_the_rule_they_break():
    def no_validation(task, decide, tools, max_turns, max_tools):
        tool_calls, observations = 0, []
        for turn in range(1, max_turns + 1):
            d = decide(task, observations)
            if d["action"] == "final":
                return {
                    "stop": "final",
                    "turns": turn,
                    "tool_calls": tool_calls,
                    "answer": d["answer"],
                    "citation": d["citation"],
                }
            result = tools[d["action"]].call(**{k: v for k, v in d.items() if k != "action"})
            tool_calls += 1
            observations.append({"action": d["action"], "result": result})
        return {
            "stop": "turn_limit",
            "turns": max_turns,
            "tool_calls": tool_calls,
            "answer": None,
            "citation": None,
        }

    def limit_after_running(task, decide, tools, max_turns, max_tools):
        # Checks the tool limit only after running the tool: one call too many.
        result = my_run(task, decide, tools, max_turns, max_tools + 1)
        if result["tool_calls"] > max_tools:
            return result | {"stop": "tool_limit", "tool_calls": max_tools}
        return result

    def trusts_citations(task, decide, tools, max_turns, max_tools):
        result = my_run(task, decide, tools, max_turns, max_tools)
        return result | {"stop": "final"} if result["stop"] == "unread_citation" else result

    verdict(lab02.check_run(no_validation), False, "raised KeyError", "stop reason")
    verdict(lab02.check_run(limit_after_running), False, "tools ran")
    verdict(lab02.check_run(trusts_citations), False, "unread_citation")
    verdict(lab02.check_run(lambda *a, **k: "done"), False, "return a dict")


# -- lab 04: the router and the ready-job step ---------------------------------------------------


def my_router(verdict):
    if verdict["chars"] <= 26:
        return Next.Continue
    return Next.back_to_with("revise", f"{verdict['chars']} characters, limit is 26")


def my_ready(deps, states):
    return [
        job
        for job, needs in deps.items()
        if states[job] == "pending" and all(states[dep] == "completed" for dep in needs)
    ]


def test_lab04_router_and_ready_step_solutions_pass():
    check = lab04.check_router(my_router)
    verdict(check, True, "converges")
    assert list(check.table["status"]) == ["completed", "dead_letter"]
    verdict(lab04.check_ready(my_ready), True, "fewest rounds")


def test_lab04_wrong_routers_and_steps_say_what_to_fix():
    verdict(
        lab04.check_router(lambda v: Next.Continue if v["chars"] <= 26 else Next.back_to("revise")),
        False,
        "without feedback",
    )
    verdict(
        lab04.check_router(lambda v: Next.Continue if v["chars"] < 26 else Next.back_to_with("revise", "no")),
        False,
        "26 characters is within the limit",
    )
    verdict(lab04.check_router(lambda v: v["words"]), False, "raised KeyError")

    def started_when_not_pending(deps, states):
        return [
            j
            for j, needs in deps.items()
            if states[j] == "pending" and all(states[d] != "pending" for d in needs)
        ]

    def alphabetical(deps, states):
        return sorted(my_ready(deps, states))

    verdict(lab04.check_ready(started_when_not_pending), False, "still running")
    verdict(lab04.check_ready(alphabetical), False, "declaration order")


BUILD_IT = ("check_workflow", "check_decide", "check_run", "check_mediation", "check_router", "check_ready")


@pytest.mark.parametrize("module", [lab01, lab02, lab03, lab04])
def test_every_checker_says_not_attempted_for_an_untouched_cell(module):
    for name in module.__all__:
        checker = getattr(module, name)
        if name in BUILD_IT:
            result = checker(None)
            assert not result.passed and "not attempted" in result.message


# -- exercises and knobs that were broken --------------------------------------------------------


def test_lab02_exercise1_every_policy_reachable_reason_is_reachable():
    from labkit.exercises.lab02 import check_stop_policy

    def searcher(task, observations):
        return {"action": "search", "query": task.question}

    assert check_stop_policy("turn_limit", searcher).startswith("Yes")
    assert check_stop_policy("tool_limit", searcher).startswith("Yes")
    assert check_stop_policy("turn_limit", lambda t, o: {"action": "nope"}).startswith("Not yet")


def test_lab04_max_concurrency_knob_runs_at_most_that_many_at_once():
    from labkit.orchestrator.experiments import parallel_experiment

    table, runs = parallel_experiment(max_concurrency=2)
    assert list(table.index) == ["sequential", "parallel", "max_concurrency=2"]
    assert table.loc["max_concurrency=2", "expected_s"] == 0.28
    running = peak = 0
    for event in runs["max_concurrency=2"].events:
        if event.new == "running":
            running += 1
        elif event.old == "running":
            running -= 1
        peak = max(peak, running)
    assert peak == 2
    with pytest.raises(Exception, match="max_concurrency must be an int"):
        parallel_experiment(max_concurrency=0)
