"""Lab 01, `notebooks/01_baseline_comparison.ipynb`: a keyword route, a fixed workflow and a bounded
decision loop on the same graded docuctl cases. The lab's map, and what its notebook imports:

- the task: `Task` (one question, a version, an expected page), `task_from(case)`, `TaskError`
- the pages: `docuctl()` (lab 01's corpus, validated on load), `load_corpus(folder)`, `Documents`,
  `query_terms` (how search reads a query)
- the controllers: `workflow` (search, read the first hit, answer), `two_rule_workflow`, `scripted`
  (the loop's transparent decide), `docuctl_tools(task)` (search and read), `conflict(task, page)`,
  `controllers_for(docs)` (every compared controller by name, on one search and one budget)
- grading: `outcome(case, result)`, `graded`, `evaluate(cases, controller)`, `compare(cases, controllers)`
- `outcomes_vs_tool_calls(tables)`: the lab's chart

Its checkers are `labkit.exercises.lab01` (`checks`; `diagnosis`: the trace facts exercise 1 is graded on).
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "controllers": "conflict controllers_for docuctl_tools scripted two_rule_workflow workflow",
        "corpus": "docuctl load_corpus",
        "documents": "Documents query_terms",
        "grading": "compare evaluate graded outcome",
        "plots": "outcomes_vs_tool_calls",
        "task": "Task TaskError task_from",
    },
)
