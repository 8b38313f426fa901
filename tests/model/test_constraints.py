"""The constraint ladder: the schema admissible in each episode state (asserted exactly on hand-built
states), how a reply becomes a decision, and the runtime still validating every decision."""

from functools import partial

import jsonschema
import pytest
from fake_ollama import TASK
from test_policy import Scripted

from labkit.baseline import docuctl, docuctl_tools, task_from
from labkit.core import LabError, run
from labkit.core.runtime import Tool
from labkit.decision_loop.model_policy import DOCUCTL_RULES as RULES
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.model import ModelPolicy, ReplayBackend
from labkit.model.constraints import StateRules, admissible_schema, decision_schema
from labkit.model.policy import decision_in

TOOLS = docuctl_tools(TASK)
SEARCHED = [{"action": "search", "result": [{"id": "deploy-v2"}, {"id": "build-v2"}, {"title": "no id"}]}]
READ = [*SEARCHED, {"action": "read", "result": {"id": "deploy-v2", "command": "docuctl ship --env staging"}}]


def shape(action, **properties):
    return {
        "type": "object",
        "properties": {"action": {"const": action}, **properties},
        "required": ["action", *properties],
        "additionalProperties": False,
    }


TEXT = {"type": "string", "maxLength": 100}
SEARCH_SHAPE = shape("search", query=TEXT)
IDS = {"enum": ["deploy-v2", "build-v2"]}


@pytest.mark.parametrize(
    ("decision", "ok"),
    [
        ({"action": "search", "query": "deploy"}, True),
        ({"action": "final", "answer": "x", "citation": ""}, True),
        ({"action": "read"}, False),
        ({"action": "read", "id": "a", "extra": 1}, False),
        ({"action": "delete", "id": "a"}, False),
        ({"action": "search", "query": "x" * 101}, False),
    ],
)
def test_the_static_schema_admits_exactly_the_decision_shapes(decision, ok):
    assert jsonschema.Draft202012Validator(decision_schema(TOOLS)).is_valid(decision) is ok


def test_the_static_schema_types_params_by_kind_puts_action_first_and_refuses_a_tool_named_final():
    tools = {"refund": Tool("refund", {"order": "str", "amount": "number"}, lambda order, amount: None)}
    refund, final = decision_schema(tools, max_chars=None)["anyOf"]
    assert refund == shape("refund", order={"type": "string"}, amount={"type": "number"})
    assert list(final["properties"]) == ["action", "answer", "citation"]
    with pytest.raises(LabError, match="may not be called 'final'"):
        ModelPolicy("x", {"final": Tool("final", {}, lambda: None)}, "", str, backend=Scripted())


def test_l0_has_no_schema_and_l1_is_the_static_schema_in_every_state():
    for observations in ([], SEARCHED, READ):
        assert admissible_schema(TOOLS, "L0", RULES, TASK, observations) is None
        assert admissible_schema(TOOLS, "L1", RULES, TASK, observations) == decision_schema(TOOLS)


def test_l2_admits_only_ids_a_search_returned_and_nothing_to_read_before_a_search():
    assert admissible_schema(TOOLS, "L2", RULES, TASK, []) == {"anyOf": [SEARCH_SHAPE]}
    expected = [SEARCH_SHAPE, shape("read", id=IDS), shape("final", answer=TEXT, citation=IDS)]
    assert admissible_schema(TOOLS, "L2", RULES, TASK, SEARCHED + SEARCHED) == {"anyOf": expected}


def test_l3_final_is_only_the_exact_command_of_a_page_read():
    shapes = admissible_schema(TOOLS, "L3", RULES, TASK, SEARCHED)["anyOf"]
    assert [shape["properties"]["action"]["const"] for shape in shapes] == ["search", "read"]
    final = shape("final", answer={"const": "docuctl ship --env staging"}, citation={"const": "deploy-v2"})
    assert admissible_schema(TOOLS, "L3", RULES, TASK, READ)["anyOf"][-1] == final


@pytest.mark.parametrize(
    ("refused", "message"),
    [
        pytest.param(partial(admissible_schema, TOOLS, "L4", RULES), "unknown constraint rung 'L4'", id="L4"),
        pytest.param(
            partial(admissible_schema, TOOLS, "L2", None), "needs the lab's state rules", id="L2 no rules"
        ),
        pytest.param(
            partial(admissible_schema, TOOLS, "L3", StateRules(slots={})),
            "extractive final",
            id="L3 no final",
        ),
        pytest.param(
            partial(docuctl_policy, "base", backend=ReplayBackend(), rung="L9"),
            "ModelPolicy: unknown constraint rung",
            id="a policy at L9",
        ),
    ],
)
def test_rungs_a_lab_cannot_serve_are_refused_by_name(refused, message):
    with pytest.raises(LabError, match=message):
        refused()


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        ('Sure! {"action": "search"} done', {"action": "search"}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('{broken {"b": 2}', {"b": 2}),
        pytest.param('{"a":' * 2000 + '{"c": 3}', {"c": 3}, id="nesting past the recursion limit"),
    ],
)
def test_a_decision_at_l0_is_the_first_json_object_in_the_reply(reply, decision):
    assert decision_in(reply, "L0") == decision


@pytest.mark.parametrize(
    ("reply", "rung", "message"),
    [
        ("I would search the docs.", "L0", "no JSON object"),
        ('Sure! {"a": 1}', "L1", "model reply is not JSON"),  # above L0 the reply is the whole decision
        pytest.param("[" * 100_000, "L1", "model reply is not JSON", id="100000 brackets-L1"),
    ],
)
def test_a_reply_with_no_decision_is_refused(reply, rung, message):
    with pytest.raises(ValueError, match=message):
        decision_in(reply, rung)


def test_the_policy_sends_each_turn_its_states_schema_and_the_runtime_still_checks():
    corpus = docuctl()
    task = task_from(next(c for c in corpus.cases if c["id"] == "deploy-build"))
    backend = Scripted(
        '{"action": "search", "query": "deploy build"}',
        '{"action": "read", "id": "deploy-v2"}',
        '{"action": "final", "answer": "made up", "citation": "deploy-v2"}',
    )
    result = run(
        task, docuctl_policy("base", backend=backend, rung="L3"), tools=docuctl_tools(task, corpus.docs)
    )
    assert [r.rung for r in backend.requests] == ["L3"] * 3
    assert [len(r.schema["anyOf"]) for r in backend.requests] == [1, 2, 3]
    # A backend that ignores the constraint still meets the runtime, which grades nothing.
    assert result["stop"] == "final" and result["answer"] == "made up"
