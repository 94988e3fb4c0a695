"""RobustBench's ``benchmark()`` arguments as a robeval run: the run options that evaluate a module
instance on RobustBench's examples (the first N of the CIFAR test set, a prefix of its ImageNet list)
under an AutoAttack version, run as AutoAttack runs it (``cascade=True``), and the two accuracies
RobustBench returns.  No engine here: :func:`robeval.api.benchmark` hands this module the evaluation."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.defaults import CLEAN
from ..core.errors import UserError
from ..models.given import GivenItem
from .dataset_facts import ADVERSARIAL, BenchmarkData, benchmark_data, image_config, threat_model_name

# Run options benchmark() sets from its own arguments: passing one of them too is an error, as a
# keyword given twice is in Python.
DERIVED = (
    "models",
    "data",
    "data_dir",
    "split",
    "selection",
    "subset",
    "n_examples",
    "eps",
    "norm",
    "attacks",
    "protocol",
    "cascade",
    "batch_size",
    "device",
)
MODEL_INFO_DIR = Path("model_info")  # RobustBench's to_disk folder: model_info/<dataset>/<threat model>/<name>.json


@dataclass(frozen=True)
class BenchmarkArgs:
    """RobustBench's ``benchmark()`` arguments other than the model (its defaults)."""

    n_examples: int = 10000
    dataset: Any = "cifar10"
    threat_model: Any = "Linf"
    model_name: str | None = None
    data_dir: str = "./data"
    corruptions_data_dir: str | None = None
    device: Any = None
    batch_size: int = 32
    eps: float | str | None = None
    version: str = "standard"
    preprocessing: Any = None
    aa_state_path: Any = None

    @property
    def data(self) -> BenchmarkData:
        return benchmark_data(self.dataset)

    @property
    def threat(self) -> str:
        threat = threat_model_name(self.threat_model)
        if threat not in ADVERSARIAL:
            raise UserError(
                f"benchmark() runs the {'/'.join(ADVERSARIAL)} threat models; for {threat} run robeval's shifts "
                "(robeval run --shift corruptions or --shift imagenet-c --data DIR; README: Corruptions), "
                "and `robeval table RUN -f robustbench` writes its corruptions_acc"
            )
        return threat

    def eps_text(self) -> str:
        """``eps`` as robeval writes budgets (``8/255`` where it is one), or RobustBench's default."""
        if self.eps is None:
            return self.data.default_eps(self.threat)
        if isinstance(self.eps, str):
            return self.eps  # robeval's own form ("8/255"), parsed with the run's options
        steps = float(self.eps) * 255
        return f"{round(steps)}/255" if round(steps) > 0 and abs(steps - round(steps)) < 1e-6 else repr(float(self.eps))


DEVICE_KINDS = ("auto", "cpu", "cuda")  # what a benchmark() device may be (a torch.device or its text)


def check_arguments(args: BenchmarkArgs) -> None:
    """benchmark()'s arguments as RobustBench's signature types them, refused before anything is built or
    stored with a ValueError (:class:`~robeval.errors.UserError`) that names the argument, as its own
    refusals do (``eps=nan``, ``n_examples=2.5``, ``device=torch.device("meta")``)."""
    for name in ("n_examples", "batch_size"):
        value = getattr(args, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise UserError(f"{name} must be a positive integer, got {value!r}")
    eps = args.eps
    if eps is not None and not isinstance(eps, str):
        real = isinstance(eps, numbers.Real) and not isinstance(eps, bool)
        if not (real and math.isfinite(float(eps)) and float(eps) > 0):
            raise UserError(f"eps must be a positive finite number (or None: the threat model's default), got {eps!r}")
    if args.device is not None and str(args.device).split(":")[0] not in DEVICE_KINDS:
        raise UserError(
            f"device {str(args.device)!r} cannot evaluate a model: give None, 'cpu', 'cuda' or 'cuda:N' "
            "(or a torch.device of those)"
        )
    if args.model_name is not None and not isinstance(args.model_name, str):
        raise UserError(f"model_name must be a string, got {type(args.model_name).__name__}")


def model_info_path(args: BenchmarkArgs, options: dict[str, Any], standard: tuple[str, ...]) -> Path:
    """Where ``to_disk`` writes (RobustBench's path), checked before the run: its autoattack_acc comes
    only from AutoAttack's standard version (``standard``: its attacks) with the standard settings."""
    settings = options.get("settings") or {}
    changed = [a for a in standard if settings.get(a)]
    if args.version != "standard" or changed:
        what = f"version {args.version!r}" if args.version != "standard" else f"settings for {', '.join(changed)}"
        raise UserError(
            f"to_disk writes autoattack_acc, AutoAttack's standard version with its settings: not with {what}"
        )
    if not args.model_name:
        raise UserError("to_disk=True writes model_info/<dataset>/<threat model>/<model_name>.json: pass model_name")
    return MODEL_INFO_DIR / args.data.name / args.threat / f"{args.model_name}.json"


def run_options(args: BenchmarkArgs, model: Any, options: dict[str, Any], version: dict[str, Any]) -> dict[str, Any]:
    """The keywords of :func:`robeval.evaluate_full` for ``args`` on model ``model`` (plus ``options``:
    any other run option, and ``store`` / ``resume`` / ``out`` / ``progress``); ``version``: the run
    options of ``args.version`` (its protocol and attacks: robeval.evaluation.protocols.autoattack_options,
    the protocol's attack settings under the user's)."""
    clash = sorted(set(options) & set(DERIVED))
    if clash:
        raise TypeError(f"benchmark() sets the run option {clash[0]!r} from its own arguments")
    device = "auto" if args.device is None else str(args.device)
    return {
        **options,
        **args.data.run_data(args.data_dir),
        "models": [model],
        "n_examples": args.n_examples,
        "eps": args.eps_text(),
        "norm": args.threat,
        **version,
        "settings": options.get("settings") or {},
        "cascade": True,
        "batch_size": args.batch_size,
        "device": device,
    }


def evaluate_module(
    model: Any, args: BenchmarkArgs, evaluate: Callable[..., Any], options: dict[str, Any], version: dict[str, Any]
):
    """Run ``evaluate`` (:func:`robeval.api.evaluate_full`) on ``model`` for ``args`` (the module with the
    data set's image facts, as RobustBench takes it: [0,1] pixels, its classes) under ``version`` (its
    run options); returns the result and the model's name in it (``module:<model_name>@<hash of its
    state dict>``)."""
    check_arguments(args)
    config = image_config(args.data, args.preprocessing)
    args.threat  # noqa: B018  (the threat model checked before the module is hashed)
    if getattr(model, "training", False):
        import warnings

        warnings.warn("the given model is in training mode; robeval evaluates a copy of it in eval mode", stacklevel=3)
    result = evaluate(**run_options(args, GivenItem((model, config), args.model_name), options, version))
    return result, result.config["models"][0]


def accuracies(records: pd.DataFrame, attacks: list[str], model: str) -> tuple[float, float]:
    """RobustBench's return value, as fractions: the clean accuracy, and the accuracy under the cascade
    of ``attacks`` (its last attack's records: the worst case over all of them), from the per-example records."""
    rows = records[records["model"] == model]
    hits = {unit: rows[rows["attack"] == unit]["adv_top1"] for unit in (CLEAN, attacks[-1])}
    for unit, found in hits.items():
        if found.empty:
            raise UserError(f"the run of {model} has no {unit} records (did it finish?)")
    return float(hits[CLEAN].mean()), float(hits[attacks[-1]].mean())


def print_accuracies(clean: float, robust: float) -> None:
    """The two lines RobustBench's ``benchmark()`` prints, in its words and format (``Clean accuracy:
    87.50%``, ``Adversarial accuracy: 56.29%``): a script that reads them reads robeval's too."""
    print(f"Clean accuracy: {clean:.2%}")
    print(f"Adversarial accuracy: {robust:.2%}")
