"""Robustness to corruptions and distribution shift in the same runs as attacks (docs/shift.md; its
modules: docs/layout.md, section Shifts)."""
