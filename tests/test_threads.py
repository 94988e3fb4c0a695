"""The thread policy: the governor gives cores to other processes, --threads fixes the count."""

from __future__ import annotations

import json

import pytest

from .conftest import run_cli


def test_thread_governor_gives_cores_to_other_processes(monkeypatch):
    import torch

    from robeval.core import threads

    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        governor = threads.ThreadGovernor(most=2)
        busy = iter([2, 1, 0, 0, 0])  # another process's runnable threads at each look
        monkeypatch.setattr(threads, "runnable_elsewhere", lambda: next(busy))
        monkeypatch.setattr(threads, "LOOK_EVERY_SECONDS", 0.0)
        seen = []
        for _ in range(5):
            governor.look()
            seen.append(torch.get_num_threads())
        assert seen == [1, 1, 1, 2, 2]  # down at once; up again only after two free looks
    finally:
        torch.set_num_threads(saved)
    assert threads.configure_process(None) == {}
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # so that the test's change is undone afterwards
    assert threads.configure_process(3) == {"OMP_NUM_THREADS": "3"}
    monkeypatch.setattr(threads, "cores", lambda: 2)
    assert threads.threads_from_argv(["run", "--threads", "2"]) == 2
    assert threads.threads_from_argv(["run", "--threads=1"]) == 1 and threads.threads_from_argv(["run"]) is None
    assert threads.threads_from_argv(["run", "--threads", "3"]) is None  # beyond the cores: the command says so


def test_threads_option_reaches_the_run(tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--threads", "1", "--quiet",
                   "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o" / "run.json").read_text())["threads"] == 1
    bad = run_cli("run", "-m", "digits-deit", "--threads", "0", "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert bad.returncode == 2 and "--threads must be at least 1" in bad.stderr


@pytest.mark.parametrize("option", ["--threads", "--workers"])
@pytest.mark.parametrize("count", [lambda cores: cores + 1, lambda cores: 10**20])  # 10**20: torch's int overflows
def test_more_threads_or_workers_than_cores_is_one_line_before_any_work(option, count, tmp_path):
    from robeval.core.machine import cores

    asked = str(count(cores()))
    bad = run_cli("run", "-m", "digits-deit", option, asked, "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert f"{option} {asked}: this machine has {cores()} CPU cores" in bad.stderr
    assert list(tmp_path.iterdir()) == []  # no store, no results folder
