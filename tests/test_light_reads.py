"""The read commands stay light (issue 55, item 6): ``robeval table``, ``compare``, ``check``, ``runs`` and
``report`` without a gallery on a stored run import no torch (nor scipy.stats), in a process of their own, as
a user runs them.  The report's gallery crafts examples again (it loads the models: torch); its efficiency
table reads the FLOPs every run counted."""

from __future__ import annotations

import subprocess
import sys

import pytest

import robeval

PROBE = """
import sys
import robeval.cli
try:
    robeval.cli.main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = [m for m in ("torch", "timm", "scipy.stats") if m in sys.modules]
print("imported:", ",".join(heavy) or "none", file=sys.stderr)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("light") / "s.sqlite"
    robeval.evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=8, attacks="fgsm",
                          store=path, progress=False)  # fmt: skip
    return path


@pytest.fixture(scope="module")
def unregistered_store(tmp_path_factory):
    """A run whose model no registration of robeval's gives: a module given from Python, whose name
    (``module:...``) the registry resolves through code that imports torch, as it does a plugin's."""
    path = tmp_path_factory.mktemp("light") / "s.sqlite"
    mine = robeval.load_model("digits-deit").net  # a timm network: its image facts in its pretrained_cfg
    robeval.evaluate_full(models=[mine, "digits-deit"], n_examples=8, attacks="fgsm", store=path, progress=False)
    return path


@pytest.mark.parametrize("args", [["check"], ["table"], ["report", "--gallery-size", "0", "--out", "{tmp}/r.html"]])
def test_a_run_of_a_model_of_no_registration_is_read_without_torch(unregistered_store, args, tmp_path):
    """What the checklist and the report's efficiency table ask of a model (whether it takes --adaptive,
    whether it is a registration) its run recorded: reading it asks no registry."""
    args = [arg.format(tmp=tmp_path) for arg in args]
    done = subprocess.run([sys.executable, "-c", PROBE, *args, "--store", str(unregistered_store)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported: none" in done.stderr, done.stderr


@pytest.mark.parametrize("args", [["table"], ["table", "-f", "latex"], ["check"], ["runs"],
                                  ["compare", "digits-deit", "digits-deit-elliptical"],
                                  ["report", "--gallery-size", "0", "--out", "{tmp}/r.html"]])  # fmt: skip
def test_a_read_command_imports_no_torch(store, args, tmp_path):
    args = [arg.format(tmp=tmp_path) for arg in args]
    done = subprocess.run([sys.executable, "-c", PROBE, *args, "--store", str(store)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported: none" in done.stderr, done.stderr
