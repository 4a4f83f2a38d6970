"""`live` and `keys` for the client tests from a `lore serve` started elsewhere (LORE_CLIENT_TEST_URL and
LORE_CLIENT_TEST_KEYS, a JSON object of the four keys' secrets), with no engine imported: how
tests/deploy/test_client_only.py runs tests/client/test_client.py in a client-only install."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

URL_VAR = "LORE_CLIENT_TEST_URL"
KEYS_VAR = "LORE_CLIENT_TEST_KEYS"
KEY_NAMES = ("admin", "staff", "tenant_b", "revoked")  # as tests.api.conftest.Keys
# Read on import: the suite's autouse fixture clears LORE_* variables before each test.
URL = os.environ.get(URL_VAR, "")
KEYS = os.environ.get(KEYS_VAR, "")


@pytest.fixture(scope="session")
def live() -> SimpleNamespace:
    """The external server (its `url`), standing in for the in-process `LiveServer`."""
    return SimpleNamespace(url=URL.rstrip("/"))


@pytest.fixture(scope="session")
def keys() -> SimpleNamespace:
    """The server's keys, attribute for attribute as the in-process `Keys`."""
    secrets = json.loads(KEYS)
    assert set(secrets) == set(KEY_NAMES), f"{KEYS_VAR} must give exactly {KEY_NAMES}"
    return SimpleNamespace(**secrets)
