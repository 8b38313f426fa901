"""A loopback server speaking OpenAI's chat-completions wire format (`GET /v1/models`, non-streaming
`POST /v1/chat/completions`, errors as `{"error": {...}}`), in the shapes its API reference shows.

`owned_by` is what /v1/models reports ("me": llama-cpp-python's server); its own faults: "500", "401"."""

from __future__ import annotations

from typing import Any

from fake_server import FakeServer

FINGERPRINT = "fp_b376dfbbd5"


class FakeOpenAI(FakeServer):
    """Start with `with FakeOpenAI(model) as server:`; `server.base_url` is http://127.0.0.1:PORT/v1."""

    chat_path = "/v1/chat/completions"
    faults = {
        "500": (500, "llama_decode returned -3: the KV cache is full", "server_error"),
        "401": (401, "Incorrect API key provided", "invalid_api_key"),
    }

    def __init__(self, model: str, *args: Any, owned_by: str = "organization", **kwargs: Any):
        super().__init__(model, *args, **kwargs)
        self.owned_by = owned_by

    @property
    def base_url(self) -> str:
        return f"{self.host}/v1"

    missing = "The model `{}` does not exist"

    def routes(self) -> dict[str, Any]:
        models = [{"id": self.model, "object": "model", "owned_by": self.owned_by}]
        return {"/v1/models": {"object": "list", "data": models}}

    def error(self, message: str, kind: str = "invalid_request_error") -> Any:
        return {"error": {"message": message, "type": kind, "code": None}}

    def completion(self, content: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion",
            "created": 1_733_480_467,
            "model": self.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 210, "completion_tokens": 18, "total_tokens": 228},
        }
