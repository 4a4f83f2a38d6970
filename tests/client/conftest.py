"""The service fixtures of tests/api (a real sample KB with a second tenant's document, keys, a live
uvicorn); with LORE_CLIENT_TEST_URL set, an external server's instead (tests/client/remote.py)."""

import os

if os.environ.get("LORE_CLIENT_TEST_URL"):  # a client-only install: nothing of the engine is imported
    from tests.client.remote import keys, live
else:
    from tests.api.conftest import api_home, app, keys, live, lore  # noqa: F401  (pytest fixtures)
