"""Which examples of a data set a run evaluates: a class-balanced subset (deterministic), or a
fixed list of images named by their paths (RobustBench's, or any ``--subset-file``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.errors import UserError


def check_count(n: int, total: int, what: str) -> None:
    """``--n-examples n`` of ``total`` (the ``what``): one line unless 0 < n <= total."""
    if n <= 0:
        raise UserError(f"--n-examples must be positive, got {n}")
    if n > total:
        raise UserError(f"--n-examples {n} is more than the {total} {what}")


def balanced_order(labels: Sequence[int]) -> list[int]:
    """All indices in class round-robin order (the first of every class, then the second, ...)."""
    by_class: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        by_class.setdefault(int(label), []).append(index)
    queues = [by_class[c] for c in sorted(by_class)]
    longest = max((len(q) for q in queues), default=0)
    return [queue[rank] for rank in range(longest) for queue in queues if rank < len(queue)]


def balanced_subset(labels: Sequence[int], n: int | None, usable: Callable[[int], bool] | None = None) -> list[int]:
    """First ``n`` indices of a class round-robin (class-balanced, deterministic), in ascending order.

    ``usable(index)`` (an image that decodes) lets the subset pass over broken files and fill up
    from the next images of the round-robin, so ``n`` images are evaluated while ``n`` usable exist."""
    if n is None:
        return list(range(len(labels)))
    check_count(n, len(labels), "images available")
    chosen: list[int] = []
    for index in balanced_order(labels):
        if len(chosen) == n:
            break
        if usable is None or usable(index):
            chosen.append(index)
    return sorted(chosen)


def choose_examples(labels: Sequence[int], n: int | None, selection: str = "balanced") -> list[int]:
    """``--selection balanced`` (:func:`balanced_subset`) or ``first``: the first ``n`` examples of the
    split in its published order (RobustBench's convention for CIFAR).  make_config checked it is one of them."""
    if selection == "balanced":
        return balanced_subset(labels, n)
    if n is not None:
        check_count(n, len(labels), "images available")
    return list(range(len(labels) if n is None else n))


def read_list(path: str | Path) -> list[str]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"subset file not found: {p}")
    names = [line.strip().replace("\\\\", "/") for line in p.read_text().splitlines()]
    names = [n for n in names if n and not n.startswith("#")]
    if not names:
        raise UserError(f"subset file {p} lists no images")
    return names


def select_listed(samples: list[tuple[str, int]], root: Path, names: list[str], n_examples: int | None) -> list[int]:
    """Dataset indices of the listed images (a prefix of the list for ``n_examples``), in list order."""
    if n_examples is not None:
        check_count(n_examples, len(names), "images of the subset")
        names = names[:n_examples]
    position = {Path(p).relative_to(root).as_posix(): i for i, (p, _) in enumerate(samples)}
    missing = [n for n in names if n not in position]
    if missing:
        raise UserError(f"{len(missing)} listed image(s) are not in {root}, e.g. {missing[0]}")
    return [position[n] for n in names]
