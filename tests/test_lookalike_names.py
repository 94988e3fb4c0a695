"""A label is what it shows (issue 60, docs/hardening.md rule 9): a name that holds a character which does
not show as itself (a format character, a space other than U+0020, a filler, a variation selector, a tag,
a character with no agreed glyph, a control) is refused where it is given and in a store, in one line
naming the character by its code point; two names that read as one (equal in Unicode's NFKC form:
full-width letters, ligatures) are one name, refused as a name given twice.  Free text keeps such
characters, shown as escapes.  Every refusal: one ``error:`` line, exit code 2, no traceback, no file
touched.  Each refusal comes before any evaluation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from robeval.core.printable import is_hidden, read_alike, visible_controls
from robeval.report.escaping import terminal
from tests.conftest import invoke, one_line_error
from tests.hostile import PLAIN, rewrite_names
from tests.test_hardening import digest

# Each kind of character that does not show as itself (robeval.core.printable's docstring)
HIDDEN = [
    "\u200b", "\u200c", "\u200d", "\u2060", "\u2062", "\ufeff", "\u00ad", "\u180e",  # zero-width, joiners, SHY
    "\u200e", "\u200f", "\u061c", "\u202a", "\u202e", "\u2066", "\u2069",  # direction marks, overrides, isolates
    "\u00a0", "\u2007", "\u202f", "\u3000", "\u2028", "\u2029", "\x85", "\x1b", "\t",  # spaces, breaks, controls
    "\u115f", "\u1160", "\u3164", "\uffa0", "\u17b4", "\u2800",  # fillers and blanks Unicode files as letters
    "\u034f", "\ufe0f", "\u180b", "\U000e0100",  # the combining grapheme joiner, variation selectors
    "\U000e0001", "\U000e0041", "\U000e007f",  # tags
    "\ue000", "\U000f0000", "\u0378", "\ufffe", "\U0010ffff",  # private use, unassigned, noncharacters
]  # fmt: skip
# and a lone surrogate, as an undecodable byte of an argument becomes (SQLite's UTF-8 holds none)
ARGUMENT = [*HIDDEN, "\udc80"]
VISIBLE = ["é", "e\u0301", "小", "Ж", "±", "→", "①", "🙂", "\u05d0", " "]
RUN = ["run", "-n", "4", "--attacks", "fgsm", "--store", "s.sqlite", "-q"]
READERS = [["runs"], ["table"], ["table", "-f", "csv"], ["check"], ["report", "--out", "r.html"],
           ["compare", "a-run:x", "a-run:y"], ["plot", "--out", "plots"]]  # fmt: skip


def code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A finished run of the two plain models (4 digits, FGSM)."""
    import robeval

    store = tmp_path_factory.mktemp("lookalike") / "s.sqlite"
    robeval.evaluate_full(models=list(PLAIN), n_examples=4, attacks="fgsm", store=str(store), progress=False)
    return store


@pytest.fixture()
def place(tmp_path, stored) -> Path:
    """A folder with the stored run and the user's code beside it."""
    shutil.copy(stored, tmp_path / "s.sqlite")
    (tmp_path / "mine.py").write_text("import robeval\n\ndef build():\n    return robeval.load_model('digits-deit')\n")
    return tmp_path


def refused(folder: Path, args: list[str], *words: str) -> None:
    """``args`` from ``folder``: one ``error:`` line naming ``words``, and every file as it was."""
    before = digest(folder)
    result = invoke(args, folder)
    assert one_line_error(result, *words), (args, result.stderr)
    assert digest(folder) == before, args


def test_every_hidden_character_is_hidden_and_every_visible_one_shows():
    assert all(is_hidden(char) for char in ARGUMENT)
    assert not any(is_hidden(char) for text in VISIBLE for char in text)


def test_free_text_shows_each_hidden_character_as_an_escape():
    for char in ARGUMENT:
        shown = visible_controls(f"a{char}b")
        assert char not in shown and shown.isprintable() and shown.isascii(), repr(char)
    assert visible_controls("a\u200bb\U000e0041c\xa0") == "a\\u200bb\\U000e0041c\\xa0"
    assert terminal("one\ttwo\nthree\u200e") == "one\ttwo\nthree\\u200e"  # robeval's own lines keep their breaks
    assert visible_controls("é 小 ± ｄ ﬁ") == "é 小 ± ｄ ﬁ"


def test_a_message_shows_a_paths_hidden_character_as_its_escape(tmp_path):
    result = invoke(["runs", "--store", "no\u200bsuch\udc80.sqlite"], tmp_path)
    assert one_line_error(result, "no\\u200bsuch\\udc80.sqlite") and "\u200b" not in result.stderr


@pytest.mark.parametrize("char", ARGUMENT, ids=code_point)
def test_a_model_name_with_a_hidden_character_is_refused_before_any_work(place, char):
    refused(place, [*RUN, "-m", f"./mine.py:build=digits{char}-deit", "-m", "digits-deit"], code_point(char))
    refused(place, [*RUN, "-m", f"digits{char}-deit"], code_point(char), "--model")


@pytest.mark.parametrize("char", ARGUMENT, ids=code_point)
def test_a_table_name_with_a_hidden_character_is_refused(place, char):
    words = ["--name", code_point(char)]
    refused(place, ["table", "--store", "s.sqlite", "--name", f"digits-deit=digits{char}-deit-elliptical"], *words)


@pytest.mark.parametrize("char", HIDDEN, ids=code_point)
def test_a_stored_name_with_a_hidden_character_is_refused_by_every_reader(place, char):
    """Every reader refuses U+200B; each other character is read by one reader in turn (the readers share
    the one check: robeval.store.Store.check_names)."""
    rewrite_names(place / "s.sqlite", {"digits-deit": f"digits{char}-deit"}, "a-run", "digits")
    for args in READERS if char == "\u200b" else [READERS[HIDDEN.index(char) % len(READERS)]]:
        refused(place, [*args, "--store", "s.sqlite"], code_point(char))


def test_names_that_read_as_one_are_one_name_in_a_run(place):
    assert read_alike(["digits-deit", "ｄｉｇｉｔｓ-deit"]) == (0, 1) and read_alike(["ﬁne", "x", "fine"]) == (0, 2)
    assert read_alike(["digits-deit", "digits-deit-elliptical", "Digits-deit"]) is None  # NFKC, no case folding
    for label, other in [("ｄｉｇｉｔｓ-deit", "digits-deit"), ("digits-deit", "./mine.py:build=ｄｉｇｉｔｓ-deit")]:
        refused(place, [*RUN, "-m", f"./mine.py:build={label}", "-m", other], "read as one", "NFKC")
    refused(place, [*RUN, "-m", "./mine.py:build=ﬁne", "-m", "./mine.py:build=fine"], "'ﬁne' and 'fine'", "NFKC")
    # a label beside a pattern that stands for a model of that name: never one of the two silently left out
    refused(place, [*RUN, "-m", "digits-*", "-m", "./mine.py:build=digits-deit"], "'digits-deit'", "one name")
    refused(place, [*RUN, "-m", "./mine.py:build=ｄｉｇｉｔｓ-deit-rvt", "-m", "digits-deit*"], "NFKC")


def test_names_that_read_as_one_are_one_name_in_a_table(place):
    table = ["table", "--store", "s.sqlite", "--name"]
    refused(place, [*table, "digits-deit=ｄｉｇｉｔｓ-deit-elliptical"], "two models would be shown as", "NFKC")
    refused(place, [*table, "digits-deit=ﬁne", "--name", "digits-deit-elliptical=fine"], "'ﬁne' and 'fine'")
    refused(
        place, [*table, "digits-deit=digits-deit-elliptical"], "two models would be shown as 'digits-deit-elliptical'"
    )


def test_a_stored_run_whose_models_read_as_one_is_refused_by_every_reader(place):
    rewrite_names(place / "s.sqlite", {"digits-deit": "ｄｉｇｉｔｓ-deit-elliptical"}, "a-run", "digits")
    for args in READERS:
        refused(place, [*args, "--store", "s.sqlite"], "names two models", "NFKC")
