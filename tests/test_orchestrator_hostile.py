"""Lab 04: hostile graphs — huge loops, predicates that raise, ids that only look alike."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.routing import Context, FakeClock, Graph, GraphError, Next, RetryPolicy
from labkit.routing.result import MAX_CLAUSE

NFC = "r\u00e9vise"
NFD = unicodedata.normalize("NFD", NFC)


def noop(ctx: Context) -> None:
    return None


def boom(ctx: Context) -> None:
    raise ValueError("boom")


def test_a_dead_letter_reason_stays_short_on_a_long_loop():
    graph = Graph()
    n = 2_000
    for i in range(n):
        graph.job(f"job{i}", noop, deps=[f"job{i - 1}"] if i else [])
    graph.route(f"job{n - 1}", lambda _: Next.back_to_with("job0", "again " * 200), targets=["job0"])
    result = graph.run(max_visits=1, clock=FakeClock())
    assert result.status == "dead_letter"
    assert len(result.reason) < 4 * MAX_CLAUSE
    assert result.reason.startswith(f"loop job{n - 1} -> job0 hit max_visits=1 (job0 1 runs, job1 1 runs")
    assert "more characters" in result.reason
    assert "\n" not in result.summary().split("\n")[1]


def test_short_reasons_are_left_exactly_as_they_are():
    graph = Graph().job("a", boom).job("b", noop, deps=["a"])
    result = graph.run(clock=FakeClock())
    assert result.reason == "a failed: ValueError: boom (no retry policy); cancelled: b"


def test_a_retry_on_predicate_that_raises_fails_its_job_not_the_run():
    def broken(error: BaseException) -> bool:
        raise KeyError("no such error kind")

    graph = (
        Graph()
        .job("fetch", boom, retry=RetryPolicy(retry_on=broken))
        .job("use", noop, deps=["fetch"])
        .job("other", noop)
    )
    result = graph.run(clock=FakeClock())
    assert result.status == "failed"
    assert {job: str(state) for job, state in result.states.items()} == {
        "fetch": "failed",
        "use": "cancelled",
        "other": "completed",
    }
    assert result.errors["fetch"] == (
        "ValueError: boom (retry_on raised KeyError: 'no such error kind'; not retried)"
    )


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: Graph().job(NFD, noop), "is not in Unicode NFC form"),
        (lambda: Graph().job("draft\u200b", noop), "U+200B (ZERO WIDTH SPACE)"),
        (lambda: Graph().job("draft\u00a0v2", noop), "U+00A0 (NO-BREAK SPACE)"),
        (lambda: Graph().job("\u202edraft", noop), "U+202E"),
        (lambda: Graph().job(NFC, noop).job("review", noop, deps=[NFD]), "is not in Unicode NFC form"),
        (lambda: Graph().job("a", noop).route("a", lambda _: Next.Continue, targets=["a\u2060"]), "U+2060"),
    ],
    ids=["nfd id", "zero width space", "no-break space", "bidi override", "nfd dep", "word joiner target"],
)
def test_ids_that_only_look_like_another_are_refused_with_a_clear_message(make, fragment):
    with pytest.raises(GraphError) as caught:
        make()
    message = str(caught.value)
    assert fragment in message and "\n" not in message
    assert message.isascii() or fragment.isascii()  # the id is shown escaped, not invisibly


def test_the_nfc_spelling_of_the_same_id_is_accepted():
    result = Graph().job(NFC, lambda ctx: 1).job("review", noop, deps=[NFC]).run(clock=FakeClock())
    assert result.ok and list(result.states) == [NFC, "review"]


def test_a_look_alike_unknown_dependency_is_shown_escaped_beside_the_suggestion():
    graph = Graph().job("draft", noop).job("review", noop, deps=["dr\u0430ft"])  # Cyrillic a
    with pytest.raises(GraphError) as caught:
        graph.validate()
    assert "'dr\\u0430ft'" in str(caught.value) and "did you mean 'draft'?" in str(caught.value)


def test_a_router_naming_an_invisible_variant_fails_its_job_clearly():
    graph = Graph().job("draft", lambda ctx: 1).job("review", lambda ctx: 2, deps=["draft"])
    graph.route("review", lambda _: Next.back_to("draft\u200b"), targets=["draft"])
    result = graph.run(clock=FakeClock())
    assert result.status == "failed" and "U+200B" in result.errors["review"]


invisible = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00a0", "\u202e", "\x7f"])


@settings(max_examples=40, deadline=None)
@given(base=st.text(alphabet="abcdefgh-", min_size=1, max_size=8), mark=invisible, at=st.integers(0, 8))
def test_no_invisible_character_makes_a_second_id(base, mark, at):
    variant = base[:at] + mark + base[at:]
    with pytest.raises(GraphError, match=f"U\\+{ord(mark):04X}"):
        Graph().job(base, noop).job(variant, noop)


def test_the_routing_text_output_says_why_a_model_backed_job_failed(cli, monkeypatch):
    monkeypatch.setenv("LABKIT_MODEL", "ollama:qwen2.5:0.5b")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens: every call fails
    monkeypatch.delenv("LABKIT_RECORD", raising=False)
    code, out, err = cli("routing", "--skip-timing")
    assert (code, err) == (0, "")
    part = out[out.index("5. The review loop with a model reviser") : out.index("6. Next.Stop")]
    assert "   with feedback: revise failed: ProviderError: cannot reach Ollama at http://127.0.0.1:9" in part
    assert "   without feedback: revise failed: ProviderError" in part
