"""Fixed example lists: RobustBench's 5,000 ImageNet validation images, or any list in a file.

A list names images by their path relative to the data folder (``n01440764/ILSVRC2012_val_00000293.JPEG``),
one per line.  As in RobustBench, ``--n-examples N`` takes a prefix of the list, and the examples
are evaluated in the list's order.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError

ROBUSTBENCH_5000 = "robustbench-5000"
_ROBUSTBENCH_FILE = ("helper_files", "imagenet_test_image_ids.txt")


def robustbench_list_file() -> Path:
    """The list shipped inside the optional ``robustbench`` package."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("robustbench")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise UserError("--subset robustbench-5000 needs the optional robustbench package "
                        "(pip install robustbench) or --subset-file FILE with the list")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*_ROBUSTBENCH_FILE)
    if not path.exists():
        raise UserError(f"the installed robustbench package has no {path.name}; pass --subset-file FILE")
    return path


def read_list(path: str | Path) -> list[str]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"subset file not found: {p}")
    names = [line.strip().replace("\\\\", "/") for line in p.read_text().splitlines()]
    names = [n for n in names if n and not n.startswith("#")]
    if not names:
        raise UserError(f"subset file {p} lists no images")
    return names


def resolve_subset(subset: str | None, subset_file: str | None) -> list[str] | None:
    """The image list a run uses, or None for the class-balanced default."""
    if subset_file is not None:
        return read_list(subset_file)
    if subset is None:
        return None
    if subset != ROBUSTBENCH_5000:
        raise UserError(f"unknown --subset {subset!r}; known: {ROBUSTBENCH_5000} (or --subset-file FILE)")
    return read_list(robustbench_list_file())


def select(samples: list[tuple[str, int]], root: Path, names: list[str], n_examples: int | None) -> list[int]:
    """Dataset indices of the listed images (a prefix of the list for ``n_examples``), in list order."""
    if n_examples is not None:
        if n_examples <= 0:
            raise UserError(f"--n-examples must be positive, got {n_examples}")
        if n_examples > len(names):
            raise UserError(f"--n-examples {n_examples} is more than the {len(names)} images of the subset")
        names = names[:n_examples]
    position = {Path(p).relative_to(root).as_posix(): i for i, (p, _) in enumerate(samples)}
    missing = [n for n in names if n not in position]
    if missing:
        raise UserError(f"{len(missing)} listed image(s) are not in {root}, e.g. {missing[0]}")
    return [position[n] for n in names]
