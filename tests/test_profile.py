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


def test_a_batch_whose_pass_cannot_fit_is_refused_before_it_runs(monkeypatch, tmp_path):
    """Its images fit, the memory its forward+backward keeps (per image, from a probe of one and two images)
    does not: one line, before any pass and any file; the count it says could fit is the last one admitted."""
    import pytest
    import torch

    import robeval
    from robeval.core.errors import UserError
    from robeval.evaluation import profiling

    from .conftest import run_cli

    net, cpu, size = robeval.load_model("digits-deit").net, torch.device("cpu"), (1, 8, 8)
    per_image = 4 * 64 + profiling.pass_bytes_per_image(net, size, cpu)
    assert per_image > 10 * 4 * 64  # the activations, not the image, are what a pass needs
    monkeypatch.setattr(profiling, "memory_free", lambda: 1000 * per_image)
    profiling.check_fits("digits-deit", net, size, 1000, cpu)
    with pytest.raises(UserError, match="at most 1,000 images could fit"):
        profiling.check_fits("digits-deit", net, size, 1001, cpu)
    monkeypatch.setattr(profiling, "memory_free", lambda: 2 * 4 * 64 * 4000)  # 4000 images fit, their pass does not
    passes = []
    monkeypatch.setattr(profiling._Bench, "warm_up", lambda self: passes.append(self))
    refused = run_cli("profile", "-m", "digits-deit", "--batch-size", "4000", "--out", str(tmp_path / "p.md"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and not passes, refused.stderr
    assert refused.stderr.startswith("error: --batch-size 4000: a forward+backward of digits-deit needs at least")
    assert not (tmp_path / "p.md").exists()


def test_the_allocators_failure_inside_a_pass_is_one_line(monkeypatch, tmp_path):
    """What the estimate does not see (other jobs, fragmentation): torch's C++ message becomes one line."""
    import pytest
    import torch

    from robeval.evaluation import profiling

    from .conftest import run_cli

    failures = [
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
            "allocate 12288000000 bytes. Error code 12 (Cannot allocate memory)"
        ),
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
    ]
    said = []
    for failure in failures:

        def fail(self, failure=failure):
            raise failure

        monkeypatch.setattr(profiling._Bench, "forward", fail)
        out = tmp_path / "p.md"
        failed = run_cli("profile", "-m", "digits-deit", "--batch-size", "4", "--out", str(out))
        assert failed.returncode == 2 and failed.stderr.count("\n") == 1 and not out.exists(), failed.stderr
        said.append(failed.stderr)
    assert all(line.startswith("error: --batch-size 4: the pass ran out of memory on cpu") for line in said)
    assert "the allocator refused 11.4 GiB more" in said[0]  # what torch's message says it was asked for
    monkeypatch.setattr(profiling._Bench, "forward", lambda self: 1 / 0)  # not the allocator's: not hidden
    with pytest.raises(ZeroDivisionError):
        profiling.profile(["digits-deit"], repeats=1, memory=False)
