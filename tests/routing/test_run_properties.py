"""Random DAGs, faults and router decisions: every run's events replay legally against the state
machine, no job starts before its dependencies completed in this visit, at most max_concurrency are in
flight, the caps hold, and the run ends in final states with the status they imply."""

from __future__ import annotations

import asyncio
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.routing import Context, FakeClock, Graph, InvalidInput, Next, RetryPolicy
from labkit.routing.states import FINAL_STATES, TRANSITIONS, State

FAULTS = st.sampled_from(["ok", "ok", "transient", "invalid"])
DECISIONS = st.sampled_from(["continue", "continue", "goto", "goto+", "goto", "stop", "undeclared", "none"])


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 7))
    deps = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else [] for i in range(n)]
    jobs = [
        {
            "deps": deps[i],
            "yields": draw(st.integers(-1, 3)),  # -1: a plain function, else async
            "faults": draw(st.lists(FAULTS, min_size=1, max_size=4)),
            "attempts": draw(st.one_of(st.none(), st.integers(1, 3))),
        }
        for i in range(n)
    ]
    routes = {}
    for i in range(n):
        up = {i}
        for j in range(i, -1, -1):  # the jobs i depends on, directly or not: all declared before i
            if j in up:
                up.update(deps[j])
        if draw(st.integers(0, 2)):
            targets = draw(st.lists(st.sampled_from(sorted(up)), min_size=1, max_size=len(up), unique=True))
            routes[i] = {
                "targets": targets,
                "script": draw(st.lists(st.tuples(DECISIONS, st.integers(0, 9)), min_size=1, max_size=5)),
            }
    return {
        "jobs": jobs,
        "order": draw(st.permutations(range(n))),
        "routes": routes,
        "max_concurrency": draw(st.integers(1, 4)),
        "max_visits": draw(st.integers(1, 4)),
    }


def build(scenario):
    calls: Counter[str] = Counter()
    jobs, graph = scenario["jobs"], Graph()

    def make_job(name: str, spec: dict):
        def outcome(ctx: Context) -> tuple[str, int]:
            fault = spec["faults"][calls[name] % len(spec["faults"])]
            calls[name] += 1
            if fault != "ok":
                raise ConnectionError("transient") if fault == "transient" else InvalidInput("invalid")
            return name, ctx.visit

        async def job(ctx: Context) -> tuple[str, int]:
            for _ in range(spec["yields"]):
                await asyncio.sleep(0)
            return outcome(ctx)

        return outcome if spec["yields"] < 0 else job

    def make_router(route: dict):
        seen = [0]
        names = [f"j{t}" for t in route["targets"]]
        outside = [f"j{k}" for k in range(len(jobs)) if f"j{k}" not in names]

        def router(result: object) -> object:
            kind, pick = route["script"][seen[0] % len(route["script"])]
            seen[0] += 1
            if kind == "undeclared":
                return Next.back_to(outside[pick % len(outside)]) if outside else Next.Continue
            target = names[pick % len(names)]
            if kind in ("goto", "goto+"):
                return Next.back_to_with(target, "again") if kind == "goto+" else Next.back_to(target)
            return {"continue": Next.Continue, "stop": Next.Stop, "none": None}[kind]

        return router

    for i in scenario["order"]:
        spec = jobs[i]
        retry = spec["attempts"] and RetryPolicy(max_attempts=spec["attempts"], initial_interval=0.1)
        graph.job(f"j{i}", make_job(f"j{i}", spec), deps=[f"j{d}" for d in spec["deps"]], retry=retry)
    for i, route in scenario["routes"].items():
        graph.route(f"j{i}", make_router(route), targets=[f"j{t}" for t in route["targets"]])
    return graph, calls


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_run_is_legal(scenario):
    graph, calls = build(scenario)
    cap, limit = scenario["max_visits"], scenario["max_concurrency"]
    result = graph.run(max_concurrency=limit, max_visits=cap, clock=FakeClock())

    deps = {f"j{i}": [f"j{d}" for d in spec["deps"]] for i, spec in enumerate(scenario["jobs"])}
    max_attempts = {f"j{i}": spec["attempts"] or 1 for i, spec in enumerate(scenario["jobs"])}
    state = dict.fromkeys(deps, State.PENDING)
    visits, attempts, tries_this_visit = Counter(), Counter(), Counter()
    last_time = 0.0
    for event in result.events:
        assert event.old == state[event.job], f"{event} does not start from {state[event.job]}"
        assert event.new in TRANSITIONS[event.old], f"illegal transition {event}"
        assert event.time >= last_time
        last_time = event.time
        if event.new == State.RUNNING:
            assert all(state[d] == State.COMPLETED for d in deps[event.job]), f"{event.job} ran too early"
            attempts[event.job] += 1
            if event.old == State.PENDING:
                visits[event.job] += 1
                tries_this_visit[event.job] = 0
            tries_this_visit[event.job] += 1
            assert tries_this_visit[event.job] <= max_attempts[event.job]
            assert (event.visit, event.attempt) == (visits[event.job], tries_this_visit[event.job])
        state[event.job] = event.new
        in_flight = sum(s in (State.RUNNING, State.RETRYING) for s in state.values())
        assert in_flight <= limit

    assert state == dict(result.states)
    assert all(s in FINAL_STATES for s in state.values())
    assert dict(visits) == {job: v for job, v in result.visits.items() if v}
    assert dict(attempts) == {job: a for job, a in result.attempts.items() if a}
    assert all(v <= cap for v in result.visits.values())
    assert all(result.attempts[job] <= result.visits[job] * max_attempts[job] for job in deps)
    # One call per attempt, except attempts withdrawn (by a Goto or a Stop) before their call.
    withdrawn = Counter(
        e.job for e in result.events if e.old == State.RUNNING and e.new in (State.PENDING, State.CANCELLED)
    )
    for job in deps:
        assert result.attempts[job] - withdrawn[job] <= calls[job] <= result.attempts[job]

    assert result.status in ("completed", "failed", "dead_letter")
    finals = set(state.values())
    if State.DEAD_LETTER in finals:
        assert result.status == "dead_letter"
    elif State.FAILED in finals:
        assert result.status == "failed"
    else:
        assert result.status == "completed"
        assert result.stopped_by is not None or finals == {State.COMPLETED}
    assert set(result.errors) == {job for job, s in state.items() if s == State.FAILED}
    kept = (State.COMPLETED, State.DEAD_LETTER)
    assert set(result.results) == {job for job, s in state.items() if s in kept}
