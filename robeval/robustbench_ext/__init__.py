"""What extends RobustBench (docs/layout.md, section RobustBench).  Its model names
(``robustbench:<dataset>/<threat model>/<entry>``) are a prefix registered here, their module imported
when such a name is first resolved.  ``benchmark`` itself runs robeval's engine, two layers above this
package: it is :func:`robeval.benchmark` (docs/robustbench.md).
"""

from ..models.registry import PREFIXES, Lazy
from ..models.weights import WEIGHT_SOURCES

PREFIXES.add("robustbench", Lazy(f"{__name__}.models:robustbench_spec"))
WEIGHT_SOURCES["robustbench"] = f"{__name__}.models:robustbench_weights"
