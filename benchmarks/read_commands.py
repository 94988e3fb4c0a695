"""How far each read command is from the import floor of the libraries it needs (issue 55, item 6).

A read command (``table``, ``check``, ``runs``, ``compare``, ``report --gallery-size 0``) runs in a
process of its own, so its time is Python's start, the imports and the work.  The floor is a process
that only imports the libraries the command imported (of ``LIBRARIES``: pandas, Typer with the
pydantic adapters it parses options with, rich, scipy.special for the claim tests, matplotlib for
figures), found by running the command once more and listing them.  Commands and floors run in turn
within each repeat (benchmarks/_timing.py), on a store of one demo run made first; the ratio
command / floor is paired per repeat.  Every process reads cached bytecode (a warm-up run writes
it), as an installed package does.  Whether a command imports torch is printed too (it must not:
tests/test_light_reads.py holds that).

    .venv/bin/python benchmarks/read_commands.py              # 5 repeats
    .venv/bin/python benchmarks/read_commands.py --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples, paired_ratio  # noqa: E402

PYTHON = sys.executable
LIBRARIES = (  # the libraries a read command may need, as a floor process imports them
    "numpy", "pandas", "typer", "typer._adapters", "rich.console", "scipy.special",
    "matplotlib.figure", "matplotlib.backends.backend_svg", "torch",
)  # fmt: skip
COMMANDS = {  # name -> arguments after `robeval`
    "table": ["table"],
    "check": ["check"],
    "runs": ["runs"],
    "compare": ["compare", "digits-deit", "digits-deit-elliptical"],
    "report": ["report", "--gallery-size", "0", "--out", "{out}/report.html"],
}


def cached_bytecode(folder: Path) -> dict[str, str]:
    """The environment of every process: bytecode cached (in ``folder``), as an installed robeval and its
    libraries have it, even where this machine's PYTHONDONTWRITEBYTECODE would compile every module anew."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(folder / "pycache")}


def command_line(args: list[str], store: Path) -> list[str]:
    return [*(a.replace("{out}", str(store.parent)) for a in args), "--store", str(store)]


def robeval(args: list[str], store: Path) -> subprocess.CompletedProcess:
    line = [PYTHON, "-m", "robeval", *command_line(args, store)]
    return subprocess.run(line, capture_output=True, text=True, env=cached_bytecode(store.parent))


def libraries_imported(args: list[str], store: Path) -> list[str]:
    """Which of LIBRARIES the command imports (run once more, in a process that then lists them)."""
    code = (
        f"import sys, robeval.cli; sys.argv = ['robeval', *{command_line(args, store)!r}]\n"
        "try:\n    robeval.cli.main()\nexcept SystemExit:\n    pass\n"
        f"print(','.join(m for m in {LIBRARIES!r} if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=cached_bytecode(store.parent))
    return done.stderr.strip().splitlines()[-1].split(",")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "s.sqlite"
        made = robeval(["run", "--attacks", "fgsm,pgd", "-n", "50", "--out", "{out}/run"], store)
        assert made.returncode == 0, made.stderr
        print(f"store: one demo run (2 digits models, fgsm and pgd, 50 digits); {args.repeats} interleaved repeats")
        for name, argv in COMMANDS.items():
            assert robeval(argv, store).returncode == 0, name
            needed = libraries_imported(argv, store)
            floor, env = "import " + ", ".join(needed), cached_bytecode(store.parent)
            samples = interleaved_samples(
                {
                    name: lambda a=argv: robeval(a, store),
                    "floor": lambda f=floor, e=env: subprocess.run([PYTHON, "-c", f], env=e),
                },
                repeats=args.repeats,
            )
            ratio, low, high = paired_ratio(samples, name, "floor")
            took, base = statistics.median(samples[name]), statistics.median(samples["floor"])
            print(
                f"  {name:8s} {took:5.2f} s   its import floor {base:5.2f} s   ratio {ratio:4.2f} "
                f"(quartiles {low:.2f}-{high:.2f})   imports torch: {'yes' if 'torch' in needed else 'no'}"
            )
            print(f"           floor: {', '.join(n for n in needed if n != 'numpy')}")


if __name__ == "__main__":
    main()
