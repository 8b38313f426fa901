"""Lab 04, `notebooks/04_routing_cycles.ipynb`: a task graph with validation, concurrency,
retries, routers and bounded loops.

    from labkit.routing import Graph, Next, RetryPolicy, FakeClock

    graph = Graph()
    graph.job("draft", write_draft)
    graph.job("revise", revise, deps=["draft"])
    graph.job("review", measure, deps=["revise"])
    graph.route("review", lambda n: Next.Continue if n <= 26 else
                Next.back_to_with("revise", f"{n} characters, limit is 26"), targets=["revise"])
    graph.job("publish", publish, deps=["review"])
    result = graph.run(max_visits=3)      # status, reason, states, visits, attempts, events

Modules, one job each: graph (declare and validate), plan (the validated graph, Job and the
Context a job receives), route (Next and routers), retry (RetryPolicy), clock (real and fake
time), states (the state machine and its events), run_state (the run's bookkeeping: states,
dependency counts, the event log, what a router's answer does), scheduler (the run on asyncio),
result (RunResult), timeline (spans and the Gantt chart), experiments (the notebook's
experiments, shared with `python -m labkit routing`), model_reviser (the feedback experiment
with a model reviser through the model seam, replayed; imported on its own so that the rest
needs no model seam), tables (DataFrames that read left to right in JupyterLab). The notebook's
checkers are in `labkit.routing.checks`, the cases they hold in `labkit.routing.checker_cases`.
"""

from labkit.routing.clock import Clock, FakeClock, RealClock
from labkit.routing.errors import GraphError, InvalidInput
from labkit.routing.graph import Graph
from labkit.routing.plan import Context, Job, Plan
from labkit.routing.result import STATUSES, RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next, Route, Router
from labkit.routing.states import FINAL, TRANSITIONS, Event, State, legal
from labkit.routing.timeline import Span, plot_timeline, spans

__all__ = [
    "FINAL", "STATUSES", "TRANSITIONS", "Clock", "Context", "Event", "FakeClock", "Graph",
    "GraphError", "InvalidInput", "Job", "Next", "Plan", "RealClock", "RetryPolicy", "Route",
    "Router", "RunResult", "Span", "State", "legal", "plot_timeline", "spans",
]
