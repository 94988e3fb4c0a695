"""A run as read back from the store: its configuration, run.json facts, records and summary (its
own module so that what reads runs, loading and comparing alike, shares the type without a cycle)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass
class StoredRun:
    run_id: str
    info: dict[str, Any]
    config: dict[str, Any]
    records: pd.DataFrame
    summary: pd.DataFrame
    status: str = "finished"  # running | finished | interrupted | failed (the store's)

    @property
    def protocol(self) -> str:
        return self.config["protocol"]

    @property
    def data(self) -> str:
        return self.info.get("data", {}).get("data", self.config.get("data", ""))
