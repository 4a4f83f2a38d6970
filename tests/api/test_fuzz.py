"""A small bounded schemathesis run over every operation of `/openapi.json` (admin key, the real app):
no generated request, valid or not, may get a server error. `make fuzz` runs a larger one against
a real `lore serve` (benchmarks/fuzz.py).

Hypothesis drives schemathesis' strategies directly (its pytest plugin does not support pytest 9).
"""

from __future__ import annotations

import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.schemas import APIOperation

from tests.api.conftest import Keys, auth

EXAMPLES = 3  # per operation, generation mode and KB name: a bounded run (about 250 requests)


def test_no_server_errors(app: FastAPI, keys: Keys) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25  # every route of the service is described
    calls: list[str] = []
    errors: list[str] = []
    runs = [(op, mode, None) for op in operations for mode in GenerationMode]
    # The sample KB by name as well, so that requests get past "not found" into the handlers.
    runs += [(op, mode, {"kb": "hb"}) for op in operations if "{kb}" in op.path for mode in GenerationMode]
    for operation, mode, path in runs:
        _fuzz(operation, mode, path, keys.admin, calls, errors)
    print(f"fuzz: {len(calls)} requests over {len(operations)} operations, {len(errors)} server errors")
    assert len(calls) >= 2 * len(operations) and not errors, errors


def _fuzz(
    operation: APIOperation,
    mode: GenerationMode,
    path: dict[str, str] | None,
    key: str,
    calls: list[str],
    errors: list[str],
) -> None:
    """Call one operation with a few generated cases; server errors are collected with a curl line."""

    @given(case=operation.as_strategy(mode, path_parameters=path))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def call(case: schemathesis.Case) -> None:
        response = case.call(headers=auth(key))
        calls.append(operation.label)
        if response.status_code >= 500:
            errors.append(f"{response.status_code} {case.as_curl_command()}: {response.text[:300]}")

    try:
        call()
    except Unsatisfiable:  # nothing to make invalid (no parameters, no body): only positive cases
        assert mode is GenerationMode.NEGATIVE, operation.label
