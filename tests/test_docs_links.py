"""The README and the pages under docs/ point at things that exist: every relative link names a file of
the repository (and, with ``#anchor``, one of its headings), and every ``robeval <verb>`` command they
show is a command whose ``--help`` answers.  A page renamed or a verb dropped fails here, not in a
reader's terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
# an indented code block: lines of four spaces or more after a blank line (list items here indent by two)
INDENTED = re.compile(r"(?:^\n)((?:(?: {4,}.*)?\n)+)", re.M)
# a command starts a code line, follows a prompt, a pipe or &&, or opens an inline code span
COMMAND = re.compile(r"(?:^|\$ |&& |\| |; )\s*robeval ([a-z][a-z0-9-]*)", re.M)


def code_of(text: str) -> list[str]:
    """The fenced blocks, indented blocks and inline code spans of a Markdown page."""
    blocks = FENCE.findall(text)
    rest = FENCE.sub("", text)
    indented = INDENTED.findall(rest)
    rest = INDENTED.sub("\n", rest)
    return blocks + indented + INLINE.findall(rest)


def commands_in(text: str) -> set[str]:
    return {verb for code in code_of(text) for verb in COMMAND.findall(code)}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m) for m in re.findall(r"^#+\s+(.*)$", text, re.M)}


def links_of(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [a or b for a, b in LINK.findall(text)]


def test_the_pages_exist():
    assert (ROOT / "README.md").exists()
    assert all(p.stat().st_size > 0 for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_and_heading_that_exist(page: Path):
    broken = []
    for target in links_of(page):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not reachable from here
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no file {file.relative_to(ROOT) if ROOT in file.parents else file})")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    assert not broken, f"{page.name}: {broken}"


def named_commands() -> list[str]:
    return sorted(set().union(*(commands_in(p.read_text(encoding="utf-8")) for p in PAGES)))


def test_the_pages_name_commands():
    assert {"run", "table", "compare"} <= set(named_commands())


@pytest.mark.parametrize("verb", named_commands())
def test_every_named_command_answers_help(verb: str):
    result = run_cli(verb, "--help")
    assert result.returncode == 0, f"robeval {verb} --help: {result.stderr.strip()}"
    assert "Usage" in result.stdout


def test_readme_is_a_front_page():
    """A newcomer reads the README in five minutes: at most 250 lines, and it opens with the two
    commands that do all set-up on a fresh machine; the rest lives in docs/, one page per topic."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the detail into docs/"
    opening = [line.strip() for line in lines[1:] if line.strip()][:2]
    assert lines[0].startswith("# ")
    assert [line.split()[:2] for line in opening] == [["make", "run"], ["make", "test"]], opening
    assert all(line.startswith("    ") for line in lines[1:4] if line.strip()), "the two commands as a code block"


def test_the_readme_links_every_docs_page():
    """Every page under docs/ (research notes aside) is reachable from the README's list."""
    linked = {Path(target.partition("#")[0]).as_posix() for target in links_of(ROOT / "README.md")}
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"not linked from README.md: {sorted(pages - linked)}"


def test_the_indented_blocks_count_as_code():
    text = "Prose robeval nothing.\n\n    robeval run --eps 8/255\n    robeval table\n\nMore `robeval compare A B`.\n"
    assert commands_in(text) == {"run", "table", "compare"}


# where a page states the size of the digits test split: "-n 449 ... (the whole ... split)", "the 449 test images"
SPLIT_SIZE = re.compile(
    r"(?:-n|--n-examples) (\d+)`?,? \(?the whole|the (\d+)(?:-image)? test (?:images|split)|(\d+)-image test split"
)


def test_every_page_that_states_the_digits_test_split_says_what_robeval_reads(tmp_path):
    """The number is the one ``robeval run`` prints for the whole split (and the one it refuses beyond)."""
    printed = run_cli("run", "--attacks", "none", "-m", "digits-deit", "-n", "100000", "--store", str(tmp_path / "s"))
    size = int(re.search(r"more than the (\d+) images available", printed.stderr).group(1))
    whole = run_cli("run", "--attacks", "none", "-m", "digits-deit", "-n", str(size), "--store", str(tmp_path / "s"))
    assert whole.returncode == 0 and f"n = {size}" in whole.stdout, whole.stderr
    stated = {(page.name, int(next(g for g in m.groups() if g))) for page in PAGES
              for m in SPLIT_SIZE.finditer(page.read_text())}  # fmt: skip
    assert len(stated) >= 4 and {n for _, n in stated} == {size}, stated
