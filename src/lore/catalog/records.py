"""The one row-to-record copy: a frozen dataclass record filled field by field from its ORM row."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, ClassVar, Self


def json_or_none(value: str | None) -> Any:
    """A JSON column's value decoded, NULL kept as None."""
    return None if value is None else json.loads(value)


def _same(value: Any) -> Any:
    return value


class RowRecord:
    """Mixin for a catalog record: `from_row` copies each dataclass field's column, through `CONVERT`."""

    __slots__ = ()
    CONVERT: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    @classmethod
    def from_row(cls, row: Any) -> Self:
        """Copy an ORM row into a detached record (every field is a column of the same name)."""
        convert = cls.CONVERT
        return cls(**{f.name: convert.get(f.name, _same)(getattr(row, f.name)) for f in fields(cls)})  # type: ignore[arg-type]
