"""Results: what is read back from the store (each module's purpose: docs/layout.md);
robeval.open_run (robeval.results_api) is the one-line way in."""
