"""Typed errors shared by every stage.

Every error carries a machine-readable ``code``, the ``stage`` it came from,
whether retrying (or falling back) can help (``retryable``) and a ``hint``
that names the fix, so the CLI and the API can print one clear line.
"""
from __future__ import annotations


class EdgeError(Exception):
    """Base class of all edge-runtime errors."""

    code: str = "internal"
    stage: str = "runtime"
    retryable: bool = False
    http_status: int = 500

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None,
                 stage: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code
        if stage is not None:
            self.stage = stage
        if retryable is not None:
            self.retryable = retryable

    def one_line(self) -> str:
        text = f"{self.stage}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def to_dict(self) -> dict:
        return {"code": self.code, "stage": self.stage, "message": self.message,
                "hint": self.hint, "retryable": self.retryable}


class ConfigError(EdgeError):
    code, stage, http_status = "bad_config", "config", 500


class BadInputError(EdgeError):
    """The request itself is unusable (empty, too long, not UTF-8, malformed)."""

    code, stage, http_status = "bad_input", "input", 400


class ModelMissingError(EdgeError):
    """A model file is absent or fails verification; the hint names the command that fixes it."""

    code, stage, http_status = "model_missing", "models", 503


class ModelLoadError(EdgeError):
    code, stage, http_status = "model_load", "models", 503


class ProviderError(EdgeError):
    """An execution provider (TensorRT, CUDA) failed; the next provider may work."""

    code, stage, retryable, http_status = "provider_failed", "llm", True, 503


class CacheTierError(EdgeError):
    code, stage, retryable = "cache_tier_failed", "cache", True


class CloudUnavailableError(EdgeError):
    """The cloud reasoner could not answer (down, slow, refused, protocol error)."""

    code, stage, retryable, http_status = "cloud_unavailable", "cloud_link", True, 503


class CancelledError(EdgeError):
    code, stage = "cancelled", "pipeline"


class OverloadedError(EdgeError):
    """Refused at once because no place can start the answer in time; ``retry_after_s``
    is when trying again is worth it (HTTP ``Retry-After``)."""

    code, stage, retryable, http_status = "overloaded", "pipeline", True, 503

    def __init__(self, message: str, *, retry_after_s: float = 1.0, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.retry_after_s = max(0.0, float(retry_after_s))

    def to_dict(self) -> dict:
        return {**super().to_dict(), "retry_after_s": self.retry_after_s}


def run_command(fn, args, prog: str = "error") -> int:
    """Run a CLI command: typed errors become one line on stderr and an exit code
    (2 = bad input or configuration, 1 = anything else the runtime reports, 130 = Ctrl-C)."""
    import sys
    try:
        return int(fn(args) or 0)
    except (BadInputError, ConfigError) as exc:
        print(f"{prog}: {exc.one_line()}", file=sys.stderr)
        return 2
    except EdgeError as exc:
        print(f"{prog}: {exc.one_line()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
