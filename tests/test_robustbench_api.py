"""RobustBench's API on robeval's engine: ``robeval.benchmark`` against ``robeval run`` on
the same digits examples, its arguments as run options, module instances as models, the model-info
JSON of ``robeval table -f robustbench``, ``robeval compare`` against such a file, and the
``robustbench:<dataset>/<threat model>/<entry>`` names (resolution only: no download)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import robeval
from robeval.core.errors import UserError
from tests.conftest import FAST_SETTINGS, one_line_error, require_tool

AA = ["apgd-ce", "apgd-t", "fab-t", "square"]
FAST_AA = {a: FAST_SETTINGS[a] for a in AA}
N = 8


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """benchmark() on a digits module and ``robeval run`` on digits-deit, the same 8 first examples,
    each in a store of its own; and the module, as benchmark() left it."""
    from robeval import benchmark

    root = tmp_path_factory.mktemp("rb")
    module = robeval.load_model("digits-deit").train()
    module.requires_grad_(True)
    with pytest.warns(UserWarning, match="training mode"):
        fractions = benchmark(
            module, n_examples=N, dataset="digits", device="cpu", settings=FAST_AA, store=root / "bench.sqlite"
        )
    reference = robeval.evaluate_full(
        models=["digits-deit"], data="digits", selection="first", n_examples=N, attacks=",".join(AA),
        cascade=True, settings=FAST_AA, batch_size=32, device="cpu", eps="8/255", store=root / "run.sqlite",
    )  # fmt: skip
    return dict(root=root, module=module, fractions=fractions, reference=reference)


def _stored(path):
    from robeval.results.runs import load_run
    from robeval.store import Store

    store = Store(path)
    return load_run(store, store.runs()["id"].iloc[-1])


def test_benchmark_gives_robeval_runs_numbers_on_the_same_examples(runs):
    summary = runs["reference"].summary.set_index("attack")
    clean, robust = runs["fractions"]
    assert clean == pytest.approx(summary.loc["clean", "top1"] / 100)
    assert robust == pytest.approx(summary.loc["any", "top1"] / 100)
    bench = _stored(runs["root"] / "bench.sqlite")
    [name] = bench.config["models"]
    assert name.startswith("module:NormalizedModel@") and bench.config["cascade"] and bench.config["attacks"] == AA
    keys = ["attack", "example", "adv_top1", "adv_top5", "adv_pred"]
    ours = bench.records[keys].sort_values(["attack", "example"], ignore_index=True)
    theirs = runs["reference"].records[keys].sort_values(["attack", "example"], ignore_index=True)
    pd.testing.assert_frame_equal(ours, theirs)  # the same examples, the same outcome of each


def test_benchmark_leaves_the_callers_module_as_it_was(runs):
    module = runs["module"]
    assert module.training and all(p.requires_grad for p in module.parameters())


def test_module_names_carry_their_state_dicts_hash():
    from robeval.models.given import GivenItem, split_models

    a, b = (torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3)) for _ in range(2))
    b.load_state_dict(a.state_dict())
    config = {"input_size": (1, 2, 2), "num_classes": 3}
    names, given = split_models([GivenItem((a, config), "mine")])
    assert split_models([GivenItem((b, config), "mine")])[0] == names and names[0].startswith("module:mine@")
    with pytest.raises(UserError, match="are one model, module:mine@"):  # the same module twice: one column, refused
        split_models([GivenItem((a, config), "mine"), GivenItem((b, config), "mine")])
    with torch.no_grad():
        b[1].weight[0, 0] += 1
    [changed], _ = split_models([GivenItem((b, config), "mine")])
    assert changed != names[0]
    copy = given[names[0]][0].module  # the copy taken when given (its one member): b's change is not in it
    assert copy is not a and copy is not b and torch.equal(copy[1].weight, a[1].weight)
    assert copy[1].weight[0, 0] != b[1].weight[0, 0]
    with pytest.raises(UserError, match="another process"):
        robeval.evaluate(models=[names[0]], n_examples=4, attacks="fgsm")


def test_benchmark_arguments_are_robustbenchs_conventions():
    from robeval.evaluation.config import make_config
    from robeval.evaluation.plan import make_plan
    from robeval.evaluation.protocols import autoattack_options
    from robeval.robustbench_ext.benchmark_run import BenchmarkArgs, run_options

    class Enum:  # RobustBench's enums: their value is the name
        value = "cifar10"

    assert BenchmarkArgs(dataset=Enum()).eps_text() == "8/255"
    assert BenchmarkArgs(threat_model="L2").eps_text() == "0.5"
    assert BenchmarkArgs(dataset="imagenet").eps_text() == "4/255"
    assert BenchmarkArgs(eps=8 / 255).eps_text() == "8/255" and BenchmarkArgs(eps=0.3).eps_text() == "0.3"
    assert BenchmarkArgs(eps="4/255").eps_text() == "4/255"
    standard = autoattack_options("standard")
    cifar = run_options(BenchmarkArgs(n_examples=100, data_dir="D"), "m", {}, standard)
    assert (cifar["data"], cifar["data_dir"], cifar["selection"], cifar["split"]) == ("cifar10", "D", "first", "test")
    assert cifar["cascade"] and cifar["attacks"] == ",".join(AA) and cifar["device"] == "auto"
    imagenet = run_options(BenchmarkArgs(dataset="imagenet", n_examples=5000, data_dir="D"), "m", {}, standard)
    assert imagenet["data"].replace("\\", "/") == "D/val" and imagenet["subset"] == "robustbench-5000"
    plus = run_options(BenchmarkArgs(version="plus"), "m", {}, autoattack_options("plus"))
    assert plus["protocol"] == "aa-plus" and plus["attacks"] is None
    rand = run_options(BenchmarkArgs(version="rand"), "m", {"settings": {"apgd-ce": {"n_iter": 5}}}, autoattack_options("rand"))
    assert rand["protocol"] == "aa-rand" and rand["attacks"] is None  # the protocol's own attacks
    plan = make_plan(make_config(**{k: v for k, v in rand.items() if k not in ("models", "data_dir")}, models=["digits-deit"]))
    assert [a for a in plan.config.attacks] == ["apgd-ce", "apgd-dlr"]
    assert plan.config.settings["apgd-ce"]["eot_iter"] == 20 and plan.config.settings["apgd-ce"]["n_iter"] == 5  # the version's, then yours
    assert plan.config.settings["apgd-dlr"]["eot_iter"] == 20
    with pytest.raises(TypeError, match="'attacks'"):
        run_options(BenchmarkArgs(), "m", {"attacks": "pgd"}, standard)


@pytest.mark.parametrize(
    "args, words",
    [
        (dict(threat_model="corruptions"), ["--shift corruptions"]),
        (dict(threat_model="Linf2"), ["unknown threat model"]),
        (dict(dataset="svhn"), ["svhn"]),
        (dict(dataset="cifar100", threat_model="L2"), ["no default eps", "cifar100 L2"]),
        (dict(dataset="imagenet", preprocessing="Crop288"), ["Crop288", "Res256Crop224"]),
        (dict(dataset="cifar10", preprocessing="Res256Crop224"), ["imagenet only"]),
        (dict(version="fast"), ["AutoAttack version"]),
        (dict(to_disk=True), ["model_name"]),
        (dict(to_disk=True, model_name="x", settings={"apgd-ce": {"n_iter": 5}}), ["to_disk", "settings for apgd-ce"]),
        (dict(to_disk=True, model_name="x", version="plus"), ["to_disk", "version 'plus'"]),
    ],
)
def test_benchmark_refuses_what_it_cannot_run_in_one_line(args, words):
    from robeval import benchmark

    with pytest.raises(ValueError) as info:  # as RobustBench's own refusals: a UserError is a ValueError
        benchmark(torch.nn.Linear(2, 2).eval(), **args)
    assert isinstance(info.value, UserError)
    assert all(w in str(info.value) for w in words) and "\n" not in str(info.value)


def test_aa_state_path_resumes_the_unfinished_run_with_the_same_configuration(runs, monkeypatch):
    import robeval.api
    from robeval.store import Store

    store = runs["root"] / "bench.sqlite"
    run_id = Store(store).runs()["id"].iloc[-1]
    Store(store).update_run(run_id, status="interrupted")
    seen = {}
    monkeypatch.setattr(robeval.api, "evaluate", lambda **kw: seen.update(kw) or (_ for _ in ()).throw(KeyError))
    with pytest.raises(KeyError):
        robeval.api.benchmark(runs["module"], n_examples=N, dataset="digits", device="cpu", settings=FAST_AA,
                              aa_state_path=store)  # fmt: skip
    assert seen["store"] == store and seen["resume"] == run_id
    with pytest.raises(KeyError):  # other settings: another configuration, a new run
        robeval.api.benchmark(runs["module"], n_examples=N, dataset="digits", device="cpu", aa_state_path=store)
    assert seen["resume"] is None
    Store(store).update_run(run_id, status="finished")


def test_table_robustbench_refuses_a_run_without_autoattacks_standard_settings(runs, cli):
    store = runs["root"] / "bench.sqlite"
    result = cli("table", _stored(store).run_id, "--store", str(store), "-f", "robustbench")
    assert one_line_error(result, "apgd-ce ran with n_iter=10", "standard is n_iter=100")


def test_table_robustbench_refuses_a_run_without_autoattacks_attacks(tmp_path, cli):
    store = tmp_path / "s.sqlite"
    robeval.evaluate(models=["digits-deit"], n_examples=4, attacks="fgsm", store=store, device="cpu")
    result = cli("table", _stored(store).run_id, "--store", str(store), "-f", "robustbench")
    assert one_line_error(result, "lacks apgd-ce, apgd-t, fab-t, square", "--attacks apgd-ce,apgd-t,fab-t,square")


def test_model_info_of_a_standard_run_fills_what_a_run_knows(runs):
    from robeval.attacks import resolve_settings
    from robeval.report.paper import render

    summary = _stored(runs["root"] / "run.sqlite").summary
    standard = [json.dumps(resolve_settings(a), sort_keys=True) if a in AA else s
                for a, s in zip(summary["attack"], summary["settings"])]  # fmt: skip
    info = json.loads(render(summary.assign(settings=standard), "robustbench"))
    from robeval.robustbench_ext.leaderboard import AUTHOR_FIELDS, BOOLEAN_FIELDS, MODEL_INFO_FIELDS

    assert list(info) == list(MODEL_INFO_FIELDS)
    clean, robust = runs["fractions"]
    assert info["clean_acc"] == str(round(clean * 100, 2)) and info["autoattack_acc"] == str(round(robust * 100, 2))
    assert (info["dataset"], info["eps"], info["number_forward_passes"]) == ("digits", "8/255", 1)
    assert all(info[f] == "" for f in AUTHOR_FIELDS if f not in BOOLEAN_FIELDS) and info["additional_data"] is None
    assert info["unreliable"] is False and info["footnote"].startswith("robeval run ")
    two = json.loads(render(pd.concat([summary, summary.assign(model="other")]).assign(
        settings=standard * 2), "robustbench"))  # fmt: skip
    assert [len(two), two[1]["clean_acc"]] == [2, info["clean_acc"]]  # several models: a list


def test_table_robustbench_says_what_to_fill_on_stderr(runs, cli, monkeypatch):
    import robeval.report.robustbench as rb

    monkeypatch.setattr(rb, "standard_problem", lambda rows: None)
    store = runs["root"] / "run.sqlite"
    result = cli("table", _stored(store).run_id, "--store", str(store), "-f", "robustbench")
    assert result.returncode == 0 and json.loads(result.stdout)["clean_acc"]
    assert "fill link, name, authors" in result.stderr


def _compare(cli, runs, path, *first):
    run = _stored(runs["root"] / "run.sqlite")
    return cli("compare", *(first or (f"{run.run_id}:digits-deit", str(path))), "--store", str(runs["root"] / "run.sqlite"))


def test_compare_against_a_model_info_file(runs, cli, tmp_path):
    clean, robust = runs["fractions"]
    path = tmp_path / "Published2024.json"
    path.write_text(json.dumps({"clean_acc": f"{100 * clean:.2f}", "autoattack_acc": "10.00", "eps": "8/255"}))
    result = _compare(cli, runs, path)
    assert result.returncode == 0, result.stderr
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert "No paired test" in result.stdout
    assert rows["clean"].rstrip().endswith("| +0.00 | yes |")
    assert f"{100 * robust:.2f}" in rows["autoattack"] and rows["autoattack"].rstrip().endswith("| no |")


def test_compare_refuses_a_json_that_is_no_model_info_file(runs, cli, tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"model": "x"}]))
    assert one_line_error(_compare(cli, runs, path), "is not a RobustBench model-info file")
    path.write_text("{not json")
    assert one_line_error(_compare(cli, runs, path), "is not JSON")
    path.write_text(json.dumps({"clean_acc": "90.00", "autoattack_acc": "50.00", "eps": "4/255"}))
    assert one_line_error(_compare(cli, runs, path), "is for eps 4/255")


ROBUSTBENCH_RELEASE = "1.1.1"  # what make test installs (docs/robustbench.md)


def _installed_release() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("robustbench")
    except PackageNotFoundError:  # at most the old copy torchattacks' wheel puts into site-packages
        return None


def test_compare_refuses_a_model_info_file_of_another_data_set_or_threat_model(runs, cli, tmp_path):
    entry = {"clean_acc": "90.0", "autoattack_acc": "50.0", "eps": "8/255"}
    other = tmp_path / "Other.json"
    other.write_text(json.dumps({**entry, "dataset": "cifar10"}))
    assert one_line_error(_compare(cli, runs, other), "is for data set cifar10", "evaluated digits")
    for threat, fields, words in (("L2", entry, ["threat model L2", "attacked in Linf"]),
                                  ("corruptions", {"clean_acc": "90.0", "corruptions_acc": "80.0"},
                                   ["corruptions entry", "ran no shift"])):  # fmt: skip
        path = tmp_path / "model_info" / "digits" / threat / "Mine.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(fields))
        assert one_line_error(_compare(cli, runs, path), *words)
    same = tmp_path / "model_info" / "digits" / "Linf" / "Mine.json"
    same.parent.mkdir(parents=True)
    same.write_text(json.dumps({**entry, "dataset": "digits"}))
    assert _compare(cli, runs, same).returncode == 0


def _zoo():
    """RobustBench's release, installed (make test does; CI=true fails without it, elsewhere a skip)."""
    found = _installed_release() == ROBUSTBENCH_RELEASE
    require_tool(found, f"robustbench {ROBUSTBENCH_RELEASE}", f"pip install --no-deps robustbench=={ROBUSTBENCH_RELEASE}")


@pytest.fixture()
def robustbench_eval(monkeypatch):
    """RobustBench's own ``robustbench.eval``.  It imports ``autoattack``, the name AutoAttack's git
    repository installs under; the package index has that code as ``pyautoattack`` (a robeval
    dependency), which the name points to while the module imports."""
    import importlib.util
    import sys

    _zoo()
    if importlib.util.find_spec("autoattack") is None:
        import pyautoattack
        import pyautoattack.state

        monkeypatch.setitem(sys.modules, "autoattack", pyautoattack)
        monkeypatch.setitem(sys.modules, "autoattack.state", pyautoattack.state)
    return importlib.import_module("robustbench.eval")


def test_benchmark_takes_robustbenchs_parameters_in_its_order(robustbench_eval):
    import inspect

    from robeval import benchmark

    theirs = list(inspect.signature(robustbench_eval.benchmark).parameters.values())
    ours = list(inspect.signature(benchmark).parameters.values())
    assert [p.name for p in ours[: len(theirs)]] == [p.name for p in theirs]
    for mine, their in zip(ours, theirs):
        assert mine.kind == their.kind, mine.name
        assert mine.default == getattr(their.default, "value", their.default), mine.name  # its enums: their value
    extras = ours[len(theirs) :]
    assert extras and all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in extras)  # robeval's own, after them


def test_robustbench_cifar_names_resolve_to_the_zoos_entries():
    from robeval.models import build_network, get_spec, model_meta

    _zoo()
    spec = get_spec("robustbench:cifar10/Linf/Carmon2019Unlabeled")
    assert spec.name == "robustbench:cifar10/Linf/Carmon2019Unlabeled"
    assert spec.weights.kind == "robustbench" and spec.weights.source == "cifar10/Linf/Carmon2019Unlabeled"
    with torch.device("meta"):  # the entry's network builds (shapes only); its facts are the registration's
        meta = model_meta(spec, {}, build_network(spec.name))
    assert (meta.input_size, meta.num_classes, meta.config.mean, meta.config.std) == ((3, 32, 32), 10, (0.0,) * 3, (1.0,) * 3)
    assert get_spec("robustbench:cifar100/Linf/Cui2020Learnable_34_10_LBGAT6").weights.source.startswith("cifar100/")
    assert get_spec("robustbench:Salman2020Do_R50").weights.source == "imagenet/Linf/Salman2020Do_R50"
    with pytest.raises(UserError, match="did you mean Carmon2019Unlabeled"), torch.device("meta"):
        build_network("robustbench:cifar10/Linf/Carmon2019Unlabelled")


@pytest.mark.parametrize(
    "name, words",
    [
        ("robustbench:cifar10/Linf", ["robustbench:DATASET/THREAT_MODEL/NAME"]),
        ("robustbench:cifar11/Linf/Carmon2019Unlabeled", ["cifar11"]),
        ("robustbench:cifar10/L3/Carmon2019Unlabeled", ["L3"]),
    ],
)
def test_malformed_robustbench_names_are_one_line(name, words):
    from robeval.models import get_spec

    with pytest.raises(UserError) as info:
        get_spec(name)
    assert all(w in str(info.value) for w in words)


def test_robustbench_weights_absent_and_no_download_host_are_one_line(tmp_path, monkeypatch):
    import robeval.robustbench_ext.models as rb_models

    _zoo()
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    monkeypatch.setattr(rb_models, "download_reachable", lambda timeout=2.0: False)
    with pytest.raises(UserError, match="its weights are not at .*Carmon2019Unlabeled.pt.*unreachable"):
        robeval.load_model("robustbench:cifar10/Linf/Carmon2019Unlabeled")


def _linear(pixels: int) -> torch.nn.Module:
    """A linear classifier on [0,1] pixels: cheap enough for AutoAttack's standard settings in a test."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(pixels, 10)).eval()


def test_to_disk_writes_the_model_info_of_a_standard_evaluation(tmp_path, monkeypatch, capsys):
    from robeval import benchmark

    monkeypatch.chdir(tmp_path)  # RobustBench's to_disk writes model_info/ where it runs
    path = tmp_path / "model_info" / "digits" / "Linf" / "Mine2024.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"name": "My paper", "clean_acc": "0.00"}))  # an author's earlier file
    clean, robust = benchmark(_linear(64), n_examples=6, dataset="digits", device="cpu", model_name="Mine2024",
                              to_disk=True, log_path=str(tmp_path / "log.md"))  # fmt: skip
    printed = [line for line in capsys.readouterr().out.splitlines() if "accuracy: " in line]
    assert printed == [f"Clean accuracy: {clean:.2%}", f"Adversarial accuracy: {robust:.2%}"]  # RobustBench's lines
    info = json.loads(path.read_text())
    assert info["name"] == "My paper" and info["clean_acc"] == str(round(clean * 100, 2))
    assert info["autoattack_acc"] == str(round(robust * 100, 2)) and info["eps"] == "8/255"
    log = (tmp_path / "log.md").read_text()
    assert "module:Mine2024@" in log and "robeval run None" not in log and "no results store" in log
    assert "robeval run None" not in info["footnote"] and "no results store" in info["footnote"]


def test_benchmark_on_cifar10_takes_the_first_n_test_images(tmp_path):
    from robeval import benchmark
    from tests.published_files import cifar10_python

    x, y = cifar10_python(tmp_path, n=12)
    model = _linear(3 * 32 * 32)
    first = torch.tensor(x[:5]).permute(0, 3, 1, 2).float() / 255
    expected = float((model(first).argmax(1) == torch.tensor(y[:5])).float().mean())
    clean, robust = benchmark(model, n_examples=5, data_dir=str(tmp_path), device="cpu", settings=FAST_AA)
    assert clean == pytest.approx(expected) and robust <= clean


def test_table_robustbench_of_a_corruption_run(tmp_path):
    from robeval.report.paper import render
    from robeval.results.runs import load_run
    from robeval.store import Store

    store = tmp_path / "s.sqlite"
    result = robeval.evaluate_full(models=["digits-deit"], n_examples=6, shift="corruptions", selection="first",
                                   corruptions="gaussian_noise", severities="1,2", store=store, device="cpu")  # fmt: skip
    info = json.loads(render(load_run(Store(store), result.run_id).summary, "robustbench"))
    conditions = result.summary[result.summary["attack"].str.contains("@")]
    assert info["corruptions_acc"] == str(round(conditions["top1"].mean(), 2)) and info["eps"] is None
    assert list(info)[-3:] == ["corruptions_acc", "corruptions_mce", "footnote"] and "unreliable" not in info
    assert info["corruptions_mce"] == "" and "autoattack_acc" not in info and "mCE needs ImageNet" in info["footnote"]


def test_model_info_values_are_typed_as_robustbenchs_update_json_writes_them(runs, robustbench_eval, tmp_path,
                                                                            monkeypatch):
    from robustbench.model_zoo.enums import BenchmarkDataset, ThreatModel
    from robustbench.utils import update_json

    from robeval.report.robustbench import to_model_info
    from robeval.robustbench_ext.dataset_facts import robustbench_dataset
    from robeval.robustbench_ext.leaderboard import info_benchmark

    clean, robust = runs["fractions"]
    monkeypatch.chdir(tmp_path)
    update_json(BenchmarkDataset.cifar_10, ThreatModel.Linf, "Theirs", clean, robust, 8 / 255)
    theirs = json.loads((tmp_path / "model_info" / "cifar10" / "Linf" / "Theirs.json").read_text())
    ours = json.loads(to_model_info(_standard(_stored(runs["root"] / "run.sqlite").summary)))
    assert (ours["clean_acc"], ours["autoattack_acc"]) == (theirs["clean_acc"], theirs["autoattack_acc"])
    assert robustbench_dataset("cifar10") == theirs["dataset"]  # a run's --data, as RobustBench names it
    assert robustbench_dataset("/d/val") == robustbench_dataset("val") == "imagenet"  # an image folder
    assert info_benchmark("Theirs.json", {"dataset": "cifar10 (test)"})[0] == "cifar10"  # an older robeval's entry
    assert type(ours["number_forward_passes"]) is int and type(ours["unreliable"]) is bool


def _standard(summary: pd.DataFrame) -> pd.DataFrame:
    """A summary whose AutoAttack rows say they ran with AutoAttack's standard settings (the tests run
    them shortened): what -f robustbench takes."""
    from robeval.attacks import resolve_settings

    return summary.assign(settings=[json.dumps(resolve_settings(a), sort_keys=True) if a in AA else s
                                    for a, s in zip(summary["attack"], summary["settings"])])  # fmt: skip


@pytest.mark.parametrize("source, split, selection, n, caveat", [
    ("cifar10", "test", "first", 10, None),
    ("cifar10", "train", "first", 10, "10 examples of the train split, not RobustBench's test examples"),
    ("cifar100", "test", "balanced", 10, "a class-balanced subset of 10 examples, not RobustBench's first 10"),
    ("/d/val", "", "robustbench-5000", 50, None),  # a folder is ImageNet: a prefix of RobustBench's list
    ("/d/mine (copy)", "", "listed", 5,
     "a listed subset of 5 examples, not RobustBench's list of 5,000 images (a prefix of it)"),
    ("mnist", "test", "balanced", 10, None),  # no RobustBench data set: nothing to say
])
def test_the_examples_caveat_reads_the_runs_data_as_values(source, split, selection, n, caveat):
    from robeval.robustbench_ext.dataset_facts import examples_caveat

    assert examples_caveat(source, split, selection, n) == caveat


def test_an_entry_with_random_weights_or_other_examples_is_marked_unreliable(tmp_path):
    from robeval.report.robustbench import to_model_info
    from robeval.results.runs import load_run
    from robeval.store import Store

    store = Store(tmp_path / "s.sqlite")
    result = robeval.evaluate_full(models=["digits-deit"], data="digits", n_examples=N, attacks=",".join(AA),
                                   settings=FAST_AA, weights="random", store=store, device="cpu")  # fmt: skip
    info = json.loads(to_model_info(_standard(load_run(store, result.run_id).summary)))
    assert info["unreliable"] is True and info["footnote"].startswith("Not a leaderboard number: ")
    for words in ("random weights", f"a class-balanced subset of {N} examples, not RobustBench's first {N}",
                  "near chance"):  # fmt: skip
        assert words in info["footnote"]
