"""The classroom kit: a learner's work as data (`submission`), a lab-03 guard as data
(`guard_table`), and the class round that merges a folder of submissions (`merge`).

Nothing here executes what a submission holds: submissions are JSON, read with bounded
sizes and a schema, and a guard arrives as a table of verdicts, never as code.
"""
