"""The HTTP service: REST, SSE and WebSocket streams, and an OpenAI-compatible chat endpoint."""

from lore.api.app import create_app

__all__ = ["create_app"]
