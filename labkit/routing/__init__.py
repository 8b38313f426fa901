"""Lab 04, `notebooks/04_routing_cycles.ipynb`: a task graph with validation, concurrency, retries,
routers and loops that end. Declare jobs with `Graph().job(id, fn, deps=[...])`, loops with
`graph.route(job, router, targets=[...])`; `graph.run(max_visits=3)` returns a RunResult.
"""

from labkit.routing.clock import FakeClock
from labkit.routing.errors import GraphError, InvalidInput
from labkit.routing.graph import Graph
from labkit.routing.plan import Context
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next
from labkit.routing.states import FINAL_STATES, TRANSITIONS, Event, State
from labkit.routing.timeline import plot_timeline, spans

__all__ = ["FINAL_STATES", "TRANSITIONS", "Context", "Event", "FakeClock", "Graph", "GraphError"]
__all__ += ["InvalidInput", "Next", "RetryPolicy", "RunResult", "State", "plot_timeline", "spans"]
