"""Errors that reach a user: each names the thing at fault and the reason."""


class LoreError(Exception):
    """Base class for every error Lore reports to a user."""


class ConfigError(LoreError):
    """A setting is unknown or has a bad value."""


class LoadError(LoreError):
    """A file could not be read; the message names the file and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotFoundError(LoreError):
    """A named knowledge base, file or model does not exist."""


class EmbeddingMismatchError(LoreError):
    """A knowledge base was built with another embedding model or dimension."""


class MissingDependencyError(LoreError):
    """An optional dependency is not installed; the message says how to install it."""


class ConflictError(LoreError):
    """The request is well formed but the knowledge base's state refuses it (no active version yet;
    a versioned KB changes only through builds)."""


class ForbiddenError(LoreError):
    """The caller sees the thing but its grant does not allow the action (HTTP 403)."""
