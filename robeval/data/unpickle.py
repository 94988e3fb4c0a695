"""Reading CIFAR's python-version batches without running anything from the file.

The published batches are pickled dicts of numpy arrays, lists, ints and byte strings.  Python's
``pickle.load`` would call any function a file names (a tampered download runs code on load), and
``numpy.load(allow_pickle=True)`` is the same.  This unpickler resolves only the globals those
files need to rebuild a numpy array; any other global (``os.system``, ``builtins.eval``, ...) is
refused before it is looked up, so nothing in the file is executed.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from ..core.errors import UserError

ALLOWED_GLOBALS = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),  # how numpy 1 (and CIFAR's Python 2 files) pickle an array
        ("numpy._core.multiarray", "_reconstruct"),  # the same under numpy 2
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how Python 3 writes an array's bytes at protocol 2 (str -> latin-1 bytes)
    }
)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`ALLOWED_GLOBALS`."""


class ArraysOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise RefusedGlobal(f"{module}.{name}")
        return super().find_class(module, name)


def load_arrays_pickle(path: Path) -> dict[Any, Any]:
    """A pickled dict of arrays, lists and strings (``encoding="bytes"``: CIFAR's files were written
    by Python 2, so their keys come back as ``b"data"``, ``b"labels"``, ...)."""
    try:
        with open(path, "rb") as handle:
            out = ArraysOnlyUnpickler(handle, encoding="bytes").load()
    except RefusedGlobal as exc:
        raise UserError(
            f"{path} asks to run {exc} when unpickled: refused (CIFAR's batches hold only arrays and lists; "
            "is this file tampered with?)"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        why = " ".join(str(exc).split())  # one line, whatever the exception's text holds
        raise UserError(f"{path} is not a CIFAR python-version batch ({type(exc).__name__}: {why})"[:300]) from None
    if not isinstance(out, dict):
        raise UserError(f"{path} is not a CIFAR python-version batch (holds {type(out).__name__}, not a dict)")
    return out
