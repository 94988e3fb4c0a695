"""docs/your-attention.md, executed as written: its files are written into a fresh folder, its
commands run in order in a shell (its two trainings side by side) (``pip`` and ``robeval`` those of a throw-away virtual environment
that sees this environment's packages, so nothing is installed here), and the tables they print are
checked.  A second author's attention goes from a package of their own to the report in one test."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "your-attention.md"
FENCE = re.compile(r"^```(\w+)(?: file=(\S+))?\n(.*?)^```$", re.M | re.S)
KIND, PACKAGE, MODEL = "cosine", "cosine-attention", "digits-deit-cosine"


def tutorial_parts() -> tuple[dict[str, str], list[str]]:
    """The files the page writes (path -> text) and its shell commands, in order."""
    files, commands = {}, []
    for language, path, body in FENCE.findall(TUTORIAL.read_text()):
        if path:
            files[path] = body
        elif language == "bash":
            commands += [line for line in body.splitlines() if line.strip() and not line.startswith("#")]
    return files, commands


def sandbox(root: Path) -> dict[str, str]:
    """A virtual environment at ``root/venv`` that sees this one's packages, with ``pip`` and ``robeval``
    on the PATH as its own; returns the environment the commands run in (offline, caches under ``root``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    Path(own, "_parent_environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for command, module in (("pip", "pip"), ("robeval", "robeval")):
        shim = bin_dir / command
        shim.write_text(f'#!/bin/sh\nexec "{python}" -m {module} "$@"\n')
        shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               XDG_CACHE_HOME=str(root / "cache"), PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               PIP_DISABLE_PIP_VERSION_CHECK="1", HF_HUB_OFFLINE="1")  # fmt: skip
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("tutorial")
    env = sandbox(root)
    work = root / "work"
    files, commands = tutorial_parts()
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    out = {}
    for together in side_by_side(commands):
        started = [subprocess.Popen(["bash", "-c", c], cwd=work, env=env, stdout=PIPE, stderr=PIPE, text=True)
                   for c in together]  # fmt: skip
        for command, process in zip(together, started):
            stdout, stderr = process.communicate(timeout=600)
            done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
            assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            out[command] = done
            out.setdefault(" ".join(command.split()[:2]), done)  # the first command of each verb by its verb
    out["work"] = work  # type: ignore[assignment]
    out["env"] = env  # type: ignore[assignment]
    return out


def side_by_side(commands: list[str]) -> list[list[str]]:
    """The commands in order, the page's consecutive trainings together: each trains one model into files
    of its own on one thread, so they run side by side (two cores used where the suite leaves one idle);
    every other command waits for the one before it."""
    groups: list[list[str]] = []
    for command in commands:
        training = command.startswith("robeval train-demo")
        if training and groups and groups[-1][-1].startswith("robeval train-demo"):
            groups[-1].append(command)
        else:
            groups.append([command])
    return groups


def test_the_page_has_the_steps_it_promises():
    files, commands = tutorial_parts()
    layer = files[f"{PACKAGE}/cosine_attention.py"]
    assert len(layer.splitlines()) <= 30 and "def forward(self, x, attn_mask=None)" in layer
    assert '[project.entry-points."robeval.attention"]' in files[f"{PACKAGE}/pyproject.toml"]
    verbs = [c.split()[1] if c.startswith("robeval") else c.split()[0] for c in commands]
    assert verbs == ["pip", "models", "train-demo", "train-demo", "run", "table", "compare", "check", "report"]
    trained = [c for c in commands if c.startswith("robeval train-demo")]
    assert all("--seeds 0-2" in c for c in trained) and len({c.replace(MODEL, "digits-deit") for c in trained}) == 1


def test_the_plugin_kind_is_listed_as_a_family_with_its_package(tutorial):
    listing = tutorial["robeval models"].stdout
    rows = {line.split("│")[1].strip(): line for line in listing.splitlines() if line.count("│") > 3}
    for name in (MODEL, *(f"deit-{size}-{KIND}" for size in ("tiny", "small", "base"))):
        assert name in rows and PACKAGE in rows[name], name
    assert "digits-deit" in rows and "robeval" in rows["digits-deit"]


def test_train_demo_trains_three_seeds_of_both_the_same_way_and_says_each_accuracy_and_the_spread(tutorial):
    for model in (MODEL, "digits-deit"):
        command = next(c for c in tutorial if c.startswith("robeval train-demo") and f"--model {model} " in c)
        said = tutorial[command].stdout
        seeds = [float(a) for a in re.findall(rf"{model} seed \d: clean accuracy ([\d.]+)%", said)]
        assert len(seeds) == 3 and all(50 < a <= 100 for a in seeds), said
        mean, std = map(float, re.search(rf"{model}: clean accuracy ([\d.]+) ± ([\d.]+)% over 3 seeds", said).groups())
        assert abs(mean - sum(seeds) / 3) < 0.01 and std >= 0
        for seed in range(3):
            assert (tutorial["work"] / "seeds" / f"{model}-seed{seed}.safetensors").stat().st_size > 10_000


def _rows(markdown: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")]
            for line in markdown.splitlines() if line.startswith("| ")) if cells[0] not in ("Model", "eps")}  # fmt: skip


def test_run_and_table_show_both_models_of_three_members_as_mean_and_std(tutorial):
    said = tutorial["robeval run"].stdout
    assert f"over each model's members (checkpoints, one per training seed) (digits-deit: 3, {MODEL}: 3)" in said
    table = tutorial["robeval table"].stdout
    assert "FGSM Top-1" in table and "PGD Top-1" in table and "n = 64" in table
    assert f"(digits-deit: 3, {MODEL}: 3)" in table
    rows = _rows(table)
    assert set(rows) == {"digits-deit", MODEL}
    for cells in rows.values():
        means, stds = zip(*(map(float, c.strip("*†").split(" ± ")) for c in cells))
        assert len(means) == 8 and all(0 <= v <= 100 for v in means) and all(0 <= s <= 60 for s in stds)
        clean, fgsm, pgd = means[0], means[2], means[4]
        assert pgd <= clean and fgsm <= clean


def test_check_covers_the_plugin_model(tutorial):
    said = tutorial["robeval check"].stdout
    assert "Soundness checks" in said and "finished" in said


def test_compare_tests_the_claim_over_the_members_and_the_report_takes_the_plugin_model(tutorial):
    said = tutorial["robeval compare"].stdout
    rows = {line.split("|")[2].strip(): line for line in said.splitlines() if line.startswith("| 8/255")}
    assert set(rows) == {"clean", "fgsm", "pgd", "any"}
    assert "(3 members)" in said and re.search(r"any at eps 8/255: .* 95% interval \[[-+\d.]+, [-+\d.]+\]: ", said)
    assert "seed-to-seed variation" in said.splitlines()[-1]
    page = (tutorial["work"] / "report.html").read_text()
    assert MODEL in page and "regenerated adversarial examples" in page
    efficiency = page[page.index('id="efficiency"') : page.index('id="compare"')]
    assert MODEL in efficiency and "digits-deit" in efficiency


def test_the_suites_registry_tests_judge_the_installed_plugin_by_a_plugins_rules(tutorial):
    """With the page's package installed, the tests that iterate the registries meet its models too
    (a user's ``make test`` in an environment with a plugin): they judge them as a plugin, not as robeval's
    own (a plugin states no parameter count, robeval's count table has none of its models)."""
    python = Path(tutorial["env"]["PATH"].split(os.pathsep)[0]).parent / "venv" / "bin" / "python"
    tests = [str(ROOT / "tests" / "test_registries.py"), "-k", f"every_registered_model and {KIND}"]
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", *tests],
                          cwd=tutorial["work"], env=tutorial["env"], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0 and re.search(r"\b4 passed", done.stdout), done.stdout[-3000:]
