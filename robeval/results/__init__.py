"""Results: the store (SQLite), summaries of the per-example records, the soundness checks (one registry),
reading stored runs back, and stored examples crafted again and checked (recrafting); robeval.open_run
(robeval.results_api) is the one-line way in."""
