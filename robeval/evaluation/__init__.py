"""The engine: what a run evaluates (config, protocols, plan), the checks before it (preflight), one
model's run (model_run), its attacks on each batch (batch_attacks) and what guards every attack call
(attack_guards: seeds, pass counting, out-of-memory halving, the threat-model check), a unit's records
(unit_records), the store it writes to as a type (run_store), shifted conditions, distributed workers,
progress and the run's description (a stored run's configuration is read back by
robeval.options.EvalConfig.from_identity and judged again by config.remake)."""
