"""Documents: the seed's search/read semantics, and the index agreeing with the seed's scan."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit import Documents, docuctl, linear_search, words

PAGES = [
    {"id": "b-v2", "version": "v2", "title": "Beta", "text": "alpha gamma", "command": "cb"},
    {"id": "a-v2", "version": "v2", "title": "Alpha", "text": "gamma delta", "command": "ca"},
    {"id": "c-v1", "version": "v1", "title": "Alpha", "text": "alpha gamma delta", "command": "cc"},
]


def test_words_lowercases_splits_and_drops_stop_words():
    assert words("How do I Roll-back the LAST release?") == {"roll", "back", "last", "release"}


def test_score_counts_shared_terms_and_ties_break_by_id():
    docs = Documents(PAGES)
    assert docs.search("alpha gamma", "v2", top_k=3) == [
        {"id": "a-v2", "title": "Alpha"},
        {"id": "b-v2", "title": "Beta"},
    ]
    assert docs.search("delta", "v2", top_k=3) == [{"id": "a-v2", "title": "Alpha"}]


def test_other_versions_are_never_ranked_and_zero_scores_are_dropped():
    docs = Documents(PAGES)
    assert [hit["id"] for hit in docs.search("alpha gamma delta", "v1", top_k=3)] == ["c-v1"]
    assert docs.search("nothing matches", "v2", top_k=3) == []


def test_alias_expansion_only_when_asked():
    docs = Documents(PAGES, {"first": "alpha"})
    assert docs.search("first", "v2", top_k=3) == []
    assert [hit["id"] for hit in docs.search("first", "v2", expand=True, top_k=3)] == ["a-v2", "b-v2"]


@pytest.mark.parametrize("top_k", [0, 4, 2.0, True, "2"])
def test_top_k_outside_one_to_three_is_refused(top_k):
    with pytest.raises(ValueError, match="top_k"):
        Documents(PAGES).search("alpha", "v2", top_k=top_k)


def test_unknown_version_is_refused():
    with pytest.raises(ValueError, match="version"):
        Documents(PAGES).search("alpha", "v3")


def test_read_returns_a_copy_and_refuses_another_versions_page():
    docs = Documents(PAGES)
    page = docs.read("a-v2", "v2")
    page["command"] = "tampered"
    assert docs.read("a-v2", "v2")["command"] == "ca"
    with pytest.raises(ValueError, match="does not exist in the requested version"):
        docs.read("c-v1", "v2")
    with pytest.raises(ValueError, match="does not exist"):
        docs.read("missing", "v2")


def test_read_of_rollback_v1_from_a_v2_task_is_refused_on_the_real_corpus():
    with pytest.raises(ValueError):
        docuctl().docs.read("rollback-v1", "v2")


VOCAB = ["alpha", "beta", "gamma", "delta", "rollback", "deploy", "the", "a", "x1", "y2"]
page_strategy = st.fixed_dictionaries(
    {
        "version": st.sampled_from(["v1", "v2"]),
        "title": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join),
        "text": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12).map(" ".join),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    pages=st.lists(page_strategy, max_size=25),
    aliases=st.dictionaries(st.sampled_from(VOCAB + ["zeta", "eta"]), st.sampled_from(VOCAB), max_size=4),
    query=st.lists(st.sampled_from(VOCAB + ["zeta", "eta", "HOW", "Alpha!"]), max_size=6).map(" ".join),
    version=st.sampled_from(["v1", "v2"]),
    expand=st.booleans(),
    top_k=st.sampled_from([1, 2, 3]),
)
def test_index_returns_exactly_what_the_seeds_linear_scan_returns(
    pages, aliases, query, version, expand, top_k
):
    pages = [{"id": f"p{i:02d}-{p['version']}", "command": "c", **p} for i, p in enumerate(pages)]
    docs = Documents(pages, aliases)
    assert docs.search(query, version, expand=expand, top_k=top_k) == linear_search(
        pages, aliases, query, version, expand=expand, top_k=top_k
    )
