"""Safe checkpoint reading and strict loading with messages a user can act on.

Files are read with ``torch.load(weights_only=True)`` (or safetensors): nothing in a file is ever
executed.  Training checkpoints of the DeiT / Elliptical-Attention recipe hold ``args`` (an
``argparse.Namespace``) next to the weights; that one class is allowed as plain data.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import pickle
import re
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core.errors import UserError
from ..core.json_input import load_json
from ..core.printable import visible_controls

STATE_DICT_KEYS = ("model", "state_dict", "model_ema")  # tried in this order
STRIP_PREFIXES = ("module.", "_orig_mod.")
WRAPPED_PREFIX = "net."  # robeval's NormalizedModel keeps the network as .net (mean/std are not saved)
SAFE_GLOBALS: list[Any] = [argparse.Namespace]


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def weights_sha256(state: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over weights: every entry's name, dtype, shape and bytes, in name order (the same weights
    give the same digest whatever file format or wrapper prefix they were saved with)."""
    digest = hashlib.sha256()
    for key, value in sorted(state.items()):
        tensor = value.detach().to("cpu").contiguous()
        digest.update(f"{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _load_trusted(path: Path) -> Any:
    """Full unpickling, which can run code from the file: reached only through --trust-checkpoint."""
    return torch.load(path, map_location="cpu", weights_only=False)  # noqa: S614 - explicit user opt-in


ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default (zip) format
PICKLE_PROTOCOL_2_PLUS = 0x80  # the first byte of a pickle of protocol >= 2: torch's legacy format


def checkpoint_format(path: Path) -> str | None:
    """``"torch-zip"``, ``"torch-pickle"`` or ``"safetensors"`` from the file's first bytes, else None.

    Sniffing before loading keeps files of another kind (text, CSV, images) away from the unpickler,
    whose errors on them are misleading (``KeyError: 101``) or crashes."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head.startswith(ZIP_MAGIC):
        return "torch-zip"
    if head[:1] == bytes([PICKLE_PROTOCOL_2_PLUS]) and len(head) > 1 and 2 <= head[1] <= 5:
        return "torch-pickle"
    if len(head) > 8 and head[8:9] == b"{":  # safetensors: u64 little-endian header size, then JSON
        header_size = int.from_bytes(head[:8], "little")
        if 0 < header_size <= path.stat().st_size - 8:
            return "safetensors"
        return "truncated-safetensors"
    return None


# What a file may declare before anything of it is read or inflated.  torch.save stores its zip records
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


def _check_archive(path: Path) -> None:
    """A torch zip's records from its central directory alone (nothing inflated): what they declare
    inflated stays within :data:`MAX_INFLATION` times the file, so loading cannot take more memory."""
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise not_a_checkpoint(path, f"truncated or damaged zip archive: {_first_line(exc)}") from None
    stored = max(path.stat().st_size, 1)
    declared = sum(r.file_size for r in records)
    if declared > MAX_INFLATION * stored:
        raise UserError(
            f"checkpoint {path} declares {declared:,} bytes once inflated, {declared / stored:,.0f} times its "
            f"{stored:,} bytes (torch.save stores records as they are): refused before anything was inflated"
        )


def safetensors_header(path: Path) -> tuple[dict[str, Any], int]:
    """A safetensors file's JSON header, read within the file's size and the library's limit, and the
    bytes of the data section after it."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        length = int.from_bytes(fh.read(8), "little")
        if length > min(size - 8, SAFETENSORS_HEADER_LIMIT):
            raise not_a_checkpoint(path, "truncated safetensors file: its header is longer than the file")
        header = load_json(fh.read(length), f"the safetensors header of {path}")
    if not isinstance(header, dict):
        raise not_a_checkpoint(path, "damaged safetensors header: not a JSON object")
    return header, size - 8 - length


def safetensors_entries(path: Path) -> dict[str, torch.Tensor]:
    """The tensors a safetensors file declares, from its header alone, each as a stand-in of its dtype and
    shape (one element, expanded: no memory): each one's bytes (dtype x shape) must lie inside the file's
    data section, so a header that claims terabytes is one line before anything is read."""
    header, data = safetensors_header(path)
    return {name: _entry(path, name, entry, data) for name, entry in header.items() if name != METADATA}


def _entry(path: Path, name: str, entry: Any, data: int) -> torch.Tensor:
    try:
        dtype, shape, (begin, end) = entry["dtype"], tuple(int(n) for n in entry["shape"]), entry["data_offsets"]
        need = math.prod(shape) * SAFETENSORS_DTYPES[dtype].itemsize
        fits = min(shape, default=0) >= 0 and 0 <= int(begin) <= int(end) <= data and int(end) - int(begin) == need
        stand_in = torch.empty((), dtype=SAFETENSORS_DTYPES[dtype]).expand(shape) if fits else None
    except (KeyError, TypeError, ValueError, RuntimeError):  # a dimension of 0 beside one beyond 2^63 too
        raise not_a_checkpoint(
            path, f"damaged safetensors header: entry {name!r} is not dtype, shape, data_offsets"
        ) from None
    if stand_in is None:
        raise not_a_checkpoint(
            path,
            f"truncated or damaged safetensors file: its header declares tensor {name!r} of {need:,} bytes at "
            f"{begin}..{end}, and the file holds {data:,} bytes of data; refused before anything was read",
        )
    return stand_in


def _describe(path: Path) -> str:
    """What a file that is no checkpoint looks like, for the error message."""
    head = path.read_bytes()[:512]
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


def _load_safetensors(path: Path) -> Any:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # the library raises several kinds on a damaged file
        raise not_a_checkpoint(path, f"damaged or truncated safetensors file: {_first_line(exc)}") from None


def _load_torch(path: Path, trust: bool, mmap: bool = False) -> Any:
    if trust:
        # --trust-checkpoint only (issue 5): the user asked for full unpickling and was warned.
        return _load_trusted(path)
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS), warnings.catch_warnings():
            # torch's notes on what a file holds (sparse tensors validated, quantized ones deprecated): what
            # matters of them is the admission's one line (check_fit)
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
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


def _load_file(path: Path, trust: bool) -> Any:
    kind = checkpoint_format(path)
    if kind == "truncated-safetensors":
        raise not_a_checkpoint(path, "truncated safetensors file: its header is longer than the file")
    if kind == "safetensors":
        return _load_safetensors(path)
    if kind is None:
        raise not_a_checkpoint(path, _describe(path))
    return _load_torch(path, trust)


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


def check_checkpoint_file(path: str | Path) -> Path:
    """The file exists, is a checkpoint by its first bytes, and what its header or archive records
    declare fits the file (:func:`safetensors_entries`, :func:`_check_archive`): nothing is loaded."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise UserError(f"checkpoint {p} is a symbolic link to nothing (a missing target or a loop)")
    if not p.exists():
        raise UserError(f"checkpoint file not found: {p}")
    if not p.is_file():
        raise UserError(f"checkpoint path is not a file: {p}")
    if p.stat().st_size == 0:
        raise not_a_checkpoint(p, "the file is empty")
    try:
        kind = checkpoint_format(p)
        if kind is None:
            raise not_a_checkpoint(p, _describe(p))
        if kind == "truncated-safetensors":
            raise not_a_checkpoint(p, "truncated safetensors file: its header is longer than the file")
        if kind == "torch-zip":
            _check_archive(p)
        elif kind == "safetensors":
            safetensors_entries(p)
    except OSError as exc:
        raise UserError(f"cannot read checkpoint {p}: {exc.strerror or exc}") from None
    return p


def read_checkpoint(
    path: str | Path, key: str | None = None, trust: bool = False
) -> tuple[dict[str, torch.Tensor], str]:
    """Read weights from ``path``; returns (state dict, SHA-256 of the file)."""
    return read_weights(path, key, trust), sha256_of(path)


def read_weights(path: str | Path, key: str | None = None, trust: bool = False) -> dict[str, torch.Tensor]:
    """The weights ``path`` holds (a bare state dict, or ``key`` of a training checkpoint)."""
    p = check_checkpoint_file(path)
    return select_state_dict(_load_file(p, trust), key, source=f"checkpoint {p}")


def checkpoint_object(p: Path, trust: bool) -> Any:
    """What a torch checkpoint file holds, read as little as its format allows: a torch zip memory-mapped
    (its pickle unpickled under the same rules, the tensors not read), an older torch file loaded."""
    if checkpoint_format(p) == "torch-zip" and not trust:
        try:
            return _load_torch(p, trust, mmap=True)
        except UserError:  # what memory-mapping refuses (a file of an older torch) is said by a plain read
            pass
    return _load_file(p, trust)


def inspect_checkpoint(path: str | Path, key: str | None = None, trust: bool = False) -> dict[str, torch.Tensor]:
    """The weights ``read_checkpoint`` would give, as far as their names, shapes, dtypes and layouts go, read
    as little as the format allows: a safetensors file's header alone (stand-ins: :func:`safetensors_entries`),
    else :func:`checkpoint_object`."""
    p = check_checkpoint_file(path)
    if checkpoint_format(p) == "safetensors":
        obj: Any = safetensors_entries(p)
    else:
        obj = checkpoint_object(p, trust)
    return select_state_dict(obj, key, source=f"checkpoint {p}")


@dataclass(frozen=True)
class RecordedModel:
    """The model a checkpoint says it holds: ``name`` as ``where`` in the file records it.  robeval's
    metadata (safetensors ``model``, written by train-demo and the zoo's scripts) names robeval models;
    a training checkpoint's ``args.model`` (DeiT's and timm's training scripts) names a model of that
    code's own registry (the Elliptical authors' DeiT-Elliptical is ``deit_mahala_overlayers_tiny_patch16_
    224_wrapper``), which robeval can compare with another file's, not with its own names."""

    name: str
    where: str  # ROBEVAL_METADATA or TRAINING_ARGS

    @property
    def names_robeval_model(self) -> bool:
        return self.where == ROBEVAL_METADATA


ROBEVAL_METADATA, TRAINING_ARGS = "metadata", "args.model"


def recorded_model(path: str | Path, trust: bool = False) -> RecordedModel | None:
    """The model ``path`` records that it holds (:class:`RecordedModel`), or None where it records none
    (a bare state dict, a safetensors file without robeval's metadata)."""
    p = check_checkpoint_file(path)
    if checkpoint_format(p) == "safetensors":
        metadata = safetensors_header(p)[0].get(METADATA)
        name = metadata.get("model") if isinstance(metadata, dict) else None
        return RecordedModel(name, ROBEVAL_METADATA) if isinstance(name, str) else None
    obj = checkpoint_object(p, trust)
    args = obj.get("args") if isinstance(obj, Mapping) else None
    name = vars(args).get("model") if isinstance(args, argparse.Namespace) else None
    if isinstance(args, Mapping):
        name = args.get("model")
    return RecordedModel(name, TRAINING_ARGS) if isinstance(name, str) else None


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


def load_state_dict_strict(net: nn.Module, state: Mapping[str, torch.Tensor], model_name: str, source: str) -> None:
    """Load with every key and shape matching (:func:`check_fit`)."""
    check_fit(net.state_dict(), state, model_name, source)
    net.load_state_dict(state, strict=True)
