"""Documents: search and read semantics."""

import pytest

from labkit.baseline import Documents

PAGES = [
    {"id": "b-v2", "version": "v2", "title": "Beta", "text": "alpha gamma", "command": "cb"},
    {"id": "a-v2", "version": "v2", "title": "Alpha", "text": "gamma delta", "command": "ca"},
    {"id": "c-v1", "version": "v1", "title": "Alpha", "text": "alpha gamma delta", "command": "cc"},
]


def test_shared_terms_rank_ties_go_to_the_smaller_id_zero_scores_drop_and_aliases_expand_on_request():
    docs = Documents(PAGES)
    assert [hit["id"] for hit in docs.search("alpha gamma", "v2", top_k=3)] == ["a-v2", "b-v2"]
    assert docs.search("delta", "v2", top_k=3) == [{"id": "a-v2", "title": "Alpha"}]
    assert [hit["id"] for hit in docs.search("alpha gamma delta", "v1", top_k=3)] == ["c-v1"]
    assert docs.search("nothing matches", "v2", top_k=3) == []
    aliased = Documents(PAGES, {"first": "alpha"})  # expanded only when asked
    assert aliased.search("first", "v2", top_k=3) == []
    assert [hit["id"] for hit in aliased.search("first", "v2", expand=True, top_k=3)] == ["a-v2", "b-v2"]


@pytest.mark.parametrize(
    "version, top_k", [("v2", 0), ("v2", 4), ("v2", 2.0), ("v2", True), ("v2", "2"), ("v3", 1)]
)
def test_an_unknown_version_or_a_top_k_outside_one_to_three_is_refused(version, top_k):
    with pytest.raises(ValueError, match="top_k|version"):
        Documents(PAGES).search("alpha", version, top_k=top_k)


def test_read_returns_a_copy_and_refuses_another_versions_page():
    docs = Documents(PAGES)
    docs.read("a-v2", "v2")["command"] = "tampered"
    assert docs.read("a-v2", "v2")["command"] == "ca"
    for page_id in ("c-v1", "missing"):
        with pytest.raises(ValueError, match="does not exist in the requested version"):
            docs.read(page_id, "v2")
