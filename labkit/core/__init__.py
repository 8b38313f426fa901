"""The shared core: what two or more labs use, and nothing that belongs to one lab.

`runtime` (the bounded decision loop, with `decisions`, `timeouts`, `result`, `display`);
`check`, `answers` and `verdicts` (a checker's verdict on a learner's code, and its record);
`predictions`, `intervals`, `fixtures`, `errors`, `paths`, `colours`, `text`.
"""
