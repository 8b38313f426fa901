"""The embedded model: constrained decisions against raw generation, and prompt reuse per turn.

    python benchmarks/model.py [--prompts N] [--repeats R] [--episodes E]      (needs `make model`)

1. For N recorded requests (real prompts the policy built; greedy, as the temperature-0 trials):
   (a) the decision as the `local` backend makes it — `create_chat_completion` with the cached
   `LlamaGrammar` of its schema — against (b) raw generation of as many tokens with
   `Llama.generate` (no grammar, end-of-turn ignored). Both start with the prompt already in the
   cache, so both time generation only. Done for the static schema (L1: one grammar, cached) and
   for the state schemas of the recorded L3 run (one grammar per state, built inside the timing).
   Reported: the sums, best of R repeats each, and the ratio (a)/(b).
2. Prompt reuse: live episodes of the docuctl policy, prompt tokens per turn served from the cache.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from labkit.baseline import docuctl, docuctl_tools, task_from
from labkit.core import run
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import limits_for, run_case
from labkit.model import ChatRequest, ReplayBackend, read_records, trial_files
from labkit.model.local import LocalBackend, engine
from labkit.model.replay import TRIALS


def l1_requests(n: int) -> list[tuple[list, dict | None, int]]:
    """(messages, schema, max_tokens) of `n` recorded temperature-0 L1 calls, spread over the files."""
    schema = docuctl_policy("base", backend=ReplayBackend()).schema
    calls = [
        record
        for path in trial_files("docuctl")
        for _, record in read_records(path)
        if record["kind"] == "call"
        and record.get("rung", "L1") == "L1"
        and record["options"]["temperature"] == 0
    ]
    step = max(1, len(calls) // n)
    return [(c["messages"], schema, c["options"]["max_tokens"]) for c in calls[::step][:n]]


def l3_requests(n: int) -> list[tuple[list, dict | None, int]]:
    """The first `n` requests of the recorded L3 temperature-0 run, replayed to carry their schemas."""
    seen: list = []

    class Tap(ReplayBackend):
        def complete(self, request):
            seen.append((list(request.messages), dict(request.schema), request.max_tokens))
            return super().complete(request)

    corpus = docuctl()
    for case in corpus.cases + corpus.adaptive_cases:
        if len(seen) >= n:
            break
        policy = docuctl_policy(
            "example", backend=Tap([TRIALS / "docuctl-smollm2-example-l3-t0.jsonl"]), rung="L3"
        )
        run_case(case, policy, limits=limits_for(case, corpus), corpus=corpus)
    return seen[:n]


def ask(messages: list, schema: dict | None, max_tokens: int, turn: int) -> ChatRequest:
    """A request as the policy sends it; turn 1 clears the prompt cache first, a later turn keeps it."""
    return ChatRequest("bench", "c", 0, turn, tuple(messages), schema, max_tokens=max_tokens)


def cached(found, messages: list) -> list[int]:
    """Leave `messages`' prompt in the cache (evaluated, nothing after it); return its tokens."""
    reply = found.complete(ask(messages, None, 1, turn=1))
    return found.llama.input_ids[: reply.prompt_tokens].tolist()


def ratio(found, name: str, requests: list, repeats: int, build_grammars: bool) -> float:
    totals, tokens = defaultdict(float), 0
    for messages, schema, max_tokens in requests:
        best = defaultdict(lambda: float("inf"))
        for _ in range(repeats):
            if build_grammars:
                found.grammar.cache_clear()
            prompt = cached(found, messages)
            start = time.perf_counter()
            constrained = found.complete(ask(messages, schema, max_tokens, turn=2))
            best["constrained"] = min(best["constrained"], time.perf_counter() - start)
            n = constrained.completion_tokens + (constrained.finish_reason == "stop")  # the end token too
            cached(found, messages)
            start = time.perf_counter()
            for count, _ in enumerate(found.llama.generate(prompt, temp=0.0, repeat_penalty=1.0), 1):
                if count == n:
                    break
            best["raw"] = min(best["raw"], time.perf_counter() - start)
        for key, seconds in best.items():
            totals[key] += seconds
        tokens += n
    value = totals["constrained"] / totals["raw"]
    print(
        f"{name}: {len(requests)} requests, {tokens} tokens, best of {repeats}: "
        f"raw {totals['raw']:.3f} s, constrained {totals['constrained']:.3f} s; ratio {value:.2f}x"
    )
    return value


def reuse(episodes: int) -> None:
    corpus = docuctl()
    backend = LocalBackend()
    per_turn = defaultdict(lambda: [0, 0])  # prompt tokens, reused tokens
    original = backend.complete

    def tap(request):
        reply = original(request)
        per_turn[request.turn][0] += reply.prompt_tokens
        per_turn[request.turn][1] += reply.reused_tokens or 0
        return reply

    backend.complete = tap
    for case in corpus.cases[:episodes]:
        task = task_from(case)
        policy = docuctl_policy("base", backend=backend)
        run(task, policy, tools=docuctl_tools(task, corpus.docs), max_turns=3, max_tools=2)
    later = [per_turn[turn] for turn in per_turn if turn > 1]
    prompt, reused = sum(r[0] for r in later), sum(r[1] for r in later)
    share = 100 * reused / prompt
    print(f"prompt reuse over {episodes} live episodes: {share:.0f}% of turn 2+ prompt tokens were cached")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    found = engine()
    print(f"model {found.path.name}, {found.llama.n_threads} thread(s); greedy decoding")
    static = ratio(found, "L1 static schema (grammar cached)", l1_requests(args.prompts), args.repeats, False)
    state = ratio(
        found, "L3 state schemas (grammar built per state)", l3_requests(args.prompts), args.repeats, True
    )
    print(f"ratio: constrained decision / raw generation = {static:.2f}x (L1), {state:.2f}x (L3)")
    reuse(args.episodes)


if __name__ == "__main__":
    main()
