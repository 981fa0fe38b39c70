"""Tuners (AutoTVM's ``autotvm.tuner``): grid, random, genetic and model-based (xgboost)."""

from .search import GATuner, GridSearchTuner, RandomTuner
from .tuner import Tuner
from .xgboost_tuner import XGBTuner

__all__ = ["GATuner", "GridSearchTuner", "RandomTuner", "Tuner", "XGBTuner"]
