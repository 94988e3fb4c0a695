"""The efficiency table: parameters, FLOPs per image, forward and forward+backward throughput, and
peak memory of each model, side by side with the change against the first model (the paper's
efficiency table for DeiT vs DeiT-Elliptical).

FLOPs come from PyTorch's own ``torch.utils.flop_counter.FlopCounterMode`` (one multiply-add = 2
FLOPs; fused attention is counted).  Peak memory: ``torch.cuda.max_memory_allocated`` on GPU; on
CPU the process's resident high-water mark (``VmHWM``), reset before each model where Linux allows.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from .models import build_network, count_parameters, get_spec


def _reset_cpu_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def cpu_peak_bytes() -> int | None:
    """The process's resident-memory high-water mark (Linux ``VmHWM``), or None where unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def flops_per_image(net: torch.nn.Module, input_size: tuple[int, ...], device: torch.device) -> int:
    x = torch.rand(1, *input_size, device=device)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net(x)
    return int(counter.get_total_flops())


def _throughput(step, batch: int, repeats: int, device: torch.device, min_seconds: float = 0.5) -> float:
    step()  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    done, tick = 0, time.perf_counter()
    while done < repeats or time.perf_counter() - tick < min_seconds:
        step()
        done += 1
        if done >= 50 * repeats:
            break
    if device.type == "cuda":
        torch.cuda.synchronize()
    return batch * done / (time.perf_counter() - tick)


def profile_model(name: str, batch_size: int = 8, device: str | torch.device = "cpu", repeats: int = 3) -> dict:
    device = torch.device(device)
    net = build_network(name).eval().to(device)
    size = tuple(net.pretrained_cfg.get("input_size", (3, 224, 224)))
    x = torch.rand(batch_size, *size, device=device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    cpu_reset = _reset_cpu_peak() if device.type == "cpu" else False

    def forward() -> None:
        with torch.no_grad():
            net(x)

    def forward_backward() -> None:
        xg = x.clone().requires_grad_(True)
        net(xg).logsumexp(1).sum().backward()
        net.zero_grad(set_to_none=True)

    fwd = _throughput(forward, batch_size, repeats, device)
    fwd_bwd = _throughput(forward_backward, batch_size, repeats, device)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else (cpu_peak_bytes() if cpu_reset else None)
    return {"model": name, "family": get_spec(name).family, "params_M": count_parameters(name) / 1e6,
            "gflops_per_image": flops_per_image(net, size, device) / 1e9, "forward_img_s": fwd,
            "forward_backward_img_s": fwd_bwd, "peak_memory_MB": None if peak is None else peak / 2 ** 20,
            "batch_size": batch_size, "device": str(device)}


def profile(models: list[str], batch_size: int = 8, device: str = "cpu", repeats: int = 3) -> pd.DataFrame:
    """One row per model plus percentage change of every metric against the first model."""
    rows = [profile_model(m, batch_size, device, repeats) for m in models]
    df = pd.DataFrame(rows)
    for col in ("params_M", "gflops_per_image", "forward_img_s", "forward_backward_img_s", "peak_memory_MB"):
        base = df[col].iloc[0]
        df[f"{col}_change_%"] = [None if (v is None or base in (None, 0) or pd.isna(v) or pd.isna(base))
                                 else round(100.0 * (v - base) / base, 2) for v in df[col]]
    return df


def to_markdown(df: pd.DataFrame) -> str:
    def fmt(value, change, digits=2):
        if value is None or pd.isna(value):
            return "n/a"
        text = f"{value:,.{digits}f}"
        return text if change is None or pd.isna(change) or df.index[0] == -1 else f"{text} ({change:+.1f}%)"

    lines = [f"Efficiency (batch {df['batch_size'].iloc[0]}, {df['device'].iloc[0]}; change vs {df['model'].iloc[0]})", "",
             "| model | params (M) | GFLOPs / image | forward img/s | fwd+bwd img/s | peak memory (MB) |",
             "|---|---:|---:|---:|---:|---:|"]
    for i, r in df.iterrows():
        first = i == df.index[0]
        cell = (lambda c, d=2: fmt(r[c], None if first else r[f"{c}_change_%"], d))
        lines.append(f"| {r['model']} | {cell('params_M')} | {cell('gflops_per_image', 3)} | {cell('forward_img_s', 1)} | "
                     f"{cell('forward_backward_img_s', 1)} | {cell('peak_memory_MB', 0)} |")
    return "\n".join(lines) + "\n"
