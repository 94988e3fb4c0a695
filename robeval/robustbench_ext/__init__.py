"""What extends the RobustBench protocol: data sets and subsets, protocols, the engine, metrics.

Import the modules themselves (``robeval.robustbench_ext.engine``, ``.protocols``, ...): this package
imports nothing, so that torch-free parts (the protocols) load without the engine.
"""
