"""The engine: what a run evaluates (config, protocols, plan), the checks before it, one model's run, shifted conditions, attack calls, distributed workers, progress and the run's description."""
