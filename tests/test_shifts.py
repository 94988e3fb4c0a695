"""Distribution shift: on-the-fly corruptions (digits and RGB), an ImageNet-C tree, the 200-class
sets of ImageNet-A/-R, mCE by hand, identical records after an interrupted and resumed shift run,
tables and one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.data.digits import digits_split
from robeval.data.labels import imagenet_wnids
from robeval.report.paper import render
from robeval.shifts.catalog import ALEXNET_ERRORS, COMMON, EXTRA, class_set
from robeval.shifts.condition_images import corrupt_tensor
from robeval.shifts.metrics import corruption_metrics

from .conftest import run_cli

RECORD_KEY = ["model", "eps", "attack", "example"]


@pytest.mark.parametrize("corruption", COMMON + EXTRA)
def test_every_corruption_on_digits_and_rgb_is_seeded_and_keeps_the_shape(corruption):
    digit = torch.from_numpy(digits_split("test")[0][5])
    rgb = torch.rand(3, 40, 50, generator=torch.Generator().manual_seed(0))
    for image in (digit, rgb):
        out = corrupt_tensor(image, corruption, 3, seed=11)
        assert out.shape == image.shape and out.dtype == torch.float32 and out.min() >= 0 and out.max() <= 1
        assert torch.equal(out, corrupt_tensor(image, corruption, 3, seed=11))  # same seed, same image
    assert not torch.equal(corrupt_tensor(digit, corruption, 5, seed=11), digit) or corruption == "pixelate"


def test_mce_against_a_hand_computed_example():
    # model error 0.5 + 0.02 s on every corruption; clean top-1 80 %
    rows = pd.DataFrame([{"attack": f"{c}@{s}", "corruption": c, "severity": s, "top1": 100 * (1 - (0.5 + 0.02 * s))}
                         for c in COMMON for s in range(1, 6)])
    m = corruption_metrics(rows, clean_top1=80.0, imagenet=True)
    mean_error = 0.56  # 0.5 + 0.02 * mean(1..5)
    assert m.mean_error == pytest.approx(56.0)
    assert m.mce == pytest.approx(100 * np.mean([mean_error / ALEXNET_ERRORS[c] for c in COMMON]), abs=0.01)
    assert m.relative_mce == pytest.approx(100 * np.mean([(mean_error - 0.2) / (ALEXNET_ERRORS[c] - 0.435) for c in COMMON]), abs=0.01)
    fewer = corruption_metrics(rows[rows["attack"].str.endswith("@1")], clean_top1=80.0, imagenet=True)
    assert fewer.mce is None and "severities 1-5" in fewer.note  # AlexNet's constants average all five
    digits = corruption_metrics(rows, clean_top1=80.0, imagenet=False)
    assert digits.mce is None and "unnormalised" in digits.note and digits.mean_error == pytest.approx(56.0)


class StopAfter:
    """A reporter that interrupts the run after ``n`` finished units (as Ctrl-C would)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def start(self, *args) -> None:
        pass

    def advance(self, *args, **kwargs) -> None:
        self.n -= 1
        if self.n == 0:
            raise KeyboardInterrupt

    def note(self, text) -> None:
        pass

    def stop(self) -> None:
        pass


def test_interrupted_and_resumed_shift_run_gives_identical_records(tmp_path):
    options = dict(models="digits-deit", shift="corruptions", corruptions="gaussian_noise,glass_blur,fog",
                   severities="2,5", attacks="fgsm", n_examples=30, batch_size=10)
    reference = evaluate_full(store=str(tmp_path / "ref.sqlite"), **options)
    store = str(tmp_path / "s.sqlite")
    with pytest.raises(KeyboardInterrupt) as stopped:
        evaluate_full(store=store, reporter=StopAfter(8), **options)
    resumed = evaluate_full(store=store, resume=stopped.value.run_id, **options)
    a, b = (r.records.drop(columns="run_id").sort_values(RECORD_KEY).reset_index(drop=True) for r in (reference, resumed))
    pd.testing.assert_frame_equal(a, b)
    assert len(a[a["attack"] == "fog@5"]) == 30 and set(a["attack"]) == {"clean", "fgsm", "gaussian_noise@2",
                                                                          "gaussian_noise@5", "glass_blur@2", "glass_blur@5",
                                                                          "fog@2", "fog@5"}
    other_batches = evaluate_full(**{**options, "batch_size": 7}).records.sort_values(RECORD_KEY).reset_index(drop=True)
    pd.testing.assert_series_equal(other_batches["adv_top1"], a["adv_top1"])  # per-example seeds
    assert (a[a["attack"] == "gaussian_noise@5"]["linf"] > a[a["attack"] == "gaussian_noise@2"]["linf"].mean()).mean() > 0.5


def write_images(folder, classes, per_class=2, size=224, seed=0):
    rng = np.random.default_rng(seed)
    for wnid in classes:
        (folder / wnid).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(folder / wnid / f"ILSVRC_{i}.JPEG")


def test_imagenet_c_tree_is_read_in_its_published_layout(tmp_path):
    classes = ["n01440764", "n01443537"]
    for corruption in ("gaussian_noise", "fog"):
        for severity in (1, 2):
            write_images(tmp_path / "c" / corruption / str(severity), classes, seed=severity)
    res = evaluate_full(models="deit-tiny", weights="random", data=str(tmp_path / "c"), shift="imagenet-c",
                        corruptions="gaussian_noise,fog", severities="1,2", batch_size=4)
    assert set(res.summary["attack"]) == {"gaussian_noise@1", "gaussian_noise@2", "fog@1", "fog@2"}  # no clean images
    assert (res.summary["n"] == 4).all()
    table = render(res.summary, "md")
    assert "Mean corruption error" in table and "15 corruptions at severities 1-5" in table
    with pytest.raises(UserError, match="ImageNet-C folder missing: .*glass_blur/1"):
        evaluate_full(models="deit-tiny", weights="random", data=str(tmp_path / "c"), shift="imagenet-c",
                      corruptions="glass_blur", severities="1")
    with pytest.raises(UserError, match="holds no clean images"):
        evaluate_full(models="deit-tiny", weights="random", data=str(tmp_path / "c"), shift="imagenet-c",
                      corruptions="fog", severities="1", attacks="fgsm")


@pytest.mark.parametrize("shift", ["imagenet-a", "imagenet-r"])
def test_200_class_sets_restrict_the_logits_and_refuse_other_folders(shift, tmp_path):
    wanted = list(class_set(shift))
    assert len(wanted) == 200 == len(set(wanted)) and set(wanted) <= set(imagenet_wnids())
    write_images(tmp_path / "ok", wanted[:2])
    res = evaluate_full(models="deit-tiny", weights="random", data=str(tmp_path / "ok"), shift=shift, batch_size=4)
    position = {w: i for i, w in enumerate(imagenet_wnids())}
    allowed = {position[w] for w in wanted}
    assert set(res.records["adv_pred"]) <= allowed and set(res.summary["shift"]) == {shift}
    assert f"{'ImageNet-A' if shift == 'imagenet-a' else 'ImageNet-R'} Top-1" in render(res.summary, "md")
    other = next(w for w in imagenet_wnids() if w not in wanted)
    write_images(tmp_path / "bad", [wanted[0], other])
    with pytest.raises(UserError, match=f"folder '{other}' is not one of {shift}'s 200 classes"):
        evaluate_full(models="deit-tiny", weights="random", data=str(tmp_path / "bad"), shift=shift)


@pytest.mark.parametrize("args, message", [
    (["--shift", "corruptions", "--severities", "0,6"], "severity 0 is outside 1-5"),
    (["--shift", "corruptions", "--corruptions", "fogg"], "unknown corruption 'fogg' (did you mean fog?)"),
    (["--shift", "imagenet-x"], "unknown shift 'imagenet-x'"),
    (["--corruptions", "fog"], "--corruptions / --severities choose conditions of --shift"),
    (["--shift", "imagenet-a"], "reads a copy of that data set: pass --data PATH"),
])
def test_bad_shift_options_give_one_line(args, message, tmp_path):
    proc = run_cli("run", *args, "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_digits_demo_cli_table_compare_and_plot(tmp_path):
    store = str(tmp_path / "s.sqlite")
    proc = run_cli("run", "--shift", "corruptions", "--corruptions", "noise", "--severities", "1,5", "-n", "30",
                   "--quiet", "--store", store, "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "Mean corruption error" in proc.stdout and "gaussian noise" in proc.stdout
    table = run_cli("table", "--store", store)
    assert table.returncode == 0 and "| digits-deit |" in table.stdout and "Mean corruption error" in table.stdout
    compared = run_cli("compare", "digits-deit", "digits-deit-elliptical", "--store", store)
    assert compared.returncode == 0 and "gaussian_noise@5" in compared.stdout
    plot = run_cli("plot", "--store", store, "--out", str(tmp_path / "p"))
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "p" / "accuracy_vs_severity.png").exists()
    from robeval import open_run
    from robeval.report.plots import accuracy_vs_severity

    summary = open_run(store=store).summary
    panels = [ax for ax in accuracy_vs_severity(summary[summary["severity"] <= 1]).axes if ax.get_xlabel()]
    assert panels and {ax.get_xlim() for ax in panels} == {(-0.25, 5.25)}  # the whole scale, though only 1 is drawn


def test_a_corruption_failing_on_one_image_skips_counts_and_names_it(monkeypatch, tmp_path):
    import robeval.shifts.condition_images as datasets

    real = datasets.corrupt_tensor

    def flaky(image, corruption, severity, seed):
        if corruption == "fog" and float(image.sum()) == first_sum:
            raise ValueError("boom")
        return real(image, corruption, severity, seed)

    images, _ = digits_split("test")
    first_sum = float(torch.from_numpy(images[0]).sum())  # the first test digit (example 0 of the subset)
    monkeypatch.setattr(datasets, "corrupt_tensor", flaky)
    res = evaluate_full(models="digits-deit", shift="corruptions", corruptions="fog,contrast", severities="1",
                        n_examples=20, out=tmp_path / "o")
    n = res.summary.set_index("attack")["n"]
    assert n["fog@1"] < n["contrast@1"] == 20  # the failing image is left out of fog only
    assert any("example 0 (fog@1: corruption failed)" in name for name in res.info["skipped_files"])
    assert "fog@1: corruption failed" in (tmp_path / "o" / "results.md").read_text()


def test_runs_of_different_shifts_combine_into_one_table(tmp_path):
    from robeval.results.runs import combine, resolve_runs
    from robeval.store import Store

    write_images(tmp_path / "a", list(class_set("imagenet-a"))[:2])
    write_images(tmp_path / "val", list(class_set("imagenet-a"))[:2], seed=3)
    store = str(tmp_path / "s.sqlite")
    common = dict(models="deit-tiny", weights="random", batch_size=4, store=store)
    a = evaluate_full(data=str(tmp_path / "a"), shift="imagenet-a", **common).run_id
    c = evaluate_full(data=str(tmp_path / "val"), shift="corruptions", corruptions="fog", severities="1", **common).run_id
    summary = combine(resolve_runs(Store(store), [c, a]))
    conditions = summary[summary["corruption"] != ""]  # the conditions as values, never read back from a name
    assert set(zip(conditions["attack"], conditions["corruption"], conditions["severity"])) == {("fog@1", "fog", 1)}
    assert set(summary["source"]) == {str(tmp_path / "a"), str(tmp_path / "val")} and set(summary["split"]) == {""}
    table = render(summary, "md")
    shift_block = table[table.index("Distribution shift"):].split("Table:")[0]
    header = next(line for line in shift_block.splitlines() if line.startswith("| Model"))
    assert "Clean Top-1" in header and "ImageNet-A Top-1" in header and "Mean corruption error" in header
    assert shift_block.count("| deit-tiny |") == 1  # one row per model across the runs


def test_a_corruption_run_combines_with_an_attack_run_at_the_same_or_other_eps(tmp_path):
    from robeval.report.robustbench import model_info_entries
    from robeval.results.runs import combine, resolve_runs
    from robeval.store import Store

    store = str(tmp_path / "s.sqlite")
    common = dict(models="digits-deit", n_examples=8, store=store, progress=False, threads=1)
    fog = dict(shift="corruptions", corruptions="fog", severities="1")
    main = evaluate_full(eps="4/255,8/255", attacks="fgsm,pgd", settings={"pgd": {"steps": 3}}, **common).run_id
    same = evaluate_full(eps="8/255", attacks="fgsm", **fog, **common).run_id
    other = evaluate_full(eps="16/255", **fog, **common).run_id

    def combined(*runs):
        return combine(resolve_runs(Store(store), list(runs)))

    at_8 = combined(main, same).query("eps == '8/255'").set_index(["model", "attack"])["top1"]
    assert (f"digits-deit ({same})", "any") in at_8  # evaluated twice at 8/255: told apart, never mixed
    assert at_8["digits-deit", "any"] == min(at_8["digits-deit", "fgsm"], at_8["digits-deit", "pgd"])
    table = render(combined(main, other), "md")  # the conditions are at the second run's eps only
    shift_block = table[table.index("Distribution shift") :].split("Table:")[0]
    assert "Mean corruption error" in shift_block and "| digits-deit |" in shift_block
    assert "fog" in table[table.index("per corruption") :]
    (entry,) = model_info_entries(combined(other, main))
    assert entry["corruptions_acc"] and entry["eps"] is None
