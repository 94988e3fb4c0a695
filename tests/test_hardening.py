"""No file runs code, no bad input leaves a trace (issue 37, docs/hardening.md): a battery of what a
user (or a file from someone else) can get wrong, each refused in one ``error:`` line with exit code 2
and no traceback, before anything is written: every file the command did not create is byte for byte
as it was, nothing is created, and no code runs that the command line did not name.  Then what each
rule promises beyond the battery: reading a store imports no code, read-only means read-only, one
name per model, ``benchmark()``'s arguments, train-demo's honesty, a zip bomb's memory."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sqlite3
import struct
import sys
import zlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import robeval
from robeval.core.errors import UserError
from tests.conftest import invoke, one_line_error
from tests.test_plugins import Entry, NoTimmConstructor, installed  # noqa: F401  (the fixture)

CODE = '''
import sys

from torch import nn

import robeval


def mlp(hidden=0):
    body = [nn.Flatten(), nn.Linear(64, 10)] if not hidden else [nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(),
                                                               nn.Linear(hidden, 10)]
    return nn.Sequential(*body)


def plain():
    return mlp(), robeval.ModelConfig(input_size=(1, 8, 8))


def exits():
    sys.exit(0)


def interrupted():
    raise KeyboardInterrupt


class ExitsOnImages(nn.Module):
    """Fine on the zero batch of the output check; sys.exit(0) on any image."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        if x.abs().sum() > 0:
            sys.exit(0)
        return self.head(x.flatten(1))


def exits_later():
    return ExitsOnImages(), robeval.ModelConfig(input_size=(1, 8, 8))


def two_means():
    return mlp(), robeval.ModelConfig(input_size=(1, 8, 8), mean=(0.1, 0.2), std=(1.0, 1.0))
'''
SENTINEL = "IMPORTED"  # what the stored run's model file writes beside itself whenever it is imported
STORED_CODE = f'''
import pathlib

from torch import nn

import robeval

pathlib.Path(__file__).with_name("{SENTINEL}").write_text("the model file ran")


def build():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), robeval.ModelConfig(input_size=(1, 8, 8))


def other():
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
    return net, robeval.ModelConfig(input_size=(1, 8, 8))
'''


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "-"
        for p in sorted(folder.rglob("*"))
        if not p.is_symlink()
    }


def zip_bomb(path: Path, inflated: int = 1 << 30) -> Path:
    """A zip (a torch checkpoint by its first bytes) of about 1 MiB whose one record inflates to
    ``inflated`` bytes of zeros, with the right CRC: blocks of deflated zeros, each flushed whole so that
    one block can be repeated."""
    chunk = 1 << 20
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(bytes(chunk)) + deflate.flush(zlib.Z_FULL_FLUSH)
    data = block * (inflated // chunk) + deflate.flush()
    crc = 0
    for _ in range(inflated // chunk):
        crc = zlib.crc32(bytes(chunk), crc)
    name = b"archive/data.pkl"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), inflated, len(name), 0) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), inflated, len(name),
                          0, 0, 0, 0, 0, 0) + name  # fmt: skip
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    path.write_bytes(local + data + central + end)
    return path


def _checkpoints(folder: Path) -> None:
    """Checkpoints a user may give by mistake, or someone may give them."""

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {folder / 'PWNED'}",))

    torch.save({"model": Evil()}, folder / "hostile.pth")
    torch.save(robeval.load_model("digits-deit").net.state_dict(), folder / "deit.pth")
    whole = (folder / "deit.pth").read_bytes()
    (folder / "cut.pth").write_bytes(whole[: len(whole) // 2])
    torch.save({"fc.weight": torch.zeros(10, 64), "fc.bias": torch.zeros(10)}, folder / "mlp.pth")
    save_file({"w": torch.zeros(4)}, str(folder / "small.safetensors"))
    header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4 << 40]}}).encode()
    (folder / "terabytes.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(16))
    zip_bomb(folder / "bomb.pth")
    (folder / "folder.pth").mkdir()
    (folder / "loop.pth").symlink_to(folder / "loop.pth")
    (folder / "picture.pth").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)


def _images(folder: Path) -> None:
    """An image folder of two classes, one colour image each (the digits models take 8x8 grey digits)."""
    from PIL import Image

    for wnid in ("n01440764", "n01443537"):
        (folder / wnid).mkdir(parents=True)
        Image.new("RGB", (16, 16), (120, 30, 200)).save(folder / wnid / "a.JPEG")


def _stores(folder: Path) -> str:
    """A robeval store with one finished run (its id returned), and files that are not one."""
    result = robeval.evaluate_full(models=["digits-deit"], n_examples=8, attacks="fgsm", store=folder / "s.sqlite")
    gc.collect()
    run_id = str(result.run_id)
    whole = (folder / "s.sqlite").read_bytes()
    (folder / "truncated.sqlite").write_bytes(whole[: len(whole) // 2])
    (folder / "empty.sqlite").write_bytes(b"")
    (folder / "notes.txt").write_text("not a store\n")
    with sqlite3.connect(folder / "other.db") as conn:
        conn.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
    conn.close()
    (folder / "deep.sqlite").write_bytes(whole)
    with sqlite3.connect(folder / "deep.sqlite") as conn:  # a store from someone else: its run's config nested deep
        conn.execute("UPDATE runs SET config = ?", ("[" * 100_000 + "]" * 100_000,))
    conn.close()  # the last connection: the journal folded into the file
    (folder / "store-folder.sqlite").mkdir()
    (folder / "loop.sqlite").symlink_to(folder / "loop.sqlite")
    return run_id


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A folder of files a user may give by mistake, and a store with one finished run; ``(folder, run id)``."""
    folder = tmp_path_factory.mktemp("hardening")
    (folder / "code.py").write_text(CODE)
    (folder / "exits_on_import.py").write_text("import sys\n\nsys.exit(0)\n")
    _checkpoints(folder)
    (folder / "deep.json").write_text('{"clean_acc": ' + "[" * 50_000 + "]" * 50_000 + "}")
    (folder / "big.json").write_text(json.dumps({"clean_acc": "90", "autoattack_acc": "50", "pad": "x" * (2 << 20)}))
    (folder / "list.json").write_text("[1, 2]")
    (folder / "weights.pth").write_bytes(b"someone's file")
    _images(folder / "images")
    return folder, _stores(folder)


RUN = ("run", "-n", "8", "--attacks", "fgsm", "--store", "s.sqlite", "-q")
ON_DEIT = (*RUN, "-m", "digits-deit", "--checkpoint")
BATTERY = [
    # checkpoints: refused before the store is opened (they left a failed 0/0 run behind)
    ([*ON_DEIT, "hostile.pth"], ["outside the allowed set", "it was not executed"]),
    ([*ON_DEIT, "cut.pth"], ["not a PyTorch/safetensors checkpoint", "truncated or damaged zip"]),
    ([*ON_DEIT, "mlp.pth"], ["checkpoint mlp.pth does not fit digits-deit", "another architecture"]),
    ([*ON_DEIT, "small.safetensors"], ["does not fit digits-deit"]),
    ([*ON_DEIT, "terabytes.safetensors"], ["declares tensor 'w' of 4,398,046,511,104 bytes", "before anything was read"]),
    ([*ON_DEIT, "bomb.pth"], ["declares 1,073,741,824 bytes once inflated", "before anything was inflated"]),
    ([*ON_DEIT, "folder.pth"], ["checkpoint path is not a file"]),
    ([*ON_DEIT, "loop.pth"], ["symbolic link to nothing"]),
    ([*ON_DEIT, "picture.pth"], ["not a PyTorch/safetensors checkpoint", "unrecognised binary data"]),
    ([*ON_DEIT, "s.sqlite"], ["not a PyTorch/safetensors checkpoint"]),  # another program's file (ours, here)
    # the user's code: what it raises, SystemExit and KeyboardInterrupt included, and what it states
    ([*RUN, "-m", "./code.py:exits"], ["./code.py:exits() raised SystemExit(0)", "sys.exit"]),
    ([*RUN, "-m", "./exits_on_import.py:build"], ["exits_on_import.py raised SystemExit(0)", "on import"]),
    ([*RUN, "-m", "./code.py:interrupted"], ["./code.py:interrupted() raised KeyboardInterrupt"]),
    ([*RUN, "-m", "./code.py:two_means"], ["1-channel images", "2 mean values (0.1, 0.2)", "one per channel"]),
    ([*RUN, "-m", "./code.py:plain", "--model-config", "mean=0.1,0.2"], ["2 mean values", "one per channel"]),
    # names: one per model, one checkpoint per name
    ([*RUN, "-m", "./code.py:plain=digits-deit", "-m", "digits-deit"], ["'digits-deit' is the name of both"]),
    ([*RUN, "-m", "digits-deit", "-m", "./code.py:plain=digits-deit"], ["'digits-deit' is the name of both"]),
    ([*RUN, "-m", "digits-deit", "-m", "digits-deit"], ["'digits-deit' is given twice"]),
    ([*RUN, "-m", "digits-deit", "--checkpoint", "digits-deit=deit.pth", "--checkpoint", "digits-deit=mlp.pth"],
     ["two checkpoints for digits-deit (deit.pth and mlp.pth)"]),
    # data that does not fit, a file where a folder is expected, a class map that is no class map
    ([*RUN, "-m", "digits-deit", "--data", "images", "-n", "2"], ["has labels of 1000 classes", "has 10 classes"]),
    ([*RUN, "-m", "digits-deit", "--data", "notes.txt"], ["data path is not a folder: notes.txt"]),
    ([*RUN, "-m", "digits-deit", "--data", "images", "--class-map", "deep.json"], ["nests", "levels deep"]),
    ([*RUN, "-m", "digits-deit", "--data", "images", "--class-map", "list.json"], ["class map list.json"]),
    # stores that are not one: refused by readers and writers alike, left as they were
    (["runs", "--store", "empty.sqlite"], ["empty file, not a robeval results store"]),
    (["table", "--store", "empty.sqlite"], ["empty file, not a robeval results store"]),
    (["check", "--store", "notes.txt"], ["not a robeval results store"]),
    (["runs", "--store", "truncated.sqlite"], ["is truncated"]),
    (["table", "--store", "truncated.sqlite"], ["is truncated"]),
    (["runs", "--store", "other.db"], ["another program"]),
    (["runs", "--store", "store-folder.sqlite"], ["is not a file"]),
    (["runs", "--store", "loop.sqlite"], ["symbolic link to nothing"]),
    (["runs", "--store", "deep.sqlite"], ["nests", "levels deep"]),
    (["table", "--store", "deep.sqlite"], ["nests", "levels deep"]),
    (["run", "-n", "8", "--attacks", "fgsm", "-q", "--store", "loop.sqlite"], ["symbolic link to nothing"]),
    # JSON given to compare: its size and nesting bounded
    (["compare", "{run}:digits-deit", "deep.json", "--store", "s.sqlite"], ["deep.json", "nests", "levels deep"]),
    (["compare", "{run}:digits-deit", "big.json", "--store", "s.sqlite"], ["big.json", "refused unread"]),
    (["compare", "{run}:digits-deit", "list.json", "--store", "s.sqlite"], ["not a RobustBench model-info file"]),
    # train-demo and profile: the user's code and the output file
    (["train-demo", "-m", "./code.py:exits", "--out", "new.pth"], ["SystemExit(0)"]),
    (["train-demo", "-m", "./code.py:plain", "--out", "weights.pth"], ["--out weights.pth exists", "--force"]),
    (["train-demo", "-m", "./code.py:plain", "--out", "new.pth", "--epochs", "1", "--lr", "1e6"],
     ["training diverged", "nan", "nothing was written"]),
    (["train-demo", "-m", "./code.py:plain", "--out", "new.pth", "--epochs", "1", "--lr", "1e-9"],
     ["under 2x chance", "learnt nothing", "nothing was written"]),
    (["profile", "-m", "./code.py:interrupted"], ["KeyboardInterrupt"]),
]


@pytest.mark.parametrize("args, words", BATTERY, ids=[" ".join(a) for a, _ in BATTERY])
def test_bad_input_is_one_line_and_leaves_every_file_as_it_was(place, args, words):
    folder, run_id = place
    before = digest(folder)
    result = invoke([a.replace("{run}", run_id) for a in args], folder)
    assert one_line_error(result, *words), result.stderr
    assert digest(folder) == before  # nothing changed, nothing created (no run, no -wal/-shm, no weights)
    assert not (folder / "PWNED").exists()


def test_a_plugin_layer_that_does_not_fit_is_the_same_line_from_run_train_demo_and_profile(installed, tmp_path):  # noqa: F811
    installed(attention=[Entry("odd", NoTimmConstructor, "odd-pkg")])
    commands = [["run", "-m", "digits-deit-odd", "--weights", "random", "-n", "4", "--store", "s.sqlite"],
                ["train-demo", "-m", "digits-deit-odd", "--out", "w.pth"], ["profile", "-m", "digits-deit-odd"]]
    lines = set()
    for args in commands:
        result = invoke(args, tmp_path)
        assert one_line_error(result, "model digits-deit-odd of odd-pkg does not build: TypeError"), result.stderr
        lines.add(result.stderr.strip())
    assert len(lines) == 1 and list(tmp_path.iterdir()) == []


def test_code_that_calls_sys_exit_mid_run_never_exits_0(place, tmp_path):
    folder, _ = place
    (tmp_path / "code.py").write_text((folder / "code.py").read_text())
    result = invoke(["run", "-m", "./code.py:exits_later", "-n", "4", "--attacks", "fgsm", "-q", "--store",
                     "s.sqlite"], tmp_path)  # fmt: skip
    assert one_line_error(result, "SystemExit(0)", "it did not finish"), (result.returncode, result.stderr)


@pytest.mark.parametrize(
    "argument, words",
    [
        (dict(eps=float("nan")), ["eps must be a positive finite number", "nan"]),
        (dict(eps=-8 / 255), ["eps must be a positive finite number"]),
        (dict(n_examples=2.5), ["n_examples must be a positive integer, got 2.5"]),
        (dict(n_examples=0), ["n_examples must be a positive integer, got 0"]),
        (dict(batch_size=0), ["batch_size must be a positive integer"]),
        (dict(device=torch.device("meta")), ["device 'meta' cannot evaluate a model"]),
    ],
)
def test_benchmark_refuses_its_arguments_as_robustbench_would_before_any_run(tmp_path, argument, words):
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    with pytest.raises(ValueError) as info:  # a UserError is a ValueError, as RobustBench's refusals are
        robeval.benchmark(module, **{"n_examples": 8, "dataset": "digits", "device": "cpu", **argument},
                          store=tmp_path / "s.sqlite")  # fmt: skip
    assert isinstance(info.value, UserError) and all(w in str(info.value) for w in words), str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_model_given_from_python_is_checked_like_the_users_code(tmp_path):
    one_channel = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    stated = robeval.ModelConfig(input_size=(1, 8, 8), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    with pytest.raises(UserError, match="1-channel images .* 3 mean values"):
        robeval.evaluate(models=[(one_channel, stated)], n_examples=4, attacks="fgsm", store=tmp_path / "s.sqlite")
    with pytest.raises(UserError, match="are one model"):
        robeval.evaluate(models=[(one_channel, robeval.ModelConfig(input_size=(1, 8, 8)))] * 2, n_examples=4,
                         store=tmp_path / "s.sqlite")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_a_zip_bomb_is_refused_from_its_central_directory_without_inflating(place):
    folder, _ = place
    bomb = folder / "bomb.pth"
    assert bomb.stat().st_size < 2 << 20  # about 1 MiB on disk, 1 GiB inflated
    clear = Path("/proc/self/clear_refs")
    if not clear.exists():
        pytest.skip("no /proc/self/clear_refs here to reset the peak memory (Linux only)")
    from robeval.core.machine import status_kb

    clear.write_text("5")  # the peak resident memory (VmHWM) starts again from what is resident now
    resident = status_kb("VmRSS") or 0
    with pytest.raises(UserError, match="before anything was inflated"):
        robeval.load_model("digits-deit", checkpoint=bomb)
    assert (status_kb("VmHWM") or 0) - resident < 200 * 1024  # kB: the 1 GiB was never inflated


def test_reading_a_store_imports_no_code_it_names(tmp_path, monkeypatch):
    from robeval.models import user_code

    (tmp_path / "mine.py").write_text(STORED_CODE)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.sqlite"
    run = robeval.evaluate_full(models=["./mine.py:build=mine", "./mine.py:other=other"], n_examples=8,
                                attacks="fgsm", store=store)  # fmt: skip
    run_id, sentinel = str(run.run_id), tmp_path / SENTINEL
    sentinel.unlink()
    monkeypatch.setattr(user_code, "_FILES", {})  # an import now would run the file again
    readers = [["runs"], ["table"], ["check"], ["check", "--report", "checklist.md"], ["compare", "mine", "other"],
               ["plot", "--out", "plots"], ["table", run_id, "-f", "json"]]  # fmt: skip
    for args in readers:
        result = invoke([*args, "--store", str(store)], tmp_path)
        assert result.returncode == 0, (args, result.stderr)
    opened = robeval.open_run(run_id, store=store)
    assert set(opened.summary["model"]) == {"mine", "other"} and "Run " in str(opened.check())
    assert not sentinel.exists()
    # the file unchanged, at the path the run read: still not imported unless this command line names it
    written = invoke(["report", run_id, "--store", str(store), "--out", "report.html"], tmp_path)
    assert written.returncode == 0, written.stderr
    assert "no gallery: model mine of the run is built by the code ./mine.py:build" in (tmp_path / "report.html").read_text()
    refused = invoke(["examples", run_id, "--attack", "fgsm", "--store", str(store)], tmp_path)
    assert one_line_error(refused, "never imports", "--model ./mine.py:build=mine"), refused.stderr
    assert not sentinel.exists() and not (tmp_path / "results").exists()
    named = ["--model", "./mine.py:build=mine", "--model", f"{tmp_path / 'mine.py'}:other=other"]  # any spelling
    drawn = invoke(["examples", run_id, "--attack", "fgsm", *named, "--max", "1", "--store", str(store)], tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert sentinel.exists()  # named on the command line: imported
    sentinel.unlink()
    monkeypatch.setattr(user_code, "_FILES", {})
    written = invoke(["report", run_id, "--store", str(store), "--out", "named.html", *named, "--gallery-size", "1"],
                     tmp_path)  # fmt: skip
    assert written.returncode == 0 and sentinel.exists(), written.stderr
    assert "no gallery" not in (tmp_path / "named.html").read_text()


def _copied_store(place, folder: Path) -> Path:
    """A copy of the place's store (one finished run) in ``folder``."""
    store = folder / "s.sqlite"
    store.write_bytes((place[0] / "s.sqlite").read_bytes())
    return store


def test_a_store_is_read_read_only_also_on_read_only_media(place, tmp_path, monkeypatch):
    folder = tmp_path / "media"
    folder.mkdir()
    store = _copied_store(place, folder)
    before = digest(folder)
    connected: list[tuple[str, bool]] = []
    connect = sqlite3.connect

    def watched(database, *args, **kwargs):  # every connection a reader opens, and how
        connected.append((str(database), bool(kwargs.get("uri"))))
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", watched)
    store.chmod(0o444)
    folder.chmod(0o555)  # (root writes there anyway: the connections say what a reader asked for)
    try:
        for args in (["runs"], ["table", "-f", "csv"], ["check"]):
            assert invoke([*args, "--store", str(store)], tmp_path).returncode == 0, args
        assert len(robeval.open_run(store=store).records) > 0
    finally:
        folder.chmod(0o755)
    ours = [(database, uri) for database, uri in connected if "s.sqlite" in database]
    assert ours and all(uri and ("?immutable=1" in d or "?mode=ro" in d) for d, uri in ours), ours
    assert digest(folder) == before  # no -wal, no -shm, the store's bytes as they were


def test_reading_leaves_a_store_and_files_that_are_no_store_as_they_were(place, tmp_path):
    store = _copied_store(place, tmp_path)
    (tmp_path / "empty.sqlite").write_bytes(b"")
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(store.read_bytes()[:6000])
    before = digest(tmp_path)
    assert len(robeval.open_run(store=store).summary) > 0
    for path, words in ((tmp_path / "empty.sqlite", "empty file"), (truncated, "is truncated")):
        with pytest.raises(UserError, match=words):
            robeval.open_run(store=path)
    assert digest(tmp_path) == before


def test_train_demo_writes_weights_that_load_back_with_the_accuracy_it_printed(tmp_path):
    (tmp_path / "code.py").write_text(CODE)
    trained = ["train-demo", "-m", "./code.py:plain", "--out", "w.pth", "--epochs", "3", "--lr", "5e-2"]
    result = invoke(trained, tmp_path)
    assert result.returncode == 0, result.stderr
    printed = float(result.stdout.split("clean accuracy ")[1].split("%")[0])
    assert printed > 20
    from robeval.data.digits import digits_split

    x, y = (torch.from_numpy(a) for a in digits_split("test"))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        model = robeval.load_model("./code.py:plain", checkpoint=tmp_path / "w.pth")
    finally:
        os.chdir(cwd)
    with torch.no_grad():
        measured = float((model(x).argmax(1) == y).float().mean())
    assert f"{100 * measured:.2f}" == f"{printed:.2f}"
    again = invoke([*trained, "--force"], tmp_path)
    assert again.returncode == 0, again.stderr


def test_a_modules_source_file_is_found_without_importing_its_package(tmp_path, monkeypatch):
    from robeval.models.user_code import check_stored_code, code_record, source_file

    package = tmp_path / "theirpkg"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(tmp_path / SENTINEL)!r}, 'w').write('ran')\n")
    (package / "nets.py").write_text("def build():\n    raise AssertionError('not to be called')\n")
    monkeypatch.chdir(tmp_path)
    assert source_file("theirpkg.nets:build") == (package / "nets.py").resolve()
    assert source_file("./theirpkg/nets.py:build") == (package / "nets.py").resolve()
    assert code_record("theirpkg.nets:build")["path"] == str((package / "nets.py").resolve())
    config = {"models": ["mine"], "references": {"mine": "theirpkg.nets:build"}}
    with pytest.raises(UserError, match="never imports .* --model theirpkg.nets:build=mine"):
        check_stored_code(config)  # a store naming code is no reason to import it
    check_stored_code(config, named=["theirpkg.nets:build"])  # named on the command line
    assert not (tmp_path / SENTINEL).exists() and "theirpkg" not in sys.modules
