"""What extends the RobustBench protocol: data sets and subsets, protocols, the engine, metrics."""

from .data import EvalData, balanced_subset, digits_split, load_data
from .engine import AttackBoundsError, EvalConfig, EvalResult, run_evaluation
from .protocols import PROTOCOLS, Protocol, get_protocol

__all__ = ["AttackBoundsError", "EvalConfig", "EvalData", "EvalResult", "PROTOCOLS", "Protocol", "balanced_subset",
           "digits_split", "get_protocol", "load_data", "run_evaluation"]
