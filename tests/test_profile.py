"""The efficiency table (robeval profile): fair to the model listed second, every column filled."""

from __future__ import annotations


def test_profile_is_fair_to_the_model_listed_second(monkeypatch):
    """The same model twice gets the same speed both times on a machine that slows down as it runs
    (interleaved repeats, medians).  The clock is the test's: a pass costs one second plus a hundredth per
    pass made before it (the first of the process fifty more), whatever the machine does meanwhile."""
    import time

    from robeval.evaluation import profiling

    clock, passes = [0.0], [0]

    def one_pass(self):
        passes[0] += 1
        clock[0] += 1.0 + 0.01 * passes[0] + (50.0 if passes[0] == 1 else 0.0)

    monkeypatch.setattr(profiling._Bench, "forward", one_pass)
    monkeypatch.setattr(profiling._Bench, "forward_backward", one_pass)
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    df = profiling.profile(["digits-deit", "digits-deit"], batch_size=16, repeats=5, memory=False)
    # run one after the other, the second model's repeats would come 5 passes later: about 4% slower
    assert abs(df["forward_img_s_change_%"].iloc[1]) < 2 and abs(df["forward_backward_img_s_change_%"].iloc[1]) < 2


def test_profile_command_writes_the_table_with_every_column(tmp_path):
    import pandas as pd

    from .conftest import run_cli

    out = tmp_path / "profile.csv"
    proc = run_cli("profile", "-m", "digits-deit-elliptical", "--repeats", "2", "-f", "csv", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out)
    assert list(table["model"]) == ["digits-deit-elliptical"]
    # the memory of a pass (measured in a fresh process), not of the process: torch alone holds hundreds of MB
    assert table["pass_memory_MB"].between(0, 200).all() and (table["gflops_per_image"] > 0).all()
    assert table["params_M_change_%"].iloc[0] == 0 and (table["forward_img_s"] > 0).all()
    too_many = run_cli("profile", "-m", "digits-deit", "--batch-size", str(10**20), "--out", str(tmp_path / "p.md"))
    assert too_many.returncode == 2 and len(too_many.stderr.strip().splitlines()) == 1, too_many.stderr
    assert "its images alone need" in too_many.stderr and not (tmp_path / "p.md").exists()


def test_a_run_counts_a_registered_models_flops_once_per_process_and_a_given_module_every_time(monkeypatch):
    """What every run stores for the report's efficiency table: a registered model's architecture is its
    name and options (counted once for them), a module's is its own (counted each run)."""
    import torch

    import robeval
    from robeval.evaluation import profiling

    counted = []
    monkeypatch.setattr(profiling, "COUNTED", {})
    real = profiling.gflops_per_image
    monkeypatch.setattr(profiling, "gflops_per_image", lambda *a: counted.append(a) or real(*a))
    net, cpu = robeval.load_model("digits-deit").net, torch.device("cpu")
    static = profiling.static_efficiency(["digits-deit"])["gflops_per_image"].iloc[0]
    counted.clear()
    for registered in (("digits-deit", {}), ("digits-deit", {}), ("digits-deit", {"x": 1}), None, None):
        assert profiling.run_gflops(net, (1, 8, 8), cpu, registered) == static
    assert len(counted) == 4  # the first, the other options, and the module twice
