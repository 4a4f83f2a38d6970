"""The attack matrix's second half of the routes (tests/api/test_attack_matrix.py holds the first, the
calls and the route check), in a file of its own so that xdist runs it beside the first."""

from __future__ import annotations

import pytest

from tests.api.matrix_world import World, world_fixture  # noqa: F401 - the module's fixture `world`
from tests.api.test_attack_matrix import check_route, matrix_part, route_id


@pytest.mark.parametrize("route", matrix_part(1), ids=route_id)
def test_attack_matrix(world: World, route: tuple[str, str]) -> None:
    check_route(world, route)
