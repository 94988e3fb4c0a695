"""How far each read command is from the import floor of the libraries it needs (issue 55, item 6).

A read command (``table``, ``check``, ``runs``, ``compare``, ``report --gallery-size 0``) runs in a
process of its own, so its time is Python's start, the imports and the work.  The floor is a process
that only imports what the command cannot do without: pandas, Typer (with the pydantic adapters it parses options with) and rich for every one, and
matplotlib's figure and SVG backend and scipy.special for the report (its figures and its claim
tests).  Commands and floors run in turn within each repeat (benchmarks/_timing.py), on a store of
one demo run made first; the ratio command / floor is paired per repeat.  Whether a command imports
torch is printed too (it must not: tests/test_light_reads.py holds that).

    .venv/bin/python benchmarks/read_commands.py              # 5 repeats
    .venv/bin/python benchmarks/read_commands.py --repeats 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples, paired_ratio  # noqa: E402

PYTHON = sys.executable
TABLE_FLOOR = "import pandas, typer, typer._adapters, rich.console"  # (Typer parses options through _adapters)
REPORT_FLOOR = TABLE_FLOOR + ", matplotlib.figure, matplotlib.backends.backend_svg, scipy.special"
COMMANDS = {  # name -> (arguments after `robeval`, its floor)
    "table": (["table"], TABLE_FLOOR),
    "check": (["check"], TABLE_FLOOR),
    "runs": (["runs"], TABLE_FLOOR),
    "compare": (["compare", "digits-deit", "digits-deit-elliptical"], TABLE_FLOOR),
    "report": (["report", "--gallery-size", "0", "--out", "{out}/report.html"], REPORT_FLOOR),
}


def robeval(args: list[str], store: Path) -> subprocess.CompletedProcess:
    argv = [a.replace("{out}", str(store.parent)) for a in args]
    return subprocess.run([PYTHON, "-m", "robeval", *argv, "--store", str(store)], capture_output=True, text=True)


def imports_torch(args: list[str], store: Path) -> bool:
    argv = [a.replace("{out}", str(store.parent)) for a in args]
    code = (
        f"import sys, robeval.cli; sys.argv = ['robeval', *{argv!r}, '--store', {str(store)!r}]\n"
        "try:\n    robeval.cli.main()\nexcept SystemExit:\n    pass\nprint('torch' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True)
    return done.stderr.strip().splitlines()[-1] == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "s.sqlite"
        made = robeval(["run", "--attacks", "fgsm,pgd", "-n", "50", "--out", "{out}/run"], store)
        assert made.returncode == 0, made.stderr
        print(f"store: one demo run (2 digits models, fgsm and pgd, 50 digits); {args.repeats} interleaved repeats")
        for name, (argv, floor) in COMMANDS.items():
            assert robeval(argv, store).returncode == 0, name
            samples = interleaved_samples(
                {name: lambda a=argv: robeval(a, store), "floor": lambda f=floor: subprocess.run([PYTHON, "-c", f])},
                repeats=args.repeats,
            )
            ratio, low, high = paired_ratio(samples, name, "floor")
            took, base = statistics.median(samples[name]), statistics.median(samples["floor"])
            print(
                f"  {name:8s} {took:5.2f} s   its import floor {base:5.2f} s   ratio {ratio:4.2f} "
                f"(quartiles {low:.2f}-{high:.2f})   imports torch: {'yes' if imports_torch(argv, store) else 'no'}"
            )


if __name__ == "__main__":
    main()
