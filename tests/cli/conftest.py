"""The service fixtures of tests/api (a real sample KB with a second tenant's document, keys, a live
uvicorn), for the tests that run a CLI command both in-process and against a server."""

from tests.api.conftest import api_home, app, keys, live, lore  # noqa: F401  (pytest fixtures)
