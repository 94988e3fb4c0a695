"""The efficiency table's measurements (``robeval profile``): docs/speed.md, section The efficiency table,
says how each figure is measured and why (interleaved repeats, the fused attention kernel's FLOPs, a
fresh process per model for CPU memory).  A long-lived process also keeps freed memory.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from ..core.errors import UserError
from ..core.machine import memory_free, status_kb
from ..core.precision import float32_math
from ..core.records import EFFICIENCY_COLUMNS
from ..models import build_network, config_of, count_parameters, get_spec, parameter_count
from .attack_guards import is_out_of_memory

MIN_TIMED_SECONDS = 0.2  # each timed repeat runs enough steps to last this long


# Fused attention kernels that FlopCounterMode does not count (its CUDA kernels it does), counted as Q K^T
# and A V (2 FLOPs per multiply-add, as for a matrix product): without this entry deit-tiny counted 2.150
# GFLOPs on a CPU, 2.507 with timm's fused attention switched off.
UNCOUNTED_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *rest, **kw: sdpa_flop_count(q, k, v)
}


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of the matrix products and convolutions ``fn()`` runs (fused attention included)."""
    with FlopCounterMode(display=False, custom_mapping=UNCOUNTED_ATTENTION) as counter, torch.no_grad():
        fn()
    return int(counter.get_total_flops())


def flops_per_image(net: torch.nn.Module, input_size: tuple[int, ...], device: torch.device) -> int:
    x = torch.rand(1, *input_size, device=device)
    return count_flops(lambda: net(x))


def gflops_per_image(net: torch.nn.Module, input_size: tuple[int, ...], device: torch.device) -> float:
    """FLOPs of one image's forward pass, in G, rounded as the efficiency table shows them."""
    return round(flops_per_image(net, input_size, device) / 1e9, 4)


COUNTED: dict[tuple[str, str, tuple[int, ...], str], float] = {}  # registered models' GFLOPs in this process


def run_gflops(
    net: torch.nn.Module, size: tuple[int, ...], device: torch.device, registered: tuple[str, dict] | None
) -> float:
    """What a run stores as a model's FLOPs per image, counted as robeval profile counts them (in strict
    fp32, whatever autocast a caller opened).  ``registered``: the registered model's name and options,
    which fix its architecture: counted once per process for them, the image size and the device (a module
    the plan carries or the user's code, None, every time)."""
    name, options = registered or ("", {})
    key = (name, json.dumps(options, sort_keys=True, default=str), tuple(size), device.type)
    if registered is not None and key in COUNTED:
        return COUNTED[key]
    with float32_math():
        counted = gflops_per_image(net, tuple(size), device)
    if registered is not None:
        COUNTED[key] = counted
    return counted


def static_efficiency(names: list[str]) -> pd.DataFrame:
    """Per model what needs no timing: parameters (M) and FLOPs per image (G), counted on the CPU."""
    rows = []
    for name in names:
        net = build_network(name).eval()
        size = tuple(config_of(net).get("input_size", (3, 224, 224)))
        gflops = gflops_per_image(net, size, torch.device("cpu"))
        rows.append({"model": name, "params_M": round(parameter_count(net) / 1e6, 4), "gflops_per_image": gflops})
    return pd.DataFrame(rows, columns=EFFICIENCY_COLUMNS)


def free_bytes(device: torch.device) -> int | None:
    """Memory a pass on ``device`` can still take: on the CPU what this process can allocate (the kernel's
    free memory, or less under ``ulimit -v``), on a GPU the device's free memory and torch's cached blocks."""
    if device.type == "cpu":
        return memory_free()
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(torch.cuda.mem_get_info(device)[0] + cached)


def saved_bytes(net: torch.nn.Module, size: tuple[int, ...], batch_size: int, device: torch.device) -> int:
    """Bytes a forward of ``batch_size`` images keeps for its backward (each storage autograd saves once,
    the parameters not), with the images and their output: all held at once when the backward starts."""
    params = {p.untyped_storage().data_ptr() for p in net.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.rand(batch_size, *size, device=device, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = net(x)
    saved.pop(x.untyped_storage().data_ptr(), None)
    return sum(saved.values()) + x.nbytes + out.nbytes


def pass_bytes_per_image(net: torch.nn.Module, size: tuple[int, ...], device: torch.device) -> int:
    """What one more image adds to a forward+backward's memory, at least: a probe of two images less one
    of one (the parts that do not grow with the batch cancel)."""
    return max(saved_bytes(net, size, 2, device) - saved_bytes(net, size, 1, device), 0)


def check_fits(name: str, net: torch.nn.Module, size: tuple[int, ...], batch_size: int, device: torch.device) -> None:
    """Refuse, in one line and before any pass, a batch whose images, or whose images and the memory a
    forward+backward of it keeps (measured per image on a probe), exceed the memory free."""
    free, image = free_bytes(device), 4 * math.prod(size)
    if free is None:
        return
    if image * batch_size > free:
        raise UserError(
            f"--batch-size {batch_size}: its images alone need {image * batch_size / 2**30:,.1f} GiB, more than "
            f"the {free / 2**30:,.1f} GiB free"
        )
    per_image = image + pass_bytes_per_image(net, size, device)
    if per_image * batch_size > free:
        raise UserError(
            f"--batch-size {batch_size}: a forward+backward of {name} needs at least "
            f"{per_image * batch_size / 2**30:,.1f} GiB ({per_image / 2**20:,.2f} MiB per image: the image and "
            f"what the pass keeps for its backward, measured on a probe), more than the {free / 2**30:,.1f} GiB "
            f"free; at most {free // per_image:,} images could fit"
        )


@contextmanager
def memory_said(batch_size: int, device: torch.device) -> Iterator[None]:
    """An allocator's failure inside (torch's C++ message and traceback; a GPU's ``OutOfMemoryError``)
    said as one line: what the estimate before the passes did not see (other jobs, fragmentation)."""
    try:
        yield
    except RuntimeError as exc:
        if not is_out_of_memory(exc):
            raise
        raise UserError(
            f"--batch-size {batch_size}: the pass ran out of memory on {device} (the allocator refused"
            f"{_asked(str(exc))}); a smaller --batch-size fits"
        ) from None


def _asked(message: str) -> str:
    """`` N GiB more`` where the allocator's message says how much it was asked for."""
    found = re.search(r"allocate ([0-9]+) bytes", message)
    return f" {int(found.group(1)) / 2**30:,.1f} GiB more" if found else ""


class _Bench:
    """One model ready to be timed: its network, an input batch and the two steps."""

    def __init__(self, name: str, batch_size: int, device: torch.device) -> None:
        self.name, self.device, self.batch = name, device, batch_size
        self.net = build_network(name).eval().to(device)
        self.size = tuple(config_of(self.net).get("input_size", (3, 224, 224)))
        check_fits(name, self.net, self.size, batch_size, device)  # the batches made before are no longer free
        self.x = torch.rand(batch_size, *self.size, device=device)
        self.steps: dict[str, Callable[[], None]] = {"forward": self.forward, "forward_backward": self.forward_backward}
        self.count = {k: 1 for k in self.steps}  # steps per timed repeat, set by the warm-up
        self.times: dict[str, list[float]] = {k: [] for k in self.steps}  # img/s per repeat

    def forward(self) -> None:
        with torch.no_grad():
            self.net(self.x)

    def forward_backward(self) -> None:
        xg = self.x.clone().requires_grad_(True)
        self.net(xg).logsumexp(1).sum().backward()
        self.net.zero_grad(set_to_none=True)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _seconds(self, step: Callable[[], None], n: int = 1) -> float:
        """The time ``n`` calls of ``step`` take (on a GPU, from an empty queue to an empty queue)."""
        self._sync()
        tick = time.perf_counter()
        for _ in range(n):
            step()
        self._sync()
        return time.perf_counter() - tick

    def warm_up(self) -> None:
        """Run each step until it is warm, and size the repeats to ``MIN_TIMED_SECONDS``."""
        for kind, step in self.steps.items():
            step()
            self.count[kind] = max(1, int(MIN_TIMED_SECONDS / max(self._seconds(step), 1e-6)))

    def time_once(self, kind: str) -> None:
        n = self.count[kind]
        self.times[kind].append(self.batch * n / self._seconds(self.steps[kind], n))


def spread(values: list[float]) -> float:
    """Relative range of the repeats, in percent of their median."""
    mid = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / mid if mid else 0.0


def gpu_pass_memory(bench: _Bench) -> float:
    """Peak bytes allocated on the GPU by one forward+backward above what was allocated before it."""
    torch.cuda.synchronize(bench.device)
    before = torch.cuda.memory_allocated(bench.device)
    torch.cuda.reset_peak_memory_stats(bench.device)
    bench.forward_backward()
    torch.cuda.synchronize(bench.device)
    return float(torch.cuda.max_memory_allocated(bench.device) - before)


def cpu_pass_memory_here(name: str, batch_size: int) -> float | None:
    """Resident bytes one forward+backward adds in this process (call it in a fresh one)."""
    torch.set_num_threads(1)
    bench = _Bench(name, batch_size, torch.device("cpu"))
    bench.forward()  # first-call allocations of the runtime are not the model's
    before = status_kb("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the high-water mark (VmHWM) starts again from here
    except OSError:
        return None
    bench.forward_backward()
    peak = status_kb("VmHWM")
    return None if peak is None or before is None else float(max(peak - before, 0) * 1024)


def cpu_pass_memory(name: str, batch_size: int) -> float | None:
    """Resident bytes one forward+backward of ``name`` adds, measured in a fresh process (None off Linux)."""
    code = (
        "import json, sys; from robeval.evaluation.profiling import cpu_pass_memory_here; "
        "print(json.dumps(cpu_pass_memory_here(sys.argv[1], int(sys.argv[2]))))"
    )
    proc = subprocess.run([sys.executable, "-c", code, name, str(batch_size)], capture_output=True, text=True)
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()[-1:]  # the allocator's failure there is said as one line here
        raise RuntimeError(f"measuring the memory of {name} failed: {said}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def profile(
    models: list[str], batch_size: int = 8, device: str = "cpu", repeats: int = 5, memory: bool = True
) -> pd.DataFrame:
    """One row per model plus the percentage change of every metric against the first model.
    ``memory=False`` skips the memory of a pass (on a CPU a fresh process per model: seconds each).  A batch
    that does not fit is refused in one line before its passes; one the allocator refuses too."""
    dev = torch.device(device)
    with memory_said(batch_size, dev):
        benches = [_Bench(m, batch_size, dev) for m in models]
        for bench in benches:
            bench.warm_up()
        for _ in range(repeats):  # interleaved: drift falls on every model alike
            for kind in ("forward", "forward_backward"):
                for bench in benches:
                    bench.time_once(kind)
        rows = [_row(bench, memory, repeats) for bench in benches]
    return with_changes(pd.DataFrame(rows))


def _row(bench: _Bench, memory: bool, repeats: int) -> dict:
    """A model's row of the table, its memory measured (on a CPU in a fresh process) unless ``memory`` is False."""
    on_gpu = memory and bench.device.type == "cuda"
    pass_memory = gpu_pass_memory(bench) if on_gpu else cpu_pass_memory(bench.name, bench.batch) if memory else None
    return {
        "model": bench.name,
        "family": get_spec(bench.name).family,
        "params_M": count_parameters(bench.name) / 1e6,
        "gflops_per_image": flops_per_image(bench.net, bench.size, bench.device) / 1e9,
        "forward_img_s": statistics.median(bench.times["forward"]),
        "forward_spread_%": spread(bench.times["forward"]),
        "forward_backward_img_s": statistics.median(bench.times["forward_backward"]),
        "forward_backward_spread_%": spread(bench.times["forward_backward"]),
        "pass_memory_MB": None if pass_memory is None else pass_memory / 2**20,
        "batch_size": bench.batch,
        "device": str(bench.device),
        "repeats": repeats,
    }


def with_changes(df: pd.DataFrame) -> pd.DataFrame:
    """Each metric's change against the first model, in percent (None where either is missing or the first is 0)."""
    for col in ("params_M", "gflops_per_image", "forward_img_s", "forward_backward_img_s", "pass_memory_MB"):
        base = df[col].iloc[0]
        df[f"{col}_change_%"] = [
            None if pd.isna(v) or pd.isna(base) or base == 0 else round(100.0 * (v - base) / base, 2) for v in df[col]
        ]
    return df
