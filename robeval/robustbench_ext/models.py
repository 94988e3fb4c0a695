"""RobustBench's model names: ``robustbench:<dataset>/<threat model>/<entry>`` for any entry of its model
zoo (``robustbench:cifar10/Linf/Carmon2019Unlabeled``, ``robustbench:cifar100/Linf/...``,
``robustbench:cifar10/L2/...``, ``robustbench:imagenet/Linf/...``), and ``robustbench:<entry>`` for its
ImageNet L-inf entries, when the optional package is installed (README: RobustBench).  The network is
built from RobustBench's model zoo; its weights are a source of their own (``robustbench``), read
through RobustBench's loader (its download and checksum)."""

from __future__ import annotations

import functools
import importlib.util
import socket
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import timm
import torch
from torch import nn

from ..core.errors import UserError, lookup
from ..model_config import ModelConfig
from ..models.hub import hub_offline, hub_reachable
from ..models.registry import ModelSpec
from ..models.weights import Loaded, Weights
from ..models.wrapper import set_config
from .dataset_facts import BENCHMARK_DATA, THREAT_MODELS

DRIVE_HOST = ("drive.google.com", 443)  # where RobustBench's loader downloads its zoo's checkpoints
ZOO_DATASETS = {"cifar10": "cifar_10", "cifar100": "cifar_100", "imagenet": "imagenet"}  # its enum's members
BARE_ENTRY = ("imagenet", "Linf")  # what robustbench:<entry> names (robeval's first RobustBench names)


@dataclass(frozen=True)
class ZooEntry:
    dataset: str
    threat_model: str
    name: str

    @property
    def text(self) -> str:
        return f"{self.dataset}/{self.threat_model}/{self.name}"

    @property
    def timm_name(self) -> str:
        """The timm model RobustBench registers for some entries (its own naming)."""
        return f"{self.name.lower().replace('-', '_')}_{self.dataset}_{self.threat_model.lower()}"


def parse_entry(text: str) -> ZooEntry:
    """``<entry>`` (ImageNet, Linf) or ``<dataset>/<threat model>/<entry>``; one line when malformed."""
    parts = text.split("/")
    if len(parts) == 1 and text:
        return ZooEntry(*BARE_ENTRY, text)
    if len(parts) != 3 or not all(parts):
        raise UserError(
            "robustbench model names look like robustbench:DATASET/THREAT_MODEL/NAME "
            "(robustbench:cifar10/Linf/Carmon2019Unlabeled) or robustbench:NAME (an ImageNet Linf entry)"
        )
    dataset, threat_model, name = parts
    lookup(ZOO_DATASETS, dataset, "RobustBench model zoo data set")
    lookup(dict.fromkeys(THREAT_MODELS), threat_model, "RobustBench threat model")
    return ZooEntry(dataset, threat_model, name)


def _robustbench_utils():
    """``robustbench.utils``, with ``robustbench`` registered as a bare package so its submodules import
    without its ``__init__``.

    Why: robustbench 1.1.1's ``__init__`` imports its own evaluation code, which needs ``autoattack``
    (installable only from git, not from the package index) and ``pkg_resources`` (gone from current
    setuptools), so ``import robustbench`` fails on a fresh install.  robeval needs only its model zoo
    and ``load_model`` (``robustbench.utils``), which import neither."""
    if sys.modules.get("robustbench") is None:
        spec = importlib.util.find_spec("robustbench") if "robustbench" not in sys.modules else None
        if spec is None or not spec.submodule_search_locations:
            raise UserError(
                "robustbench: models need the optional robustbench package: pip install 'robeval[robustbench]' "
                "&& pip install --no-deps robustbench"
            )
        package = types.ModuleType("robustbench")
        package.__path__, package.__spec__ = list(spec.submodule_search_locations), spec
        sys.modules["robustbench"] = package
    try:
        import robustbench.utils as rb_utils
    except ImportError as exc:
        raise UserError(
            f"the robustbench package is installed but its model zoo does not import ({exc}); "
            "pip install 'robeval[robustbench]' installs what it needs (README: RobustBench)"
        ) from None
    return rb_utils


def zoo_models(entry: ZooEntry) -> dict:
    """RobustBench's zoo for the entry's data set and threat model (entry name -> its facts)."""
    _robustbench_utils()
    from robustbench.model_zoo import model_dicts
    from robustbench.model_zoo.enums import BenchmarkDataset, ThreatModel

    threat_model = entry.threat_model.replace("_3d", "")  # RobustBench keeps 3D-corruption models with the 2D ones
    return model_dicts[getattr(BenchmarkDataset, ZOO_DATASETS[entry.dataset])].get(ThreatModel(threat_model), {})


def _failed(entry: ZooEntry, exc: Exception) -> UserError:
    reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return UserError(f"could not load RobustBench model {entry.text!r}: {reason}")


def robustbench_network(entry: ZooEntry) -> nn.Module:
    """The entry's network, randomly initialised, taking [0,1] images (RobustBench models normalise inside)."""
    config = dict(BENCHMARK_DATA[entry.dataset].image_config)
    try:
        if timm.is_model(entry.timm_name):
            net = timm.create_model(entry.timm_name, pretrained=False, num_classes=config["num_classes"])
        else:
            what = f"RobustBench {entry.dataset} {entry.threat_model} model"
            facts = lookup(zoo_models(entry), entry.name, what, "robustbench.model_zoo.model_dicts")
            net = facts["model"]()
    except UserError:
        raise
    except Exception as exc:  # an entry whose definition does not build here
        raise _failed(entry, exc) from None
    return set_config(net, config)


def download_reachable(timeout: float = 2.0) -> bool:
    """Whether RobustBench's download host answers (so an offline machine fails fast, in one line)."""
    try:
        socket.create_connection(DRIVE_HOST, timeout=timeout).close()
    except OSError:
        return False
    return True


def checkpoint_dir() -> Path:
    """Where RobustBench's loader keeps the zoo's checkpoints for robeval: ``<torch hub>/robustbench``."""
    return Path(torch.hub.get_dir()) / "robustbench"


def _check_downloadable(entry: ZooEntry) -> None:
    """A zoo checkpoint that is neither on disk nor downloadable here: one line saying where it belongs."""
    if timm.is_model(entry.timm_name):
        return  # timm's hub weights: hub_offline below makes an absent one a one-line error
    path = checkpoint_dir() / entry.dataset / entry.threat_model.replace("_3d", "") / f"{entry.name}.pt"
    if not path.is_file() and not download_reachable():
        raise UserError(
            f"could not load RobustBench model {entry.text!r}: its weights are not at {path} and RobustBench's "
            f"download host ({DRIVE_HOST[0]}) is unreachable; put the checkpoint there or connect"
        )


def robustbench_weights(source: str) -> Loaded:
    """The entry's weights through RobustBench's own loader (its download and checksum)."""
    entry = parse_entry(source)
    rb_utils = _robustbench_utils()
    _check_downloadable(entry)
    try:
        with hub_offline(not hub_reachable()):  # some entries are timm models on the hub
            net = rb_utils.load_model(
                model_name=entry.name,
                model_dir=str(checkpoint_dir()),
                dataset=entry.dataset,
                threat_model=entry.threat_model,
            )
    except Exception as exc:  # unknown name, network, checksum: all mean no weights here
        raise _failed(entry, exc) from None
    return net.state_dict(), None


def robustbench_spec(model_name: str) -> ModelSpec:
    entry = parse_entry(model_name)
    _robustbench_utils()  # fail early, with one line, when the package is missing
    return ModelSpec(
        f"robustbench:{model_name}",
        "robustbench",
        functools.partial(robustbench_network, entry),
        weights=Weights("robustbench", entry.text),
        description=f"RobustBench {entry.dataset} {entry.threat_model} model (normalizes inside)",
        config=ModelConfig.from_cfg(BENCHMARK_DATA[entry.dataset].image_config),
    )
