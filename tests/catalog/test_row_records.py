"""The one row-to-record copy: every field from its column, through the record's converters."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

from lore.catalog.records import RowRecord, json_or_none


@dataclass(frozen=True, slots=True)
class _Record(RowRecord):
    """A record with a plain and a JSON column."""

    name: str
    data: dict[str, Any] | None

    CONVERT: ClassVar = {"data": json_or_none}


def test_from_row_copies_fields_through_converters() -> None:
    assert _Record.from_row(SimpleNamespace(name="a", data='{"x": 1}', extra=1)) == _Record("a", {"x": 1})
    assert _Record.from_row(SimpleNamespace(name="b", data=None)) == _Record("b", None)
