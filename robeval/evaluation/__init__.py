"""The engine: a run's options judged and planned, the loop over models, members, batches, eps and
attacks, and the run in progress (each module's purpose: docs/layout.md)."""
