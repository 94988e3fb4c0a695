"""The engine: what a run evaluates (config, protocols, plan), the checks before it (preflight), one
model's run (model_run), its attacks on each batch (batch_attacks) and what guards every attack call
(attack_guards: seeds, pass counting, out-of-memory halving, the threat-model check), a unit's records
(unit_records), the store it writes to as a type (run_store), shifted conditions, distributed workers,
progress, the run's description, and a stored run's configuration rebuilt (stored_config)."""
