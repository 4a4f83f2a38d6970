"""Errors that reach a user: each names the thing at fault and the reason."""

from enum import StrEnum


class LoreError(Exception):
    """Base class for every error Lore reports to a user."""


class ConfigError(LoreError):
    """A setting is unknown or has a bad value."""


class LoadErrorKind(StrEnum):
    """Why a file could not be read, for statuses and HTTP codes (the reason says it in words)."""

    UNSUPPORTED = "unsupported"  # no loader for the format, or a tool the format needs is missing
    ENCRYPTED = "encrypted"
    EMPTY = "empty"
    TOO_LARGE = "too_large"
    CORRUPT = "corrupt"
    NO_TEXT = "no_text"  # a valid file without readable text (image-only and OCR off or found nothing)


class LoadError(LoreError):
    """A file could not be read; the message names the file and the reason, `kind` classifies it."""

    def __init__(self, path: str, reason: str, kind: LoadErrorKind = LoadErrorKind.CORRUPT) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.kind = kind


class NotFoundError(LoreError):
    """A named knowledge base, file or model does not exist."""


class EmbeddingMismatchError(LoreError):
    """A knowledge base was built with another embedding model or dimension."""


class MissingDependencyError(LoreError):
    """An optional dependency is not installed; the message says how to install it."""


class ConflictError(LoreError):
    """The request is well formed but the knowledge base's state refuses it (no active version yet;
    a versioned KB changes only through builds)."""


class UnavailableError(LoreError):
    """A server Lore depends on (vector store, Redis) is down for now; the request may be retried (503)."""


class ForbiddenError(LoreError):
    """The caller sees the thing but its grant does not allow the action (HTTP 403)."""


class InvalidRequestError(LoreError):
    """A request's field breaks a limit (too long, out of range): HTTP 422, nothing of it echoed back."""


def check_length(field: str, value: str, limit: int) -> None:
    """Refuse `value` over `limit` characters (HTTP 422), naming the field and limit, never echoing it."""
    if len(value) > limit:
        raise InvalidRequestError(f"{field}: {len(value)} characters, limit {limit}")


UNAVAILABLE = "a service Lore depends on is unavailable; try again shortly"


def error_status(exc: LoreError) -> int:
    """The HTTP status of a Lore error: unknown thing 404, refused by the KB's state 409, a server down 503,
    a broken limit 422, else 400."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, UnavailableError):
        return 503
    if isinstance(exc, ForbiddenError):
        return 403
    if isinstance(exc, InvalidRequestError):
        return 422
    return 409 if isinstance(exc, ConflictError) else 400


def internal_message(error_id: str) -> str:
    """What a caller is told about an unexpected failure: nothing of it but the id to quote."""
    return f"internal error; quote id {error_id} to the administrator (the details are in the server log)"
