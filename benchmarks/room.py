"""One model server for the room: how many learners it carries, serial against batching, in one run.

    python benchmarks/room.py [--learners 1,8,16,30] [--window 20] [--deadline 15] [--parallel N]

Starts each server `labkit serve` can run, in turn, on a free 127.0.0.1 port with SmolLM2-135M as
`smollm2` and the local backend's context per slot: llama-cpp-python's (`python -m llama_cpp.server`,
one request at a time behind a global lock) and llama.cpp's `llama-server` (`make room-server`;
`--parallel` slots, continuous batching). Against each, for each N, it simulates N learners as N
threads, each running lab 02's L3 docuctl episodes (`example` prompt, T=0, cases in turn, lab 01's
limits) through `openai:smollm2` as a learner's backend runs: a per-decision deadline of `--deadline`
seconds (LABKIT_DECISION_TIMEOUT; labkit's own is 15 s), extended while the server still answers a
probe (queued behind other learners, not hung), up to the backend's 120 s a call. A learner starts
episodes for `--window` seconds and at most MAX_EPISODES; an episode under way then finishes, so every
N ends within window + 8 turns x 120 s, never hangs. Reported per server and N: decisions
answered per second, p50/p95 decision latency (answered ones), episodes and how many ended
`provider_error` (the deadline), and what that means for a 10-minute live segment: episodes each
learner completes in it; then batching's decisions/s over serial's at each N. For llama-server it
first measures the machine's ceiling (prompt tokens a second in one batch; generated tokens a second
for one sequence and for every slot at once), then reads its /metrics per N: the prompt tokens it
evaluated (not found in a cache) and the tokens it generated per answered decision, tokens a second,
tokens per decode step (the batch), the decisions a second those tokens allow at the ceiling, and the
share of that ceiling the room got.
Everything runs on this machine: client threads and servers share its cores, the learners' threads at
`--learner-nice` (0 by default; 10, as if each learner ran on their own laptop, measured a lower share
of the ceiling at 30 learners: 64% against 76%). Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from labkit.baseline import docuctl
from labkit.core.errors import ProviderError
from labkit.course.commands.serve import (
    ALIAS,
    PARALLEL,
    free_port,
    llama_server,
    require_server,
    server_command,
    wait_until_ready,
    warm_up,
)
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import cases_of, limits_for, run_case
from labkit.model.backend import DECISION_TIMEOUT, DECISION_TIMEOUT_ENV
from labkit.model.openai_chat import OpenAIBackend

MAX_EPISODES = 40  # per learner and N: the loop is bounded in count as well as in time
SEGMENT_S = 600  # a 10-minute live segment
# What `auto` detects (the live tests check it), given: in one process, Python 3.11's cached_property
# would make every learner thread's first decision wait for the others' /v1/models calls.
MODES = ("json_object", "json_schema")  # llama_cpp.server's, llama-server's
RECORDING = Path(__file__).parents[1] / "fixtures" / "trials" / "docuctl-smollm2-example-l3-t0.jsonl"


class Timed:
    """An OpenAIBackend that notes each decision's wall time and whether it was answered."""

    def __init__(self, inner: OpenAIBackend, notes: list[tuple[float, bool]], lock: threading.Lock):
        self.inner, self.notes, self.lock, self.name = inner, notes, lock, inner.name

    def provenance(self) -> dict:
        return self.inner.provenance()

    def complete(self, request):
        start = time.perf_counter()
        try:
            reply = self.inner.complete(request)
        except ProviderError:
            with self.lock:
                self.notes.append((time.perf_counter() - start, False))
            raise
        with self.lock:
            self.notes.append((time.perf_counter() - start, True))
        return reply


def learner(
    base_url: str,
    deadline: float,
    until: float,
    notes: list,
    stops: list,
    lock: threading.Lock,
    offset: int,
    mode: str,
    nice: int,
) -> None:
    # In a room each learner runs on their own laptop: here the simulated learners take the server's
    # cores only when it leaves them idle (this thread's own priority; the server keeps its own).
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    corpus = docuctl()
    cases = corpus.cases + corpus.adaptive_cases
    # As a learner's backend runs: the backend's own timeout for a whole call, each decision after the first
    # held to `deadline` (LABKIT_DECISION_TIMEOUT, set in main) unless the server still answers: then queued.
    inner = OpenAIBackend(ALIAS, base_url=base_url, schema_mode=mode, environ={})
    backend = Timed(inner, notes, lock)
    policy = docuctl_policy("example", backend=backend, rung="L3", max_tokens=48)
    for i in range(MAX_EPISODES):
        if time.monotonic() >= until:
            break
        case = cases[(offset + i) % len(cases)]
        result = run_case(case, policy, limits=limits_for(case, corpus), budget_tokens=4000, corpus=corpus)
        with lock:
            stops.append(result["stop"])


def together(threads: list[threading.Thread]) -> None:
    """Start every thread, then wait for all of them."""
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def evaluated(base_url: str) -> tuple[float, float, float] | None:
    """llama-server's (prompt tokens evaluated, tokens generated, decode steps) so far, from its /metrics
    (`--metrics`; prompt tokens found in a cache are not evaluated); None without that endpoint."""
    try:
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=5) as reply:
            lines = reply.read().decode().splitlines()
    except OSError:
        return None
    values = dict(line.split()[:2] for line in lines if line.startswith("llamacpp:"))
    names = ("prompt_tokens_total", "tokens_predicted_total", "n_decode_total")
    prompt, generated, steps = (float(values[f"llamacpp:{name}"]) for name in names)
    return prompt, generated, steps


def post(base_url: str, body: dict) -> dict:
    request = urllib.request.Request(
        base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


def ceiling(base_url: str, slots: int) -> dict:
    """What this machine's llama-server evaluates at most: prompt tokens a second (lab 02's system
    prompt, uncached: many tokens in one batch, the fastest case), and generated tokens a second for
    one sequence and for `slots` sequences decoding together (48 tokens each, past end of text)."""
    system = docuctl_policy("example").instructions
    prompt = {"model": ALIAS, "max_tokens": 1, "cache_prompt": False}
    prompt["messages"] = [{"role": "user", "content": system}]
    rate = max(post(base_url, prompt)["timings"]["prompt_per_second"] for _ in range(3))
    made: list[int] = []

    def generate(i: int) -> None:
        text = f"Count from {i} upwards in words."
        body = {"model": ALIAS, "max_tokens": 48, "ignore_eos": True, "temperature": 0.0}
        made.append(
            post(base_url, body | {"messages": [{"role": "user", "content": text}]})["usage"][
                "completion_tokens"
            ]
        )

    speeds = []
    for n in (1, slots):
        made.clear()
        start = time.perf_counter()
        together([threading.Thread(target=generate, args=(i,)) for i in range(n)])
        speeds.append(sum(made) / (time.perf_counter() - start))
    return {"prompt": rate, "one": speeds[0], "all": speeds[1], "slots": slots}


def measure(
    base_url: str, n: int, window: float, deadline: float, mode: str, limit: dict | None, nice: int = 0
) -> dict:
    before = evaluated(base_url)
    notes: list[tuple[float, bool]] = []
    stops: list[str] = []
    lock = threading.Lock()
    start = time.monotonic()
    args = (base_url, deadline, start + window, notes, stops, lock)
    together([threading.Thread(target=learner, args=(*args, i, mode, nice), daemon=True) for i in range(n)])
    elapsed = time.monotonic() - start
    after = evaluated(base_url)  # tokens of abandoned requests still queued are not counted
    answered = sorted(t for t, ok in notes if ok)
    p = (lambda q: answered[min(len(answered) - 1, int(q * len(answered)))]) if answered else (lambda q: None)
    errors = stops.count("provider_error")
    finished = len(stops) - errors
    spent = (
        None
        if None in (before, after) or not answered
        else [b - a for a, b in zip(before, after, strict=True)]
    )
    row = {
        "learners": n,
        "seconds": round(elapsed, 1),
        "decisions/s": round(len(answered) / elapsed, 2),
        "p50 s": None if not answered else round(statistics.median(answered), 2),
        "p95 s": None if not answered else round(p(0.95), 2),
        "episodes": len(stops),
        "provider_error": errors,
        "episodes per learner in 10 min": round(finished / n / elapsed * SEGMENT_S, 1),
        "prompt + generated tokens a decision": None,
        "tokens/s": None,
        "tokens a step": None,
        "ceiling decisions/s": None,
        "share of ceiling": None,
    }
    if spent and limit:
        prompt, generated = spent[0] / len(answered), spent[1] / len(answered)
        row["prompt + generated tokens a decision"] = f"{prompt:.0f} + {generated:.0f}"
        row["tokens/s"] = round((spent[0] + spent[1]) / elapsed)
        row["tokens a step"] = round((spent[0] + spent[1]) / max(spent[2], 1), 1)
        # Each decision's tokens at the machine's best rates: its prompt tokens at the uncached batch's,
        # its generated ones at the rate of every slot decoding at once.
        best = 1 / (prompt / limit["prompt"] + generated / limit["all"])
        row["ceiling decisions/s"] = round(best, 2)
        row["share of ceiling"] = f"{len(answered) / elapsed / best:.0%}"
    return row


def serve(port: int, threads: int | None, parallel: int) -> subprocess.Popen:
    command = server_command("127.0.0.1", port, threads=threads, parallel=parallel)
    command += ["--metrics"] if parallel else []
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_server(
    name: str, parallel: int, counts: list[int], args: argparse.Namespace
) -> tuple[list[dict], dict]:
    """Every N against one server (`parallel` slots of llama-server, or 0: llama_cpp.server), and
    for llama-server its ceiling, measured first."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    server = serve(port, args.threads, parallel)
    rows, limit = [], None
    try:
        wait_until_ready(server, f"{base_url}/models")
        if parallel:
            limit = ceiling(base_url, parallel)
            print(said(limit), flush=True)
        warm_up(base_url, slots=parallel)
        mode = MODES[bool(parallel)]
        for n in counts:
            row = {"server": name} | measure(
                base_url, n, args.window, args.deadline, mode, limit, args.learner_nice
            )
            rows.append(row)
            print(json.dumps(row) if args.json else "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
            time.sleep(args.deadline)  # abandoned requests still queued at the server drain first
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return rows, limit


def said(limit: dict) -> str:
    return (
        f"ceiling: {limit['prompt']:.0f} prompt tokens/s in one batch; {limit['one']:.0f} generated tokens/s "
        f"for one sequence, {limit['all']:.0f} for {limit['slots']} decoding together"
    )


def table(rows: list[dict]) -> str:
    heads = list(rows[0])
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join("-" if row[h] is None else str(row[h]) for h in heads) + " |" for row in rows]
    return "\n".join(lines)


def trial(parallel: int, threads: int | None, concurrent: bool, save: str | None = None) -> None:
    """Lab 02's L3 trial (`example` prompt, T=0, every case once, max_tokens 160) through llama-server,
    one learner per case all at once (`concurrent`) or the cases in turn, compared call by call with
    the committed recording: the same reply text, finish reason and prompt tokens, the same stops."""
    recorded = [json.loads(line) for line in RECORDING.read_text().splitlines()]
    calls = {(r["case"], r["turn"]): r for r in recorded if r["kind"] == "call"}
    episodes = {r["case"]: r for r in recorded if r["kind"] == "episode"}
    corpus, cases = docuctl(), cases_of("all")
    port = free_port()
    base_url, server = f"http://127.0.0.1:{port}/v1", serve(port, threads, parallel)
    got: dict = {}
    stops: dict = {}
    lock = threading.Lock()

    class Tap(OpenAIBackend):
        def complete(self, request):
            reply = super().complete(request)
            with lock:
                got[(request.case, request.turn)] = reply
            return reply

    def one(case) -> None:
        backend = Tap(ALIAS, base_url=base_url, schema_mode=MODES[bool(parallel)], environ={})
        policy = docuctl_policy(
            "example", backend=backend, rung="L3", max_tokens=160, temperature=0.0, seed=0
        )
        stops[case["id"]] = run_case(case, policy, limits=limits_for(case, corpus), corpus=corpus)

    try:
        wait_until_ready(server, f"{base_url}/models")
        warm_up(base_url, slots=parallel)
        if concurrent:
            together([threading.Thread(target=one, args=(case,)) for case in cases])
        else:
            for case in cases:
                one(case)
    finally:
        server.terminate()
        server.wait(10)
    tally = {"the same text": 0, "the same decision, other spacing": 0, "another decision": 0}
    for key, call in sorted(calls.items()):
        reply = got.get(key)
        if reply is None:
            print(f"{key}: recorded, not asked")
            continue
        if (reply.text, reply.finish_reason) == (call["reply"], call["finish_reason"]):
            tally["the same text"] += 1
        elif reply.finish_reason == call["finish_reason"] == "stop" and parsed(reply.text) == parsed(
            call["reply"]
        ):
            tally["the same decision, other spacing"] += 1
        else:
            tally["another decision"] += 1
            print(f"{key}: recorded {call['reply']!r}, served {reply.text!r}")
    matched = sum(
        [stops[c][k] for k in ("stop", "answer", "citation")]
        == [e[k] for k in ("stop", "answer", "citation")]
        for c, e in episodes.items()
    )
    how = f"{len(cases)} learners at once" if concurrent else "cases in turn"
    name = f"llama-server -np {parallel}" if parallel else "llama_cpp.server"
    counts = ", ".join(f"{v} {k}" for k, v in tally.items())
    print(
        f"{name}, {how}: of {len(calls)} recorded calls {counts}; {len(set(got) - set(calls))} not recorded"
    )
    print(f"episodes with the recorded stop, answer and citation: {matched} of {len(episodes)}")
    if save:
        Path(save).write_text(json.dumps({f"{c} {t}": r.text for (c, t), r in sorted(got.items())}, indent=1))


def parsed(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", default="1,8,16,30", help="comma-separated N (each at most 30)")
    parser.add_argument("--window", type=float, default=20.0, help="seconds each N starts episodes (<= 120)")
    deadline = f"per-decision deadline, seconds (<= 60; default {DECISION_TIMEOUT:g}, labkit's own)"
    parser.add_argument("--deadline", type=float, default=DECISION_TIMEOUT, help=deadline)
    parser.add_argument("--threads", type=int, default=None, help="the servers' CPU threads")
    parser.add_argument(
        "--parallel",
        type=int,
        default=PARALLEL,
        help="llama-server's slots (default: labkit serve's)",
    )
    parser.add_argument(
        "--servers", default="serial,batching", help="which servers: serial, batching or both"
    )
    parser.add_argument(
        "--learner-nice",
        type=int,
        default=0,
        help="the learners' threads' nice value (default 0, as the server's; 10 measured a lower share)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--trial", choices=["serial", "concurrent"], help="lab 02's L3 trial against the recording"
    )
    parser.add_argument("--save", metavar="FILE", help="--trial: write the served replies to FILE (JSON)")
    args = parser.parse_args()
    os.environ[DECISION_TIMEOUT_ENV] = str(args.deadline)
    if args.trial:
        if args.parallel and llama_server() is None:
            parser.error("llama-server is not built: run `make room-server` (or --parallel 0)")
        return trial(args.parallel, args.threads, args.trial == "concurrent", args.save)
    counts = [int(x) for x in args.learners.split(",") if x.strip()]
    chosen = [x.strip() for x in args.servers.split(",") if x.strip()]
    if (
        not counts
        or not all(1 <= n <= 30 for n in counts)
        or not 0 < args.window <= 120
        or not 0 < args.deadline <= 60
        or not 1 <= args.parallel <= 64
        or not chosen
        or not set(chosen) <= {"serial", "batching"}
    ):
        parser.error("--learners 1..30 each, --window 0-120 s, --deadline 0-60 s, --parallel 1-64, --servers")
    if "serial" in chosen:
        require_server()
    if "batching" in chosen and llama_server() is None:
        parser.error("llama-server is not built: run `make room-server` (or --servers serial)")
    results, limit = {}, None
    for name in chosen:
        slots = args.parallel if name == "batching" else 0
        label = f"llama-server -np {slots}" if slots else "llama_cpp.server"
        results[name], found = run_server(label, slots, counts, args)
        limit = found or limit  # only llama-server measures one, whichever order the servers ran in
    if args.json:
        return
    for rows in results.values():
        print("\n" + table(rows))
    if limit:
        print(f"\nllama-server's {said(limit)}")
    if len(results) == 2:
        ratios = [
            {"learners": s["learners"], "decisions/s ratio": round(b["decisions/s"] / s["decisions/s"], 1)}
            if s["decisions/s"]
            else {"learners": s["learners"], "decisions/s ratio": None}
            for s, b in zip(results["serial"], results["batching"], strict=True)
        ]
        print("\nbatching / serial\n" + table(ratios))


if __name__ == "__main__":
    main()
