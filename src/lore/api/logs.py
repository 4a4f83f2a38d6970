"""Keep secrets out of server logs: the WebSocket `?access_token=` key is redacted from uvicorn's lines."""

from __future__ import annotations

import logging
import re

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
            record.args = tuple(redact(a) if isinstance(a, str) and "access_token=" in a else a
                                for a in record.args)
        return True


def install_log_redaction() -> None:
    """Add the filter to uvicorn's loggers once (idempotent: every app may call it)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, AccessTokenFilter) for f in logger.filters):
            logger.addFilter(AccessTokenFilter())
