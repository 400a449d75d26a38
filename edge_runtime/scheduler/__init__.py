from .scheduler import Decision, Scheduler, TtftPredictor

__all__ = ["Decision", "Scheduler", "TtftPredictor"]
