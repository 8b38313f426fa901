"""Files a learner can hand us: every malformed one is one FixtureError naming the file.

A number with thousands of digits, arrays nested past Python's recursion limit, NaN,
an empty case list, a trials file given twice, and text with the Unicode line separators
that `str.splitlines` splits on.
"""

import json
import shutil

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from labkit import FixtureError, LabError, Task, docuctl_tools, load_corpus, run
from labkit.baseline.corpus import DOCUCTL
from labkit.core.fixtures import CASES, load_json
from labkit.decision_loop.model_policy import describe_docuctl
from labkit.model import ModelPolicy, ReplayBackend, read_records
from labkit.model.backend import ChatRequest, Reply
from labkit.model.record import JsonlWriter, call_record
from labkit.model.replay import TRIALS
from labkit.refunds import load_lab
from labkit.refunds.shop import REFUNDS

BIG = "9" * 5000  # past Python's 4,300-digit limit for int(str)
DEEP = "[" * 100_000 + "]" * 100_000  # past the recursion limit of the C JSON parser
HOSTILE_JSON = {
    "huge int": f'[{{"id": {BIG}}}]',
    "deep": DEEP,
    "nan": '[{"id": NaN}]',
    "infinity": '[{"id": -Infinity}]',
    "overflowing float": '[{"id": 1e400}]',
}
EPISODE = next(
    line
    for line in (TRIALS / "docuctl-smollm2-example-t0.jsonl").read_text().splitlines()
    if '"kind":"episode"' in line
)
CALL = next(
    line
    for line in (TRIALS / "docuctl-smollm2-example-t0.jsonl").read_text().splitlines()
    if '"kind":"call"' in line
)


@pytest.fixture
def corpus_dir(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(DOCUCTL, folder)
    return folder


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON)
def test_load_json_refuses_what_json_loads_would_crash_on_or_accept_as_a_non_number(tmp_path, text):
    path = tmp_path / "cases.json"
    path.write_text(text)
    with pytest.raises(FixtureError) as caught:
        load_json(path, CASES)
    message = str(caught.value)
    assert message.startswith(f"{path}: not valid JSON (") and "\n" not in message and len(message) < 300


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON)
def test_compare_on_a_hostile_cases_file_is_one_line_and_exit_2(cli, corpus_dir, text):
    (corpus_dir / "cases.json").write_text(text)
    code, out, err = cli("compare", "--fixtures", str(corpus_dir))
    assert (code, out) == (2, "")
    assert err.startswith(f"labkit compare: error: {corpus_dir / 'cases.json'}: not valid JSON (")
    assert err.count("\n") == 1


def test_an_empty_case_list_is_refused_not_scored_0_of_0(cli, corpus_dir):
    (corpus_dir / "cases.json").write_text("[]")
    with pytest.raises(
        FixtureError, match=r"cases.json: should be non-empty|cases.json: \[\] should be non-empty"
    ):
        load_corpus(corpus_dir)
    code, out, err = cli("compare", "--fixtures", str(corpus_dir))
    assert (code, out) == (2, "") and "non-empty" in err


def test_the_refund_lab_refuses_a_hostile_number_in_its_records(tmp_path):
    folder = tmp_path / "refunds"
    shutil.copytree(REFUNDS, folder)
    orders = (folder / "orders.json").read_text()
    (folder / "orders.json").write_text(orders.replace('"amount": 89.0', f'"amount": {BIG}', 1))
    with pytest.raises(FixtureError, match=r"orders.json: not valid JSON \("):
        load_lab(folder)


def test_the_refund_lab_refuses_an_empty_request_list(tmp_path):
    folder = tmp_path / "refunds"
    shutil.copytree(REFUNDS, folder)
    (folder / "requests.json").write_text("[]")
    with pytest.raises(FixtureError, match=r"requests.json: \[\] should be non-empty"):
        load_lab(folder)


# -- trials files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        EPISODE.replace('"turns":', f'"turns":{BIG},"x":', 1),
        EPISODE.replace('"kind":"episode"', f'"kind":"episode","x":{DEEP}'),
        CALL.replace('"latency_s":', '"latency_s":NaN,"y":', 1),
    ],
    ids=["huge int", "deep", "nan latency"],
)
def test_read_records_names_file_and_line_for_a_hostile_line(tmp_path, line, cli):
    path = tmp_path / "docuctl-bad.jsonl"
    path.write_text(CALL + "\n" + line + "\n")
    with pytest.raises(FixtureError) as caught:
        list(read_records(path))
    assert str(caught.value).startswith(f"{path}: line 2: ")
    code, out, err = cli("evaluate", "--trials", str(path))
    assert (code, out) == (2, "") and err.startswith(f"labkit evaluate: error: {path}: line 2: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('"max_turns":', '"max_turns":99,"_":', "limits.max_turns"),
        ('"max_tools":', '"max_tools":-1,"_":', "limits.max_tools"),
        ('"turns":', f'"turns":{"1" + "0" * 400},"_":', "turns"),
    ],
    ids=["max_turns out of the runtime's range", "negative max_tools", "401-digit count"],
)
def test_an_episode_with_numbers_the_runtime_cannot_run_is_refused_by_the_loader(
    tmp_path, cli, old, new, field
):
    path = tmp_path / "docuctl-limits.jsonl"
    path.write_text(CALL + "\n" + EPISODE.replace(old, new, 1) + "\n")
    code, out, err = cli("evaluate", "--trials", str(path))
    assert (code, out) == (2, "")
    assert (
        err.startswith(f"labkit evaluate: error: {path}: line 2 (episode): field '{field}'")
        and err.count("\n") == 1
    )


def test_a_401_digit_usage_in_a_call_is_refused_by_the_loader(tmp_path, cli):
    path = tmp_path / "docuctl-usage.jsonl"
    path.write_text(CALL.replace('"prompt_tokens":', f'"prompt_tokens":{"1" + "0" * 400},"_":', 1) + "\n")
    with pytest.raises(FixtureError, match=r"line 1 \(call\): field 'usage.prompt_tokens'"):
        list(read_records(path))


def test_nan_latency_is_refused_even_where_the_schema_says_number(tmp_path):
    path = tmp_path / "docuctl-nan.jsonl"
    record = json.loads(CALL)
    path.write_text(json.dumps(record | {"latency_s": float("nan")}) + "\n")  # json.dumps writes NaN
    with pytest.raises(FixtureError, match="line 1"):
        list(read_records(path))


def test_a_hostile_line_in_a_replay_file_is_a_setup_error_not_the_models_invalid_decision(tmp_path):
    path = tmp_path / "docuctl-bad.jsonl"
    path.write_text(CALL + "\n" + CALL.replace('"turn":', f'"turn":{BIG},"z":', 1) + "\n")
    task = Task("deploy-build", "deploy", "How do I deploy the current build?", "v2")
    policy = ModelPolicy("docuctl", docuctl_tools(task), "x", describe_docuctl, backend=ReplayBackend([path]))
    with pytest.raises(LabError, match=f"{path.name}: line 2"):
        run(task, policy, tools=docuctl_tools(task))


def test_the_same_trials_file_twice_is_refused_not_counted_twice(cli):
    path = str(TRIALS / "docuctl-smollm2-example-t0.jsonl")
    code, out, err = cli("evaluate", "--trials", path, path)
    assert (code, out) == (2, "")
    assert "already" in err and "counts once" in err and err.count("\n") == 1


# -- write and read agree -----------------------------------------------------------------

SEPARATORS = "\u2028\u2029\u0085\r\x0b\x0c\x1c\x1d\x1e\n"
texts = st.text(alphabet=st.one_of(st.sampled_from(SEPARATORS), st.characters()), max_size=40)


@settings(max_examples=60, deadline=None)
@given(system=texts, user=texts, reply=texts)
@example(system="a\u2028b", user="\u0085", reply='{"answer": "x\u2029y\ud800"}')
def test_any_text_written_to_a_trials_file_reads_back_unchanged(tmp_path_factory, system, user, reply):
    path = tmp_path_factory.mktemp("rt") / "docuctl-rt.jsonl"
    request = ChatRequest(
        "docuctl",
        "deploy-build",
        0,
        1,
        ({"role": "system", "content": system}, {"role": "user", "content": user}),
        {"type": "object"},
    )
    record = call_record(
        request, {"backend": "test", "date": "2025-01-01", "versions": {}}, reply=Reply(reply, 3, 4, 0.5)
    )
    writer = JsonlWriter(path)
    writer.write(record)
    writer.write(record)
    assert [found for _, found in read_records(path)] == [record, record]
    assert path.read_bytes().count(b"\n") == 2
