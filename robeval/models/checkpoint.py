"""Safe checkpoint reading and strict loading with messages a user can act on.

A checkpoint is read once (:func:`open_checkpoint`), and what a file declares is checked before anything
is loaded or inflated: docs/hardening.md, section The rules, 3.  The result, :class:`OpenedCheckpoint`, is
the value the plan carries from admission to the model's load.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import pickle
import re
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import IO, Any

import torch
from torch import nn

from ..core.errors import UserError
from ..core.json_input import load_json
from ..core.printable import visible_controls
from .recipes import args_recipe, robeval_recipe

STATE_DICT_KEYS = ("model", "state_dict", "model_ema")  # tried in this order
STRIP_PREFIXES = ("module.", "_orig_mod.")
WRAPPED_PREFIX = "net."  # robeval's NormalizedModel keeps the network as .net (mean/std are not saved)
SAFE_GLOBALS: list[Any] = [argparse.Namespace]


def weights_sha256(state: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over weights: every entry's name, dtype, shape and bytes, in name order (the same weights
    give the same digest whatever file format or wrapper prefix they were saved with)."""
    digest = hashlib.sha256()
    for key, value in sorted(state.items()):
        tensor = value.detach().to("cpu").contiguous()
        digest.update(f"{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class RecordedModel:
    """The model a checkpoint says it holds: ``name`` as ``where`` in the file records it (robeval's
    metadata names a robeval model, a training checkpoint's ``args.model`` one of that code's own
    registry: docs/hardening.md, section The rules, 7)."""

    name: str
    where: str  # ROBEVAL_METADATA or TRAINING_ARGS

    @property
    def names_robeval_model(self) -> bool:
        return self.where == ROBEVAL_METADATA


ROBEVAL_METADATA, TRAINING_ARGS = "metadata", "args.model"


@dataclass(eq=False)
class OpenedCheckpoint:
    """A checkpoint file as one read of it gave it: the path it was given by, its format, the SHA-256 of the
    bytes read, the weights loaded from those bytes (``--checkpoint-key``'s entry, DDP prefixes stripped),
    the model and the training recipe it records (None: none recorded).  Made where a run admits its models
    (robeval.evaluation.preflight), carried by the plan to the model's load; nothing reads the file again.
    Once its network holds the weights, :meth:`release` drops its tensors (what it records stays)."""

    path: str
    format: str  # "safetensors", "torch-zip" or "torch-pickle"
    sha256: str
    state: Mapping[str, torch.Tensor]
    recorded: RecordedModel | None
    recipe: dict[str, str] | None

    @cached_property
    def weights_sha256(self) -> str:
        """The digest of its weights (:func:`weights_sha256`), asked once they are admitted (check_fit) and
        before :meth:`release` (after it, the digest would be that of no tensors)."""
        assert self.state, f"{self.path}: its tensors were released before their digest was asked"
        return weights_sha256(self.state)

    def release(self) -> None:
        """Drop its tensors once they are loaded into their network (the run's last load of them): a run
        holds each member's weights while it evaluates that member, not until it ends."""
        self.state = {}


ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default (zip) format
PICKLE_PROTOCOL_2_PLUS = 0x80  # the first byte of a pickle of protocol >= 2: torch's legacy format
# What a file may declare before anything of it is loaded or inflated.  torch.save stores its zip records
# as they are (inflated size = stored size); a record that inflates further is what a zip bomb is.
MAX_INFLATION = 4  # the declared inflated size of all records, at most this many times the file's size
SAFETENSORS_HEADER_LIMIT = 100 << 20  # the safetensors library's own limit on its JSON header
METADATA = "__metadata__"  # a safetensors header's strings (train-demo's: the model's name and its recipe)
SAFETENSORS_DTYPES = {
    "BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "F8_E5M2": torch.float8_e5m2,
    "F8_E4M3": torch.float8_e4m3fn, "I16": torch.int16, "U16": torch.uint16, "F16": torch.float16,
    "BF16": torch.bfloat16, "I32": torch.int32, "U32": torch.uint32, "F32": torch.float32, "F64": torch.float64,
    "I64": torch.int64, "U64": torch.uint64, "C64": torch.complex64,
}  # fmt: skip


def checkpoint_format(head: bytes) -> str | None:
    """``"torch-zip"``, ``"torch-pickle"`` or ``"safetensors"`` from a file's first bytes (``head``), else None.

    Sniffing before loading keeps files of another kind (text, CSV, images) away from the unpickler,
    whose errors on them are misleading (``KeyError: 101``) or crashes."""
    if head.startswith(ZIP_MAGIC):
        return "torch-zip"
    if head[:1] == bytes([PICKLE_PROTOCOL_2_PLUS]) and len(head) > 1 and 2 <= head[1] <= 5:
        return "torch-pickle"
    return "safetensors" if head[8:9] == b"{" else None  # safetensors: u64 little-endian header size, then JSON


def _check_archive(path: Path, data: bytes) -> None:
    """A torch zip's records from its central directory alone (nothing inflated): what they declare
    inflated stays within :data:`MAX_INFLATION` times the file, so loading cannot take more memory."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise not_a_checkpoint(path, f"truncated or damaged zip archive: {_first_line(exc)}") from None
    stored = max(len(data), 1)
    declared = sum(r.file_size for r in records)
    if declared > MAX_INFLATION * stored:
        raise UserError(
            f"checkpoint {path} declares {declared:,} bytes once inflated, {declared / stored:,.0f} times its "
            f"{stored:,} bytes (torch.save stores records as they are): refused before anything was inflated"
        )


def _safetensors_head(path: Path, head: bytes, fh: IO[bytes], size: int) -> tuple[bytes, Any]:
    """A safetensors file's first bytes through its JSON header (read on from ``head``), and its metadata:
    the header read within the file's size and the library's limit, each tensor's bytes (dtype x shape)
    inside the file's data section, so a header that claims terabytes is one line before the rest is read."""
    length = int.from_bytes(head[:8], "little")
    if not 0 < length <= min(size - 8, SAFETENSORS_HEADER_LIMIT):
        raise not_a_checkpoint(path, "truncated safetensors file: its header is longer than the file")
    head += fh.read(max(0, 8 + length - len(head)))
    header = load_json(head[8 : 8 + length], f"the safetensors header of {path}")
    if not isinstance(header, dict):
        raise not_a_checkpoint(path, "damaged safetensors header: not a JSON object")
    for name, entry in header.items():
        if name != METADATA:
            _check_entry(path, name, entry, size - 8 - length)
    return head, header.get(METADATA)


def _check_entry(path: Path, name: str, entry: Any, data: int) -> None:
    try:
        dtype, shape, (begin, end) = entry["dtype"], tuple(int(n) for n in entry["shape"]), entry["data_offsets"]
        need = math.prod(shape) * SAFETENSORS_DTYPES[dtype].itemsize
        fits = min(shape, default=0) >= 0 and 0 <= int(begin) <= int(end) <= data and int(end) - int(begin) == need
        if fits and max(shape, default=0) >= 1 << 63:  # a dimension of 0 beside one no tensor can have
            raise ValueError(shape)
    except (KeyError, TypeError, ValueError):
        raise not_a_checkpoint(
            path, f"damaged safetensors header: entry {name!r} is not dtype, shape, data_offsets"
        ) from None
    if not fits:
        raise not_a_checkpoint(
            path,
            f"truncated or damaged safetensors file: its header declares tensor {name!r} of {need:,} bytes at "
            f"{begin}..{end}, and the file holds {data:,} bytes of data; refused before anything was read",
        )


def _describe(head: bytes) -> str:
    """What a file that is no checkpoint looks like (``head``: its first bytes), for the error message."""
    if not head:
        return "the file is empty"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return "unrecognised binary data"
    first = text.splitlines()[0] if text.strip() else ""
    return "it looks like a CSV file" if "," in first else "it looks like a text file"


def not_a_checkpoint(path: Path, reason: str) -> UserError:
    return UserError(f"not a PyTorch/safetensors checkpoint: {path} ({reason})")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    return text.splitlines()[0].split(". ")[0][:160]


def _load_safetensors(path: Path, data: bytes) -> Any:
    from safetensors.torch import load

    try:
        return load(data)
    except Exception as exc:  # the library raises several kinds on a damaged file
        raise not_a_checkpoint(path, f"damaged or truncated safetensors file: {_first_line(exc)}") from None


def _load_torch(path: Path, data: bytes, trust: bool) -> Any:
    if trust:
        # --trust-checkpoint only (issue 5): the user asked for full unpickling, which can run code from the
        # file, and was warned
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)  # noqa: S614 - explicit opt-in
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS), warnings.catch_warnings():
            # torch's notes on what a file holds (sparse tensors validated, quantized ones deprecated): what
            # matters of them is the admission's one line (check_fit)
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        global_name = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if global_name or "Unsupported global" in str(exc) or "Unsupported class" in str(exc):
            what = f" ({global_name.group(1)})" if global_name else ""
            raise UserError(
                f"checkpoint {path} holds Python objects outside the allowed set{what}, which cannot be loaded safely; "
                "it was not executed. If you trust the file, pass --trust-checkpoint"
            ) from None
        raise not_a_checkpoint(path, f"damaged pickle: {_first_line(exc)}") from None
    except Exception as exc:  # truncated zip, damaged records: the reader raises many kinds
        raise not_a_checkpoint(path, f"truncated or damaged: {_first_line(exc)}") from None


def _is_state_dict(obj: Any) -> bool:
    """Tensors named by texts (a name of another kind would be no parameter's)."""
    return (
        isinstance(obj, Mapping)
        and len(obj) > 0
        and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())
    )


def _keys(obj: Mapping) -> str:
    """A dict's first keys as a message shows them: a text cut short, any other key its type's name (a tuple a
    pickle made of itself ten times over, nested, would be gigabytes as text)."""
    return ", ".join(
        visible_controls(k[:80]) if isinstance(k, str) else f"<{type(k).__name__}>" for k in islice(obj, 10)
    )


def select_state_dict(obj: Any, key: str | None = None, source: str = "checkpoint") -> dict[str, torch.Tensor]:
    """Pick the weights from a bare state dict or a training checkpoint dict; strip DDP prefixes."""
    if not isinstance(obj, Mapping):
        raise UserError(f"{source} holds a {type(obj).__name__}, not a state dict or a dict of them")
    if key is not None:
        if key not in obj:
            raise UserError(f"{source} has no key {key!r}; it has: {_keys(obj)}")
        chosen = obj[key]
    elif _is_state_dict(obj):
        chosen = obj
    else:
        found = [k for k in STATE_DICT_KEYS if k in obj and _is_state_dict(obj[k])]
        if not found:
            raise UserError(
                f"{source} has no weights under {', '.join(STATE_DICT_KEYS)} and is not a bare state dict (tensors "
                f"named by texts); keys: {_keys(obj)} (choose one with --checkpoint-key)"
            )
        chosen = obj[found[0]]
    if not _is_state_dict(chosen):
        raise UserError(f"{source}[{key!r}] is not a state dict (tensors named by texts)")
    out = {}
    for name, tensor in chosen.items():
        for prefix in STRIP_PREFIXES:
            while name.startswith(prefix):
                name = name[len(prefix) :]
        out[name] = tensor
    if all(name.startswith(WRAPPED_PREFIX) for name in out):  # robeval's own load_model(...).state_dict()
        out = {name[len(WRAPPED_PREFIX) :]: tensor for name, tensor in out.items()}
    return out


def _existing(path: str | Path) -> Path:
    """``path`` as a file to read: one line for a link to nothing, a missing file, a folder, an empty file."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise UserError(f"checkpoint {p} is a symbolic link to nothing (a missing target or a loop)")
    if not p.exists():
        raise UserError(f"checkpoint file not found: {p}")
    if not p.is_file():
        raise UserError(f"checkpoint path is not a file: {p}")
    if p.stat().st_size == 0:
        raise not_a_checkpoint(p, "the file is empty")
    return p


def _read(p: Path, fh: IO[bytes]) -> tuple[str, bytes, Any]:
    """The file's format, all its bytes (each read once) and a safetensors file's metadata, what it declares
    checked first (:func:`checkpoint_format`, :func:`_safetensors_head`, :func:`_check_archive`)."""
    size = os.fstat(fh.fileno()).st_size
    head = fh.read(16)
    kind = checkpoint_format(head)
    if kind is None:
        raise not_a_checkpoint(p, _describe(head + fh.read(512 - len(head))))
    metadata = None
    if kind == "safetensors":
        head, metadata = _safetensors_head(p, head, fh, size)
    data = head + fh.read()
    if kind == "torch-zip":
        _check_archive(p, data)
    return kind, data, metadata


def open_checkpoint(path: str | Path, key: str | None = None, trust: bool = False) -> OpenedCheckpoint:
    """Checkpoint ``path`` read once (module docstring): its bytes hashed and loaded, the weights ``key`` names
    (or a bare state dict's, or those of a training checkpoint's ``model``, ``state_dict``, ``model_ema``),
    the model and recipe it records.  ``trust``: full unpickling (``--trust-checkpoint``)."""
    p = _existing(path)
    try:
        with open(p, "rb") as fh:
            kind, data, metadata = _read(p, fh)
    except OSError as exc:
        raise UserError(f"cannot read checkpoint {p}: {exc.strerror or exc}") from None
    sha = hashlib.sha256(data).hexdigest()
    if kind == "safetensors":
        obj = _load_safetensors(p, data)
        metadata = metadata if isinstance(metadata, dict) else {}
        name, where, recipe = metadata.get("model"), ROBEVAL_METADATA, robeval_recipe(metadata)
    else:
        obj = _load_torch(p, data, trust)
        args = obj.get("args") if isinstance(obj, Mapping) else None
        values = vars(args) if isinstance(args, argparse.Namespace) else args if isinstance(args, Mapping) else {}
        name, where, recipe = values.get("model"), TRAINING_ARGS, args_recipe(values)
    del data
    state = select_state_dict(obj, key, source=f"checkpoint {p}")
    recorded = RecordedModel(name, where) if isinstance(name, str) else None
    return OpenedCheckpoint(str(path), kind, sha, state, recorded, recipe)


def _added_prefix(longer: set[str], shorter: set[str]) -> str | None:
    """The prefix that makes ``shorter`` into ``longer`` (every name of one is the prefix plus a name of
    the other), or None."""
    if not shorter or len(longer) != len(shorter):
        return None
    sample = min(shorter, key=len)
    for name in longer:
        if name.endswith(sample) and len(name) > len(sample):
            prefix = name[: len(name) - len(sample)]
            if {prefix + key for key in shorter} == longer:
                return prefix
    return None


def prefix_difference(model_keys: set[str], ckpt_keys: set[str]) -> str | None:
    """What a prefix explains when a checkpoint's names and a model's differ only by one, or None."""
    extra = _added_prefix(ckpt_keys, model_keys)
    if extra is not None:
        return f"every checkpoint name has the extra prefix {extra!r} (save the inner module's state dict, or strip it)"
    lacking = _added_prefix(model_keys, ckpt_keys)
    if lacking is not None:
        return (
            f"the checkpoint's names lack the prefix {lacking!r} that every name of the model has "
            f"(e.g. {min(ckpt_keys)} vs {lacking}{min(ckpt_keys)}): save the whole model's state dict, or add it"
        )
    return None


def _likely_cause(
    model_sd: Mapping[str, torch.Tensor], ckpt_sd: Mapping[str, torch.Tensor], shape_diff: list[str]
) -> str:
    shared = set(model_sd) & set(ckpt_sd)
    if not shared:
        prefixed = prefix_difference(set(model_sd), set(ckpt_sd))
        return prefixed or "likely a checkpoint of another architecture (no parameter names in common)"
    if shape_diff:
        for name in ("cls_token", "pos_embed", "patch_embed.proj.weight", "head.weight"):
            if name in shape_diff:
                a, b = tuple(ckpt_sd[name].shape), tuple(model_sd[name].shape)
                if name == "head.weight":
                    return f"likely a checkpoint with another number of classes ({a[0]} vs {b[0]})"
                return f"likely a checkpoint of another model size ({name}: checkpoint {a}, model {b})"
        return "likely a checkpoint of another model size"
    depth_a = {k.split(".")[1] for k in ckpt_sd if k.startswith("blocks.")}
    depth_b = {k.split(".")[1] for k in model_sd if k.startswith("blocks.")}
    if depth_a and depth_b and depth_a != depth_b:
        return f"likely a checkpoint of another depth ({len(depth_a)} blocks vs {len(depth_b)})"
    return "likely a checkpoint of another architecture"


def check_fit(own: Mapping[str, torch.Tensor], state: Mapping[str, torch.Tensor], model_name: str, source: str) -> None:
    """The one rule a checkpoint's tensors pass before anything reads their values: each tensor of ``state``
    one that loads as its namesake of ``own`` (a network's state dict, on the meta device or not) as it is
    (:func:`tensor_refusal`: first, as a nested tensor has no shape to compare), or one line naming it and
    what it is; then every key and shape of ``own`` matching ``state``, or one :class:`UserError` naming the
    first mismatches and their likely cause."""
    for name, tensor in state.items():
        mine = own.get(name)
        what = tensor_refusal(tensor, mine)
        if what is not None:
            held = (
                f"; {model_name} holds a dense tensor of {tensor_kind(mine.dtype)} ({mine.dtype})"
                if mine is not None
                else ""
            )
            raise UserError(f"{source}: tensor {name} is {what}{held}: it cannot be loaded as it is")
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shape_diff = [k for k in own if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shape_diff:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing (e.g. {', '.join(missing[:3])})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected (e.g. {', '.join(unexpected[:3])})")
        if shape_diff:
            parts.append(f"{len(shape_diff)} of other shape (e.g. {', '.join(shape_diff[:3])})")
        cause = _likely_cause(own, state, shape_diff)
        raise UserError(f"{source} does not fit {model_name}: {'; '.join(parts)} — {cause}")


def tensor_kind(dtype: torch.dtype) -> str:
    """What a dtype's values are: bool values, complex numbers, floating-point numbers (any precision) or
    integers."""
    if dtype == torch.bool:
        return "bool values"
    return (
        "complex numbers" if dtype.is_complex else "floating-point numbers" if dtype.is_floating_point else "integers"
    )


def tensor_refusal(tensor: torch.Tensor, own: torch.Tensor | None) -> str | None:
    """What ``tensor`` is when it cannot be loaded as ``own`` (None when it can): it must be dense and strided
    (not sparse, nested, quantized or meta) and, where ``own`` is given, of its kind (:func:`tensor_kind`): a
    complex tensor would lose its imaginary part in real weights, an int8 one would truncate float weights."""
    if tensor.is_nested:
        return "a nested tensor"
    if tensor.layout != torch.strided:
        return f"a {str(tensor.layout).removeprefix('torch.')} tensor, not a dense one"
    if tensor.is_quantized:
        return f"a quantized tensor ({tensor.dtype})"
    if tensor.is_meta:
        return "a meta tensor (it holds no values)"
    if own is not None and tensor_kind(tensor.dtype) != tensor_kind(own.dtype):
        return f"a tensor of {tensor_kind(tensor.dtype)} ({tensor.dtype})"
    return None


def load_checkpoint(
    net: nn.Module,
    checkpoint: str | Path | OpenedCheckpoint,
    model_name: str,
    key: str | None = None,
    trust: bool = False,
) -> OpenedCheckpoint:
    """``checkpoint`` loaded into ``net`` strictly: a file read now (:func:`open_checkpoint`, ``key`` and
    ``trust`` as there), or one already read (a run's, read once when it was admitted)."""
    opened = checkpoint if isinstance(checkpoint, OpenedCheckpoint) else open_checkpoint(checkpoint, key, trust)
    load_state_dict_strict(net, opened.state, model_name, f"checkpoint {opened.path}")
    return opened


def load_state_dict_strict(net: nn.Module, state: Mapping[str, torch.Tensor], model_name: str, source: str) -> None:
    """Load with every key and shape matching (:func:`check_fit`)."""
    check_fit(net.state_dict(), state, model_name, source)
    net.load_state_dict(state, strict=True)
