"""Results: the store (SQLite), summaries of the per-example records, soundness flags from summaries, and reading stored runs back."""
