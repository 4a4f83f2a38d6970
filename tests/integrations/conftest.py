"""The service fixtures of tests/api (a real sample KB with a second tenant's document, keys, a live
uvicorn)."""

from tests.api.conftest import api_home, app, keys, live, lore  # noqa: F401  (pytest fixtures)
