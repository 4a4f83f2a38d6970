"""Optional OpenTelemetry export of each request's event stream (the `otel` extra): nothing of OpenTelemetry
is imported unless an OTLP endpoint is configured."""

from __future__ import annotations

import threading
from typing import Protocol

from lore.errors import ConfigError
from lore.events import Subscriber

INSTALL_HINT = "pip install 'lore-kb[otel]'"


class Exporter(Protocol):
    """What exports requests: a subscriber per request, and a flush of what is queued."""

    def subscriber(self, name: str) -> Subscriber: ...
    def flush(self, timeout_ms: int = 30000) -> bool: ...


_EXPORTERS: dict[tuple[str, str], Exporter] = {}
_LOCK = threading.Lock()


def exporter(endpoint: str | None, service_name: str = "lore") -> Exporter | None:
    """The process's OTLP/HTTP exporter to the traces URL `endpoint` (None: export is off); one per URL.
    Raises ConfigError, with the install hint, when OpenTelemetry is not installed."""
    if not endpoint:
        return None
    with _LOCK:
        made = _EXPORTERS.get((endpoint, service_name))
        if made is None:
            try:
                from lore.telemetry.otlp import OtlpExporter
            except ImportError as exc:
                raise ConfigError(
                    f"telemetry: an OTLP endpoint is set ({endpoint}) but OpenTelemetry is not installed "
                    f"({exc.name}): {INSTALL_HINT}"
                ) from exc
            made = _EXPORTERS[(endpoint, service_name)] = OtlpExporter(endpoint, service_name)
    return made
