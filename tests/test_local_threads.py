"""Grid workers share the cores: each gets LABKIT_THREADS, which the embedded model obeys."""

import os

import pytest

from labkit.core.errors import LabError
from labkit.model.local import THREADS_ENV, LocalBackend, threads_from_env


def test_threads_come_from_the_environment_or_stay_llama_cpps_default(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert threads_from_env() is None and LocalBackend().n_threads is None
    monkeypatch.setenv(THREADS_ENV, "1")
    assert threads_from_env() == 1 and LocalBackend().n_threads == 1
    assert LocalBackend(n_threads=3).n_threads == 3  # an explicit choice wins


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_one_line(monkeypatch, raw):
    monkeypatch.setenv(THREADS_ENV, raw)
    with pytest.raises(LabError, match=f"{THREADS_ENV}={raw!r}: expected a whole number"):
        threads_from_env()


def test_each_local_worker_gets_its_share_of_the_cores(monkeypatch):
    import distributed

    from labkit.course.grid.run import local_cluster

    seen = {}
    monkeypatch.setattr(distributed, "LocalCluster", lambda **kwargs: seen.update(kwargs))
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    local_cluster(2)
    assert seen["n_workers"] == 2 and seen["env"] == {THREADS_ENV: "4"}
    local_cluster(16)
    assert seen["env"] == {THREADS_ENV: "1"}
