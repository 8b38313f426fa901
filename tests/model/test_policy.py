"""The model policy through the runtime, with `Scripted`: a backend that answers from a list, as a
model would, so the seam's own prompting, parsing and usage accounting run for real."""

import time

from fake_ollama import FINAL, READ, SEARCH, TASK, docuctl_policy, episode

from labkit.baseline import Task, docuctl_tools
from labkit.core import ProviderError, run
from labkit.model import Reply


class Scripted:
    """A backend that answers each request with the next queued text (or raises it)."""

    name = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def provenance(self):
        return {"backend": self.name, "versions": {"python": "3"}}

    def complete(self, request):
        self.requests.append(request)
        item = self.replies.pop(0)
        if isinstance(item, BaseException):
            raise item
        return Reply(text=item, prompt_tokens=100 * request.turn, completion_tokens=15, latency_s=0.25)


def test_a_model_episode_through_the_runtime_is_charged_what_the_backend_reports():
    result = episode(Scripted(SEARCH, READ, FINAL))
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert result["answer"] == "docuctl ship --env staging"
    assert [entry["tokens"] for entry in result["trace"]] == [115, 215, 315]
    assert result["usage"]["prompt_tokens"] == 600


def test_the_model_sees_its_own_replies_and_each_result_and_each_prompt_extends_the_last():
    backend = Scripted(SEARCH, READ, FINAL, SEARCH)
    shared = docuctl_policy(backend)
    run(TASK, shared, tools=docuctl_tools(TASK))
    third = [(m["role"], m["content"]) for m in backend.requests[2].messages]
    assert third[0] == ("system", "One JSON action.")
    assert third[1] == ("user", "Question: How do I deploy the current build?\nDocumentation version: v2")
    assert third[2] == ("assistant", SEARCH) and third[4] == ("assistant", READ)
    assert third[3][1].startswith('Result of search: [{"id": "deploy-v2"')
    assert third[5][1].startswith('Result of read: {"id": "deploy-v2"')
    assert backend.requests[1].messages == backend.requests[2].messages[:4]
    assert [r.turn for r in backend.requests] == [1, 2, 3]
    shared(TASK, [])  # a new episode forgets the last one
    assert len(backend.requests[-1].messages) == 2


def test_the_request_carries_the_options_and_the_replay_key():
    backend = Scripted(SEARCH)
    policy = docuctl_policy(backend, temperature=0.7, seed=3, trial=2, max_tokens=64)
    policy(TASK, [])
    request = backend.requests[0]
    assert (request.lab, request.case, request.trial, request.turn) == ("docuctl", "deploy-build", 2, 1)
    assert request.options() == {"temperature": 0.7, "seed": 3, "max_tokens": 64}
    assert policy.last_usage == {"prompt_tokens": 100, "completion_tokens": 15}


def test_a_reply_that_is_not_json_is_a_counted_invalid_decision_with_its_tokens():
    result = episode(Scripted('{"action": "search", "query": "dep'))
    assert result["stop"] == "invalid_decision" and result["detail"].startswith("model reply is not JSON")
    assert result["usage"]["completion_tokens"] == 15


def test_a_reply_outside_the_tools_is_an_invalid_decision_and_runs_nothing():
    result = episode(Scripted('{"action": "shell", "cmd": "rm -rf /"}'))
    assert (result["stop"], result["tool_calls"]) == ("invalid_decision", 0)
    assert "unknown action 'shell'" in result["detail"]


def test_a_provider_failure_is_a_counted_provider_error():
    result = episode(Scripted(SEARCH, ProviderError("cannot reach Ollama at http://127.0.0.1:9")))
    assert (result["stop"], result["turns"]) == ("provider_error", 2)
    assert "cannot reach Ollama" in result["detail"]


def test_describe_and_observe_are_the_labs_choice():
    backend = Scripted(SEARCH, FINAL)
    policy = docuctl_policy(backend, observe=lambda o: f"{o['action']} done")
    policy.describe = lambda task: f"Q: {task.question}"
    run(TASK, policy, tools=docuctl_tools(TASK))
    assert backend.requests[1].messages[1]["content"] == "Q: How do I deploy the current build?"
    assert backend.requests[1].messages[3]["content"] == "search done"


def test_a_late_reply_from_an_abandoned_episode_does_not_leak_into_the_next():
    class ByTurn(Scripted):
        def complete(self, request):
            self.requests.append(request)
            if request.case == "slow":
                time.sleep(0.2)  # arrives while the next episode is at its second turn
                return Reply(text='{"action": "search", "query": "late"}')
            if request.turn == 2:
                time.sleep(0.4)
            return Reply(text=[SEARCH, READ, FINAL][request.turn - 1])

    backend = ByTurn()
    shared = docuctl_policy(backend)
    slow = Task("slow", "deploy", "How do I deploy the current build?", "v2")
    assert run(slow, shared, tools=docuctl_tools(slow), step_timeout=0.05)["stop"] == "step_timeout"
    assert run(TASK, shared, tools=docuctl_tools(TASK))["stop"] == "final"
    third = backend.requests[-1].messages
    assert (third[2]["content"], third[4]["content"]) == (SEARCH, READ)
