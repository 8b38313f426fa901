"""Lab 04, `notebooks/04_routing_cycles.ipynb`: a task graph with validation, concurrency,
retries, routers and loops that end.

    graph = Graph()
    graph.job("draft", write_draft)
    graph.job("revise", revise, deps=["draft"])
    graph.job("review", measure, deps=["revise"])
    graph.route("review", within_limit, targets=["revise"])
    graph.job("publish", publish, deps=["review"])
    result = graph.run(max_visits=3)      # status, reason, states, visits, attempts, events

The scheduler is `labkit.routing.scheduler`; the notebook's checkers are `labkit.routing.checks`.
"""

from labkit.routing.clock import Clock, FakeClock, RealClock
from labkit.routing.errors import GraphError, InvalidInput
from labkit.routing.graph import Graph
from labkit.routing.plan import Context, Job, Plan
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next, Route, Router
from labkit.routing.states import FINAL_STATES, TRANSITIONS, Event, State, legal
from labkit.routing.timeline import Span, plot_timeline, spans

__all__ = [
    "FINAL_STATES",
    "TRANSITIONS",
    "Clock",
    "Context",
    "Event",
    "FakeClock",
    "Graph",
    "GraphError",
    "InvalidInput",
    "Job",
    "Next",
    "Plan",
    "RealClock",
    "RetryPolicy",
    "Route",
    "Router",
    "RunResult",
    "Span",
    "State",
    "legal",
    "plot_timeline",
    "spans",
]
