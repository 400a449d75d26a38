"""Gateway backends; each is imported only when chosen (``cloud_fallback.cli.make_backend``)."""
from .base import Backend, BackendError

__all__ = ["Backend", "BackendError"]
