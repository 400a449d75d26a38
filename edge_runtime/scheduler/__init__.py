"""Where an LLM request is answered: the scheduler's decision and the responders behind it."""
from .local_queue import LocalForecast, LocalQueue, LocalRates, LocalSlot
from .predictor import TtftPredictor
from .scheduler import CloudView, Decision, Plan, Scheduler

__all__ = ["CloudView", "Decision", "LocalForecast", "LocalQueue", "LocalRates", "LocalSlot",
           "Plan", "Scheduler", "TtftPredictor"]
