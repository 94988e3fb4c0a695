"""What a new user hit (issue 12): data that does not fit the model, random weights, subsets past
broken files, runs left by typos, which run a table reads, and a CLI that starts without torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import robeval
from robeval.errors import UserError
from robeval.data.folders import load_folder_data
from robeval.data.labels import check_classes, folder_label_space
from robeval.results.store import Store

from .conftest import run_cli

DIGITS_META = robeval.load_model("digits-deit").meta


def _folder(root, classes, per_class=2, size=12, broken=()):
    rng = np.random.default_rng(0)
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 255, (size, size), dtype=np.uint8)).save(root / name / f"{i}.png")
    for path in broken:
        (root / path).write_bytes(b"\x89PNG\r\n\x1a\n broken")
    return root


@pytest.mark.parametrize("classes, says", [
    (["n15075141"], "labels of 1000 classes (ImageNet-1k wnid folders"),   # class 999: out of range for 10 classes
    (["n01440764", "n01443537"], "labels of 1000 classes"),                # low indices: would run, meaningless
    (["a", "b", "c"], "labels of 3 classes (sorted folder order"),
])
def test_data_whose_classes_do_not_fit_the_model_is_refused_before_any_work(tmp_path, classes, says):
    data = _folder(tmp_path / "data", classes)
    store = tmp_path / "s.sqlite"
    proc = run_cli("run", "-m", "digits-deit", "--data", str(data), "-n", "2", "--attacks", "fgsm", "--quiet",
                   "--store", str(store))
    assert proc.returncode == 2 and says in proc.stderr and "model digits-deit has 10 classes" in proc.stderr
    assert "--class-map" in proc.stderr and "Traceback" not in proc.stderr
    assert not store.exists() or Store(store).runs().empty  # refused before a run was created


def test_class_map_maps_folders_to_model_classes(tmp_path):
    data = _folder(tmp_path / "data", ["n15075141", "cats"])
    mapping = tmp_path / "map.txt"
    mapping.write_text("n15075141 7\ncats 2\n")
    loaded = load_folder_data(data, DIGITS_META, None, class_map=str(mapping))
    assert sorted(set(loaded.dataset.targets)) == [2, 7]
    check_classes(loaded.label_space, str(data), "digits-deit", 10)  # fits: no error
    with pytest.raises(UserError, match="names class 7 but model m has 5 classes"):
        check_classes(loaded.label_space, str(data), "m", 5)
    (tmp_path / "json.txt").write_text(json.dumps({"n15075141": 1, "cats": 0}))
    assert folder_label_space(["cats", "n15075141"], str(tmp_path / "json.txt")).mapping == {"cats": 0, "n15075141": 1}
    mapping.write_text("n15075141 7\n")
    with pytest.raises(UserError, match="does not name folder 'cats'"):
        folder_label_space(["cats", "n15075141"], str(mapping))
    mapping.write_text("cats seven\n")
    with pytest.raises(UserError, match="not a whole number"):
        folder_label_space(["cats"], str(mapping))


def test_subset_fills_up_past_unreadable_files_and_says_so(tmp_path):
    data = _folder(tmp_path / "data", ["a", "b"], per_class=6, broken=["a/0x.png", "b/0x.png"])
    mapping = tmp_path / "map.txt"
    mapping.write_text("a 0\nb 1\n")
    proc = run_cli("run", "-m", "digits-deit", "--data", str(data), "--class-map", str(mapping), "-n", "8",
                   "--attacks", "fgsm", "--quiet", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["n"] == 8).all()  # 8 readable images exist: 8 are evaluated
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert sorted(p.rsplit("/", 1)[-1] for p in run["skipped_files"]) == ["0x.png", "0x.png"]
    md = (tmp_path / "o" / "results.md").read_text()
    assert "Skipped 2 unreadable image file(s)" in md and "filled from other readable images" in md
    assert "Skipped 2 unreadable image file(s)" in proc.stdout


def test_random_weights_run_anywhere_and_every_table_says_so(tmp_path, image_folder):
    store = tmp_path / "s.sqlite"
    proc = run_cli("run", "-m", "deit-tiny-elliptical", "--weights", "random", "--data", str(image_folder), "-n", "3",
                   "--attacks", "fgsm", "--eps", "1/255", "--quiet", "--store", str(store), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "RANDOM WEIGHTS" in proc.stdout
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["checkpoint"] == "random weights (untrained)").all()
    assert "RANDOM WEIGHTS (untrained, a smoke test): deit-tiny-elliptical" in (tmp_path / "o" / "results.md").read_text()
    table = run_cli("table", "--store", str(store), "-f", "md")
    assert "RANDOM WEIGHTS" in table.stdout
    model = robeval.load_model("deit-tiny", pretrained=False)
    assert model.meta.weights == "random"


def test_user_errors_leave_no_failed_run_behind(tmp_path, image_folder):
    store = tmp_path / "s.sqlite"
    bad = tmp_path / "notes.pth"
    bad.write_text("hello this is text\n")
    for args in (["-m", "digits-deit", "--checkpoint", str(bad)], ["-m", "deit-tiny-elliptical", "--data", str(image_folder)],
                 ["-m", "digits-deit", "--data", str(tmp_path / "nowhere")]):
        proc = run_cli("run", *args, "-n", "3", "--attacks", "fgsm", "--quiet", "--store", str(store))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not store.exists() or Store(store).runs().empty


def test_table_and_plot_say_which_run_they_read(tmp_path):
    store = tmp_path / "s.sqlite"
    first = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--quiet", "--store", str(store),
                    "--out", str(tmp_path / "o"))
    assert first.returncode == 0, first.stderr
    run_id = json.loads((tmp_path / "o" / "run.json").read_text())["run_id"]
    for command in (["table"], ["plot", "--out", str(tmp_path / "plots")], ["check"]):
        proc = run_cli(*command, "--store", str(store))
        assert proc.returncode == 0, proc.stderr
        assert f"Using the newest finished run {run_id}" in proc.stderr
    named = run_cli("table", run_id, "--store", str(store))
    assert "Using the newest" not in named.stderr


def test_terminal_caption_keeps_its_phrases_whole(tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--quiet", "--store",
                   str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    lines = proc.stdout.splitlines()
    assert any("Linf eps = 8/255 (8/255, 0.0313725)" in line for line in lines)
    assert any(line.strip() == "data: digits, n = 10" for line in lines)


def test_help_and_listings_start_without_torch():
    code = ("import sys; from robeval.cli import app; "
            "print(sorted(m for m in ('torch', 'timm', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    run_cli("models")  # fills the listing cache
    code = ("import sys; from robeval.cli import main\n"
            "try:\n    main(['models'])\nexcept SystemExit:\n    pass\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("NO-TORCH") and "deit-small-elliptical" in out


def test_thread_governor_gives_cores_to_other_processes(monkeypatch):
    import torch

    from robeval import threads

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
    assert threads.threads_from_argv(["run", "--threads", "2"]) == 2
    assert threads.threads_from_argv(["run", "--threads=1"]) == 1 and threads.threads_from_argv(["run"]) is None


def test_threads_option_reaches_the_run(tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--threads", "1", "--quiet",
                   "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o" / "run.json").read_text())["threads"] == 1
    bad = run_cli("run", "-m", "digits-deit", "--threads", "0", "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert bad.returncode == 2 and "--threads must be at least 1" in bad.stderr


def test_profile_is_fair_to_the_model_listed_second():
    from robeval.evaluation.profiling import profile

    df = profile(["digits-deit", "digits-deit"], batch_size=16, repeats=5)
    # the same model twice: interleaved repeats and medians give (nearly) no change
    assert abs(df["forward_img_s_change_%"].iloc[1]) < 20 and abs(df["forward_backward_img_s_change_%"].iloc[1]) < 20
    # the memory of a pass, not of the process (torch alone holds several hundred MB)
    assert 0 <= df["pass_memory_MB"].iloc[0] < 200
