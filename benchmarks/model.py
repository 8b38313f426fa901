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
2. State-constrained decisions (the constraint ladder's L3). The requests of the recorded
   L3 temperature-0 run, rebuilt by replaying it (each carries the schema of its episode's
   state): (a) the decision as the `local` backend makes it, *including building that
   state's grammar from scratch* (the cache is emptied first), against (b) raw generation
   of as many tokens. Goal: (a)/(b) <= 1.3x. The grammar build alone is reported too.
3. Prompt reuse. Live episodes of the docuctl policy on the base prompt: prompt tokens
   per turn, and how many of them came from the cache instead of being evaluated again.
4. One live lab-02 trial: the 24 docuctl cases at T=0, `example` prompt, rung L3, wall
   time (goal: under 3 minutes on 2 cores); `--trial` to run it (it takes minutes).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

from labkit import docuctl, docuctl_tools, run, task_from
from labkit.core.errors import LabError
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.model import ReplayBackend, read_records, trial_files
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


def l3_requests(n: int) -> list:
    """The first `n` requests of the recorded L3 T=0 example run, replayed to carry their schemas."""
    from labkit.decision_loop.trials import limits_for, run_case
    from labkit.model.replay import TRIALS

    path = TRIALS / "docuctl-smollm2-example-l3-t0.jsonl"
    if not path.is_file():
        raise LabError(f"{path} not found: record the L3 run first")
    seen: list = []

    class Tap(ReplayBackend):
        def complete(self, request):
            seen.append(request)
            return super().complete(request)

    corpus = docuctl()
    for case in corpus.cases + corpus.adaptive_cases:
        if len(seen) >= n:
            break
        policy = docuctl_policy("example", backend=Tap([path]), rung="L3")
        run_case(case, policy, limits=limits_for(case, corpus), corpus=corpus)
    return seen[:n]


def state_constrained(found, requests: list, repeats: int) -> None:
    totals = defaultdict(float)
    tokens_total = 0
    for request in requests:
        tokens = found.prompt_tokens(list(request.messages))
        schema = dict(request.schema)
        best = defaultdict(lambda: float("inf"))
        for _ in range(repeats):
            prime(found, tokens)
            for sampler in found._grammars.values():
                found.lib.llama_sampler_free(sampler)
            found._grammars.clear()
            start = time.perf_counter()
            found.grammar(schema)
            build = time.perf_counter() - start
            found._grammars.clear()  # built again inside generate, timed as part of the decision
            start = time.perf_counter()
            constrained = found.generate(tokens, max_tokens=request.max_tokens, schema=schema)
            best["constrained + grammar build"] = min(best["constrained + grammar build"],
                                                      time.perf_counter() - start)
            best["grammar build"] = min(best["grammar build"], build)
            n = len(constrained.tokens) + (constrained.finish_reason == "stop")
            prime(found, tokens)
            raw = found.generate(tokens, max_tokens=n, stop_at_end=False)
            best["raw"] = min(best["raw"], raw.seconds)
        for name, seconds in best.items():
            totals[name] += seconds
        tokens_total += n
    print(f"{len(requests)} L3 requests (state-dependent schemas), {tokens_total} generated tokens; "
          f"best of {repeats}")
    for name in ("raw", "constrained + grammar build", "grammar build"):
        print(f"  {name:<28} {totals[name]:7.3f} s   {totals[name] / len(requests) * 1e3:7.1f} ms/decision")
    ratio = totals["constrained + grammar build"] / totals["raw"]
    print(f"ratio: state-constrained decision (grammar built per state) / raw generation = {ratio:.2f}x "
          f"(goal <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'})")


def live_trial() -> None:
    import tempfile
    from pathlib import Path

    from labkit.decision_loop.trials import run_trials

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        episodes = run_trials(LocalBackend(), Path(folder) / "t.jsonl", cases="all", k=1,
                              prompt="example", rung="L3")
        seconds = time.perf_counter() - start
    verdict = "met" if seconds < 180 else "NOT met"
    print(f"one live lab-02 trial: {len(episodes)} cases, example prompt, L3, T=0: {seconds:.0f} s, "
          f"{sum(e['passed'] for e in episodes)} passed (goal < 180 s: {verdict})")


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
    parser.add_argument("--trial", action="store_true", help="also time one live 24-case L3 trial")
    args = parser.parse_args()
    found = engine()
    print(f"model {found.path.name}, n_ctx {found.n_ctx}, {found.llama.n_threads} thread(s)")
    latency(found, recorded_requests(args.prompts), args.repeats)
    state_constrained(found, l3_requests(args.prompts), args.repeats)
    reuse(args.episodes)
    if args.trial:
        live_trial()


if __name__ == "__main__":
    main()
