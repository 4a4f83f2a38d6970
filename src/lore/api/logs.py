"""Server logs: the WebSocket `?access_token=` key redacted from uvicorn's lines, and (a config switch)
one JSON object a line carrying the request's trace id."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

from lore.events import trace_id

_TOKEN = re.compile(r"(access_token=)[^&\s\"']+")
REDACTED = "[redacted]"
# uvicorn logs HTTP requests on `uvicorn.access` and WebSocket handshakes ("WebSocket /path?..." [accepted])
# on `uvicorn.error`
LOGGERS = ("uvicorn.access", "uvicorn.error")


def redact(text: str) -> str:
    """`text` with every `access_token=` value replaced."""
    return _TOKEN.sub(rf"\g<1>{REDACTED}", text)


class AccessTokenFilter(logging.Filter):
    """Rewrites a record's message arguments so no `access_token` value reaches any handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "access_token=" in record.msg:
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact(a) if isinstance(a, str) and "access_token=" in a else a for a in record.args
            )
        return True


def install_log_redaction() -> None:
    """Add the filter to uvicorn's loggers once (idempotent: every app may call it)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, AccessTokenFilter) for f in logger.filters):
            logger.addFilter(AccessTokenFilter())


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "trace_id", ...}` per line; exceptions as `exc_info` text."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "trace_id": getattr(record, "trace_id", None) or trace_id(),
        }
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class TraceIdFilter(logging.Filter):
    """Stamps each record with the trace id of the request it was logged in."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "trace_id", None):
            record.trace_id = trace_id()
        return True


def configure_logging(json_lines: bool, level: str = "INFO") -> dict[str, object] | None:
    """Set up `lore.*` logging; with `json_lines`, a uvicorn `log_config` that logs everything as JSON."""
    if not json_lines:
        logging.getLogger("lore").setLevel(level)
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "lore.api.logs.JsonFormatter"}},
        "filters": {"trace": {"()": "lore.api.logs.TraceIdFilter"}},
        "handlers": {
            "stdout": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["trace"],
                "stream": "ext://sys.stdout",
            }
        },
        "root": {"handlers": ["stdout"], "level": level},
        "loggers": {
            name: {"handlers": [], "propagate": True, "level": level}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "lore")
        },
    }


def install_json_logging(level: str = "INFO") -> None:
    """JSON lines on stdout for this process's root logger (what `log_config` does under uvicorn)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(TraceIdFilter())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
