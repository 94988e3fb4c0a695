"""The paper versions of the tables whose columns are runs of their own, and of the efficiency tables,
without their data: ``evaluate`` is replaced by one that records what each column's run was asked and
answers with the summary such a run gives (the digits versions run for real in test_reproduce.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from robeval.core.defaults import CLEAN
from robeval.core.errors import UserError
from robeval.reproduce import TABLES
from robeval.reproduce.render import efficiency_grid
from robeval.reproduce.run import reproduce
from robeval.results.summary import add_condition_columns
from robeval.shifts.catalog import ALEXNET_ERRORS, IMAGENET_C, condition_name, parse_severities

from .conftest import run_cli

R_TOP1, A_TOP1, EXTRA_TOP1 = 41.5, 12.25, 60.0


class Recorder:
    """An ``evaluate`` that records its calls and gives each the summary its run would store: the clean
    top-1 of ImageNet-R/-A, every condition of ImageNet-C (at AlexNet's own error for the 15, so mCE is
    100, and at EXTRA_TOP1 for the extras), the clean top-1 of a data set."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        run_id = f"run{len(self.calls)}"
        rows = [(m, a, top1) for m in kwargs["models"] for a, top1 in self.cells(kwargs)]
        summary = pd.DataFrame(rows, columns=["model", "attack", "top1"]).assign(
            eps="8/255", eps_value=8 / 255, norm="Linf", n=10, protocol=kwargs["protocol"], data=kwargs["data"],
            run_id=run_id, shift=kwargs.get("shift") or "", source=kwargs["data"],
        )
        add_condition_columns(summary, {key: kwargs.get(key) for key in ("shift", "corruptions", "severities")})
        return type("Result", (), {"summary": summary, "run_id": run_id})()

    @staticmethod
    def cells(kwargs) -> list[tuple[str, float]]:
        shift = kwargs.get("shift")
        if shift != "imagenet-c":
            return [(CLEAN, {"imagenet-r": R_TOP1, "imagenet-a": A_TOP1}.get(shift, 90.0))]
        return [
            (condition_name(c, s), 100.0 * (1 - ALEXNET_ERRORS[c]) if c in ALEXNET_ERRORS else EXTRA_TOP1)
            for c in IMAGENET_C.parse(kwargs["corruptions"])
            for s in parse_severities(kwargs.get("severities"))
        ]


SHIFT_DATA = {"imagenet-r": "/d/imagenet-r", "imagenet-a": "/d/imagenet-a", "imagenet-c": "/d/imagenet-c"}


def test_shift_table_runs_each_column_on_its_own_data(tmp_path):
    recorder = Recorder()
    rep = reproduce("elliptical-imagenet-shift", recorder, data_for=SHIFT_DATA, out=str(tmp_path / "{run_id}"),
                    checkpoints={"DeiT-Elliptical": "e.pth"}, n_examples=10, store="s.sqlite")
    asked = [(c["shift"], c.get("corruptions"), c["data"], c["out"]) for c in recorder.calls]
    assert asked == [
        ("imagenet-r", None, "/d/imagenet-r", str(tmp_path / "{run_id}" / "imagenet-r")),
        ("imagenet-a", None, "/d/imagenet-a", str(tmp_path / "run1" / "imagenet-a")),
        ("imagenet-c", "common", "/d/imagenet-c", str(tmp_path / "run1" / "imagenet-c")),
        ("imagenet-c", "extra", "/d/imagenet-c", str(tmp_path / "run1" / "imagenet-c-extra")),
    ]
    for call in recorder.calls:  # ordinary runs: the table's models, no attacks, the checkpoint by row label
        assert call["models"] == ["deit-tiny", "deit-tiny-elliptical"] and call["attacks"] == "none"
        assert call["checkpoints"] == {"deit-tiny-elliptical": ["e.pth"]} and call["n_examples"] == 10
    assert list(rep.grid.columns) == [c.title for c in TABLES.require("elliptical-imagenet-shift").columns]
    assert rep.grid.loc["DeiT"].tolist() == [f"{R_TOP1:.2f}", f"{A_TOP1:.2f}", "100.00", f"{100 - EXTRA_TOP1:.2f}"]
    assert rep.files["md"] == tmp_path / "run1" / "table.md"
    assert "not among the benchmark's published normalisers" in rep.text and "digits" not in rep.text


def test_shift_table_mce_needs_every_severity(tmp_path):
    rep = reproduce("elliptical-imagenet-shift", Recorder(), data_for=SHIFT_DATA, severities="1")
    assert rep.grid["ImageNet-C mCE (%)"].tolist() == ["n/a", "n/a"]
    assert "ImageNet-C mCE (%): mCE needs the 15 corruptions at severities 1-5" in rep.text
    assert "severities 1 only (the table's: 1-5)" in rep.text
    rep = reproduce("elliptical-imagenet-shift", Recorder(), data_for=SHIFT_DATA)
    assert "n/a" not in rep.grid.to_string()


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(data_for={"imagenet-r": "/r"}), "missing --data-for imagenet-a=PATH, --data-for imagenet-c=PATH"),
        (dict(data="/d/imagenet"), "reads each column's data with --data-for KEY=PATH"),
        (dict(data_for={**SHIFT_DATA, "imagenet-x": "/x"}), "--data-for imagenet-x: .* read imagenet-r"),
        (dict(data_for=SHIFT_DATA, shift="corruptions"), "sets --shift for each column itself"),
        (dict(data_for=SHIFT_DATA, checkpoints={"ViT": "x.pth"}), "--checkpoint ViT: not a row or model"),
    ],
)
def test_shift_table_refusals(options, message):
    recorder = Recorder()
    with pytest.raises(UserError, match=message):
        reproduce("elliptical-imagenet-shift", recorder, **options)
    assert recorder.calls == []  # refused before any run


def test_table_1_reads_each_data_set_with_its_models():
    recorder = Recorder()
    rep = reproduce("hosseini-table-1", recorder, data_for={"imagenet": "/d/val", "mnist": "/d/mnist-files"},
                    checkpoints={"cifar100-vit-super": "s.pth"}, data_dir="./data")
    asked = {c["data"]: (c["models"], c.get("data_dir"), c["checkpoints"]) for c in recorder.calls}
    assert asked == {
        "mnist": (["mnist-vit", "mnist-vit-optimised", "mnist-vit-efficient", "mnist-vit-super"], "/d/mnist-files", {}),
        "cifar100": ([f"cifar100-vit{k}" for k in ("", "-optimised", "-efficient", "-super")], "./data",
                     {"cifar100-vit-super": ["s.pth"]}),
        "/d/val": (["deit-tiny", "deit-tiny-optimised", "deit-tiny-efficient", "deit-tiny-super"], "./data", {}),
    }
    assert list(rep.grid.index) == ["Standard", "Optimised", "Efficient", "Super"]
    assert list(rep.grid.columns) == ["MNIST Top-1 (%)", "CIFAR-100 Top-1 (%)", "ImageNet Top-1 (%)"]
    with pytest.raises(UserError, match="--checkpoint Standard: that row is several models"):
        reproduce("hosseini-table-1", recorder, data_for={"imagenet": "/d/val"}, checkpoints={"Standard": "x.pth"})
    with pytest.raises(UserError, match="missing --data-for imagenet=PATH"):
        reproduce("hosseini-table-1", recorder, data_for={"mnist": "/m"})


def test_side_by_side_efficiency_changes_against_the_same_size():
    table = TABLES.require("elliptical-efficiency")
    models = table.models(digits=False)
    speed = {m: 100.0 / (i + 1) for i, m in enumerate(models)}  # it/s = images/s / batch
    profile = pd.DataFrame({
        "model": models, "forward_backward_img_s": [8 * speed[m] for m in models], "batch_size": 8,
        "pass_memory_MB": 100.0, "gflops_per_image": [1.25, 1.25, 4.6, 4.6, 17.5, 17.5], "params_M": 5.0,
    })
    grid = efficiency_grid(table, profile, digits=False)
    assert list(grid.index) == [r.label for r in table.rows]
    assert grid.loc["DeiT-small", "Speed (it/s)"] == "33.33"
    assert grid.loc["DeiT-Elliptical-small", "Speed (it/s)"] == "25.00 (-25.0%)"  # against DeiT-small, not DeiT-tiny
    assert grid.loc["DeiT-Elliptical-base", "FLOPs/sample (G)"] == "17.500 (+0.0%)"


def test_reproduce_cli_data_for_errors():
    bad = run_cli("reproduce", "elliptical-imagenet-shift", "--data-for", "imagenet-r")
    assert bad.returncode == 2 and "--data-for 'imagenet-r': write KEY=PATH" in bad.stderr
    missing = run_cli("reproduce", "elliptical-imagenet-shift", "--data-for", "imagenet-r=/r", "--data-for", "imagenet-a=/a")
    assert missing.returncode == 2 and "missing --data-for imagenet-c=PATH" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
