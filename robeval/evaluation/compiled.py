"""Compiled model passes (``--compile``): docs/speed.md, section Compiled passes, says how and why
(bucket sizes, inference mode on a copy, ``auto`` on CUDA only).  A pass that fails to build runs
eagerly: compiling is a speed-up, never a reason to stop.  Compiled passes compute the same functions
in another order of floating-point operations; tests/test_compiled.py checks their records equal to
eager ones.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from ..core.errors import OneLineWarning

SMALLEST_BUCKET = 8
BACKEND = "inductor"  # what torch.compile builds with (tests may choose a lighter one)


def compiles(mode: str, device: torch.device) -> bool:
    """Whether ``--compile MODE`` compiles on ``device`` (the module docstring)."""
    return mode == "on" or (mode == "auto" and device.type == "cuda")


def warn_compiling_on_cpu(mode: str, device: torch.device) -> None:
    """One ``warning:`` line when ``--compile on`` asks for what ``auto`` leaves off on the CPU."""
    if mode == "on" and device.type == "cpu":
        warnings.warn(
            OneLineWarning(
                "--compile on compiles on the CPU, where it was measured not to pay: compiling every pass "
                "costs several times an eager run until the compile cache is warm, and a warm cache is still "
                "slower (benchmarks/RESULTS.md); --compile auto (the default) leaves it off on the CPU"
            ),
            stacklevel=2,
        )


def buckets(batch_size: int) -> list[int]:
    """The batch sizes graphs are made for: ``batch_size`` and its halvings down to :data:`SMALLEST_BUCKET`."""
    sizes, size = [], max(1, batch_size)
    while size > SMALLEST_BUCKET:
        sizes.append(size)
        size = (size + 1) // 2
    return sorted({*sizes, min(max(1, batch_size), SMALLEST_BUCKET)})


class CompiledPasses(nn.Module):
    """``net``'s passes compiled, each batch padded to its bucket (the module docstring)."""

    def __init__(self, net: nn.Module, batch_size: int) -> None:
        super().__init__()
        self.net = net
        self.sizes = buckets(batch_size)
        self.compiled = torch.compile(net, backend=BACKEND, dynamic=False)
        self.eager = False  # set when a compiled pass failed to build: eager from then on
        limit = 4 * len(self.sizes) + 8  # bucket x grad mode x precision, with room for the re-check's
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, limit)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.eager:
            return self.net(x)
        largest = self.sizes[-1]
        if x.shape[0] > largest:  # more than a batch at once: bucket-sized chunks
            return torch.cat([self(chunk) for chunk in x.split(largest)])
        try:
            return self._padded(x) if torch.is_grad_enabled() and x.requires_grad else self._without_grad(x)
        except Exception as exc:  # noqa: BLE001 - the compiler's failures are many; the eager pass is the answer
            self.eager = True
            said = f"--compile: {type(exc).__name__} while compiling; running eagerly"
            warnings.warn(OneLineWarning(said), stacklevel=2)
            return self.net(x)

    def _padded(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` through the graph of its bucket, padded with detached copies of its last image."""
        n = x.shape[0]
        size = next(s for s in self.sizes if s >= n)
        padded = torch.cat([x, x[-1:].detach().expand(size - n, *x.shape[1:])]) if size > n else x
        return self.compiled(padded)[:n]

    def _without_grad(self, x: torch.Tensor) -> torch.Tensor:
        """A pass no gradient flows through (clean logits, queries, checks, every pass under no_grad or
        inference mode): always under inference mode on a copy, so that one graph per bucket serves them
        all (a tensor made in inference mode and one made outside it are two graphs to torch.compile), and
        its logits a plain tensor the caller may change in place."""
        with torch.inference_mode():
            out = self._padded(x.clone())
        return out.clone()


def graphs_made() -> int:
    """Graphs torch.compile has made in this process so far (each a compile; a recompile is one more)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])
