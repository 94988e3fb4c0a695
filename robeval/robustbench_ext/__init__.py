"""What extends RobustBench: its fixed ImageNet subset (shipped as data), its model names
(``robustbench:<name>``: importing this package registers them), and later its ``benchmark()``
signature and leaderboard format."""

from . import models  # noqa: F401  (registers the robustbench: prefix and its weight source)
