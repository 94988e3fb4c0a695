"""A run reads each checkpoint once (issue 61, item 1): ``robeval run`` of one model with three members (two
``.safetensors`` files, one ``.pth``) opens each file at most twice and reads its bytes once, as strace sees
the process do it (every ``open``/``openat`` of the file, the bytes of every ``read``/``pread64``/``readv``/
``preadv`` from it and the length of every ``mmap`` of it).  That the weights a run evaluates are the bytes
it hashed, whatever happens to the file afterwards: tests/test_checkpoints.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import torch

import robeval

from .conftest import require_tool

ZOO = Path(robeval.__file__).parent / "zoo"
# strace -y names the file behind each descriptor: `openat(AT_FDCWD, "PATH", ...) = 3</PATH>`, `read(3</PATH>,
# ..., 8) = 8`; a call another thread interrupts is finished on a line of its own (`<... read resumed>`)
CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((.*)$")
RESUMED = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+<\.\.\. (\w+) resumed>(.*)$")
RESULT = re.compile(r"\)\s+=\s+(-?\d+)")


def member(seed: int, path: Path) -> Path:
    """digits-deit's shipped weights moved by seeded noise, saved as ``path`` says (safetensors or torch)."""
    from safetensors.torch import load_file, save_file

    generator = torch.Generator().manual_seed(seed)
    state = {
        k: (v + 0.1 * v.std() * torch.randn(v.shape, generator=generator) if v.numel() > 1 else v).contiguous()
        for k, v in load_file(str(ZOO / "digits-deit.safetensors")).items()
    }
    if path.suffix == ".safetensors":
        save_file(state, str(path))
    else:
        torch.save({"model": state, "epoch": 3}, path)
    return path


def calls(trace: str) -> list[tuple[str, str]]:
    """Every traced call as (name, its arguments and result), a call split by another thread joined again."""
    pending: dict[str, tuple[str, str]] = {}
    out = []
    for line in trace.splitlines():
        resumed = RESUMED.match(line)
        if resumed:
            pid, name, rest = resumed.groups()
            start = pending.pop(pid, (name, ""))
            out.append((start[0], start[1].removesuffix("<unfinished ...>") + rest))
            continue
        found = CALL.match(line)
        if found is None:
            continue
        pid, name, rest = found.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (name, rest)
        else:
            out.append((name, rest))
    return out


def reads(trace: str, paths: list[Path]) -> tuple[Counter, Counter]:
    """Per checkpoint: how often it was opened, and how many of its bytes were read (or mapped)."""
    opens: Counter = Counter()
    read: Counter = Counter()
    for name, rest in calls(trace):
        result = RESULT.search(rest)
        size = int(result.group(1)) if result else -1
        for path in paths:
            if name in ("open", "openat") and f'"{path}"' in rest and size >= 0:
                opens[path] += 1
            elif name in ("read", "pread64", "readv", "preadv") and f"<{path}>" in rest:
                read[path] += max(size, 0)
            elif name == "mmap" and f"<{path}>" in rest:
                read[path] += int(rest.split(", ")[1])
    return opens, read


def test_a_run_opens_each_checkpoint_at_most_twice_and_reads_its_bytes_once(tmp_path):
    strace = shutil.which("strace")
    require_tool(strace, "strace", "apt-get install strace; .ci/run installs it")
    paths = [member(1, tmp_path / "a.safetensors"), member(2, tmp_path / "b.safetensors"), member(3, tmp_path / "c.pth")]
    trace = tmp_path / "trace.txt"
    command = [sys.executable, "-m", "robeval", "run", "-m", "digits-deit", "-c", f"digits-deit={','.join(map(str, paths))}",
               "-n", "4", "--attacks", "fgsm", "--quiet", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o")]  # fmt: skip
    watched = [arg for path in paths for arg in ("-P", str(path))]  # only the calls on these files stop the process
    done = subprocess.run([str(strace), "-f", "-y", "-qq", "-s", "0", "--seccomp-bpf", *watched, "-o", str(trace),
                           "-e", "trace=open,openat,read,pread64,readv,preadv,mmap", *command],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    require_tool("ptrace" not in done.stderr.lower(), "strace's ptrace", "a system that lets a process trace its child")
    assert done.returncode == 0, done.stderr[-2000:]
    opens, read = reads(trace.read_text(), paths)
    assert all(1 <= opens[p] <= 2 for p in paths), {p.name: opens[p] for p in paths}  # before issue 61: 24 to 28 times
    sizes = {p: p.stat().st_size for p in paths}
    assert all(sizes[p] <= read[p] < 1.1 * sizes[p] for p in paths), {p.name: (read[p], sizes[p]) for p in paths}
