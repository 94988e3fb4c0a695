"""The fast protocol, whole: an audited screening pass instead of AutoAttack's run (docs/protocols.md).

* :mod:`.audit` -- its facts and rules, torch-free: the pass, the audit's stages, the seeded sample of
  survivors the audit attacks, and what the audit's breaks escalate;
* :mod:`.steps` -- its two passes, as the engine's one unit loop runs them (robeval.evaluation.engine;
  the loop itself: robeval.evaluation.session.Session.units);
* :mod:`.bound` -- the bound the audit puts on AutoAttack's robust accuracy;
* :mod:`.summary` -- the audit read back from a run's records: summary columns and the lines every table,
  check and report prints.

Its registration (the attacks it runs, its pass and stages) is one entry of the protocols' registry
(robeval.evaluation.protocols); its audit units' names are the record schema's (robeval.core.records).
Importing this package imports none of its modules (the read commands import :mod:`.summary` alone,
without torch).
"""
