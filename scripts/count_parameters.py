#!/usr/bin/env python
"""Write robeval/models/parameter_counts.py: every registered model's parameter count, counted on the
meta device (no memory, no weights).  Run it after adding or changing a registered model; the
registry test says when a count is stale.

    .venv/bin/python scripts/count_parameters.py
"""

from __future__ import annotations

from pathlib import Path

from robeval.models import count_parameters, list_models

TARGET = Path(__file__).resolve().parents[1] / "robeval" / "models" / "parameter_counts.py"


def main() -> None:
    text = TARGET.read_text()
    head = text[: text.index("PARAMETER_COUNTS")]
    rows = [f'    "{s.name}": {count_parameters(s.name)},' for s in list_models() if s.package == "robeval"]
    TARGET.write_text(head + "PARAMETER_COUNTS: dict[str, int] = {\n" + "\n".join(rows) + "\n}\n")
    print(f"wrote {len(rows)} counts to {TARGET}")


if __name__ == "__main__":
    main()
