"""Task validation happens at the boundary, before any controller runs."""

import pytest

from labkit.baseline import Task, TaskError, task_from


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"version": "v3"}, "Task.version 'v3' is not supported"),
        ({"environment": "production"}, "only covers staging"),
        ({"question": "   "}, "Task.question must contain 1..500"),
        ({"question": "x" * 501}, "Task.question must contain 1..500"),
        ({"id": "x" * 101}, "Task.id must be a non-blank string"),
        ({"family": " "}, "Task.family must be a non-blank string"),
        ({"id": 7}, "Task.id must be a non-blank string"),
    ],
)
def test_out_of_contract_requests_are_refused_with_the_field_named(fields, message):
    with pytest.raises(TaskError, match=message):
        Task(**({"id": "t", "family": "deploy", "question": "How do I deploy?"} | fields))


def test_a_task_defaults_to_v2_staging_and_a_case_gives_only_the_contract_fields():
    task = Task("t", "deploy", "How do I deploy?")
    assert (task.version, task.environment) == ("v2", "staging")
    case = {"id": "c", "family": "f", "question": "q", "version": "v1"}
    assert task_from(case | {"expected_doc": "d", "expected_command": "x"}) == Task("c", "f", "q", "v1")
