"""What extends RobustBench: its fixed ImageNet subset (shipped as data), its data sets and threat models
as data (AutoAttack's versions are protocols: robeval.evaluation.protocols), its model names (``robustbench:<dataset>/<threat model>/<entry>``:
a prefix registered here, its module imported when such a name is first resolved), the model-info JSON of its leaderboards, and its
``benchmark()`` arguments as a robeval run.

``benchmark`` itself runs robeval's engine, two layers above this package: it is
:func:`robeval.benchmark` (so a RobustBench user changes one import: ``from robeval import benchmark``).
"""

from ..models.registry import PREFIXES, Lazy
from ..models.weights import WEIGHT_SOURCES

PREFIXES.add("robustbench", Lazy(f"{__name__}.models:robustbench_spec"))
WEIGHT_SOURCES["robustbench"] = f"{__name__}.models:robustbench_weights"
