"""The embedded model: constrained decisions against raw generation, and prompt reuse per turn.

    python benchmarks/model.py [--prompts N] [--repeats R]      (needs `make model`)

1. Decision latency. For the first N recorded requests of `fixtures/trials/` (real
   prompts the policy built), one Llama instance generates: (a) the decision as the
   `local` backend does — grammar-constrained, the sampled token checked and the
   vocabulary masked only on refusal; (b) raw, unconstrained generation of exactly as many
   tokens (end-of-turn ignored); (c) llama-cpp-python's own `grammar=` path, which masks
   every step. Every variant starts from the same cache state (the prompt cached but its
   last token), so all three evaluate one prompt token and then generate. Reported: the
   sums over the prompts, best of R repeats each, and (a)/(b), (c)/(b). Greedy decoding,
   as in the temperature-0 trials, so (a) and (c) must produce the same text: checked.
2. Prompt reuse. Live episodes of the docuctl policy on the base prompt: prompt tokens
   per turn, and how many of them came from the cache instead of being evaluated again.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

from labkit import docuctl, docuctl_tools, run, task_from
from labkit.errors import LabError
from labkit.model import read_records, trial_files
from labkit.model.docuctl import docuctl_policy
from labkit.model.local import LocalBackend, engine


def recorded_requests(n: int) -> list[dict]:
    calls = [
        record
        for path in trial_files("docuctl")
        for _, record in read_records(path)
        if record["kind"] == "call" and record["options"]["temperature"] == 0 and "reply" in record
    ]
    if not calls:
        raise LabError("no temperature-0 recordings in fixtures/trials/")
    step = max(1, len(calls) // n)
    return calls[::step][:n]


def prime(found, tokens: list[int]) -> None:
    """Leave the prompt in the cache, so the next generation evaluates only its last token."""
    found.generate(tokens, max_tokens=2, fresh=True, stop_at_end=False)


def latency(found, calls: list[dict], repeats: int) -> None:
    from llama_cpp import LlamaGrammar

    schema = json.loads(json.dumps(docuctl_policy("base", backend=LocalBackend()).schema))
    slow_grammar = LlamaGrammar.from_json_schema(json.dumps(schema, sort_keys=True), verbose=False)
    totals = defaultdict(float)
    tokens_total, refused_total = 0, 0
    for call in calls:
        tokens = found.prompt_tokens(call["messages"])
        best = defaultdict(lambda: float("inf"))
        for _ in range(repeats):
            prime(found, tokens)
            constrained = found.generate(tokens, max_tokens=call["options"]["max_tokens"], schema=schema)
            best["constrained"] = min(best["constrained"], constrained.seconds)
            n = len(constrained.tokens) + (
                constrained.finish_reason == "stop"
            )  # the end token is sampled too
            prime(found, tokens)
            raw = found.generate(tokens, max_tokens=n, stop_at_end=False)
            best["raw"] = min(best["raw"], raw.seconds)
            prime(found, tokens)
            start = time.perf_counter()
            reply = found.llama.create_completion(
                tokens, max_tokens=n, temperature=0.0, grammar=slow_grammar, repeat_penalty=1.0
            )
            best["masked every step"] = min(best["masked every step"], time.perf_counter() - start)
            assert reply["choices"][0]["text"] == constrained.text, (
                reply["choices"][0]["text"],
                constrained.text,
            )
        for name, seconds in best.items():
            totals[name] += seconds
        tokens_total += n
        refused_total += constrained.refused
    print(f"{len(calls)} recorded prompts, {tokens_total} generated tokens in all, greedy; best of {repeats}")
    for name in ("raw", "constrained", "masked every step"):
        per_token = totals[name] / tokens_total * 1e3
        print(f"  {name:<18} {totals[name]:7.3f} s   {per_token:5.2f} ms/token")
    print(
        f"  the model's own pick was refused by the grammar at {refused_total} of {tokens_total} tokens "
        f"({100 * refused_total / tokens_total:.0f}%); only those were masked over the whole vocabulary"
    )
    print(
        f"ratio: constrained decision / raw generation = {totals['constrained'] / totals['raw']:.2f}x "
        f"(goal <= 1.3x); masking every step = {totals['masked every step'] / totals['raw']:.2f}x"
    )


def reuse(episodes: int) -> None:
    corpus = docuctl()
    backend = LocalBackend()
    per_turn = defaultdict(lambda: [0, 0, 0])  # calls, prompt tokens, reused tokens
    for case in corpus.cases[:episodes]:
        task = task_from(case)
        replies = []
        policy = docuctl_policy("base", backend=backend)
        original = backend.complete

        def tap(request, original=original, replies=replies):
            reply = original(request)
            replies.append((request.turn, reply))
            return reply

        backend.complete = tap
        run(task, policy, tools=docuctl_tools(task, corpus.docs), max_turns=3, max_tools=2)
        backend.complete = original
        for turn, reply in replies:
            row = per_turn[turn]
            row[0] += 1
            row[1] += reply.prompt_tokens
            row[2] += reply.reused_tokens or 0
    print(f"prompt reuse over {episodes} live episodes (base prompt, temperature 0):")
    total_prompt = total_reused = 0
    for turn in sorted(per_turn):
        calls, prompt, reused = per_turn[turn]
        total_prompt += prompt
        total_reused += reused
        print(
            f"  turn {turn}: {calls:2d} calls, {prompt / calls:5.0f} prompt tokens each, "
            f"{reused / calls:5.0f} reused ({100 * reused / prompt:3.0f}%)"
        )
    later = [per_turn[t] for t in per_turn if t > 1]
    if later:
        prompt, reused = sum(r[1] for r in later), sum(r[2] for r in later)
        print(f"  turns 2+: {100 * reused / prompt:.0f}% of prompt tokens served from the cache")
    print(
        f"  all turns: {100 * total_reused / total_prompt:.0f}% (turn 1 starts from an empty cache by design)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    found = engine()
    print(f"model {found.path.name}, n_ctx {found.n_ctx}, {found.llama.n_threads} thread(s)")
    latency(found, recorded_requests(args.prompts), args.repeats)
    reuse(args.episodes)


if __name__ == "__main__":
    main()
