"""The engine: what a run evaluates (config, protocols, plan), the checks before it (preflight), the
loop over models, batches, eps and attacks (engine), the run in progress (session: created or
resumed, units written, workers gathered), one model loaded with its attacks and batches (model_run),
one unit's records and the steps around it (units: the cascade, the fp32 re-check, curves, the
minimum-norm search), what guards every attack call (attack_guards), the store it writes to as a type
(run_store), shifted conditions, distributed workers, progress and the run's description (run_info); a stored
run's configuration is read back by robeval.options.EvalConfig.from_identity and judged again by config.remake)."""
