"""A loopback server speaking OpenAI's chat-completions wire format (`GET /v1/models`, non-streaming
`POST /v1/chat/completions`, errors as `{"error": {...}}`), in the shapes its API reference shows.

`owned_by` is what /v1/models reports ("me": llama-cpp-python's server). `fault` fails every chat one
way: "500", "401", "slow" (after `delay` s), "not_json", "wrong_shape".
"""

from __future__ import annotations

import time
from typing import Any

from fake_server import FakeServer

FINGERPRINT = "fp_b376dfbbd5"


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


class FakeOpenAI(FakeServer):
    """Start with `with FakeOpenAI(model) as server:`; `server.base_url` is http://127.0.0.1:PORT/v1."""

    def __init__(self, model: str, *args: Any, owned_by: str = "organization", **kwargs: Any):
        super().__init__(model, *args, **kwargs)
        self.owned_by = owned_by

    @property
    def base_url(self) -> str:
        return f"{self.host}/v1"

    def get(self, path: str) -> tuple[int, Any]:
        if path != "/v1/models":
            return 404, _error("not found")
        return 200, {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "owned_by": self.owned_by}],
        }

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return 404, _error("not found")
        self.requests.append(body)
        if self.fault == "slow":
            time.sleep(self.delay)
        if self.fault == "500":
            return 500, _error("llama_decode returned -3: the KV cache is full", "server_error")
        if self.fault == "401":
            return 401, _error("Incorrect API key provided", "invalid_api_key")
        if body.get("model") != self.model:
            return 404, _error(f"The model `{body.get('model')}` does not exist")
        if self.fault == "not_json":
            return 200, b"<html><body>502 Bad Gateway</body></html>"
        if self.fault == "wrong_shape":
            return 200, {"status": "success"}
        content = self.next_reply(body["messages"])
        if content is None:
            return 500, _error("fake openai: no reply queued", "server_error")
        message = {"role": "assistant", "content": content}
        completion = {
            "id": "chatcmpl-123",
            "object": "chat.completion",
            "created": 1_733_480_467,
            "model": self.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 210, "completion_tokens": 18, "total_tokens": 228},
        }
        return 200, completion | self.fields
