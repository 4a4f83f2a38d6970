"""Typed request fields with their limits: names, notes, paths, version numbers (every text and list field
of a request has a bound; a question's is `answer.max_question_chars`)."""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le
from pydantic import StringConstraints

MAX_INT = 2**31 - 1  # the catalog's integer columns (PostgreSQL INTEGER); larger numbers are a 422
Seq = Annotated[int, Ge(1), Le(MAX_INT)]
"""A version number (path, query or body)."""
PositiveInt = Annotated[int, Ge(1), Le(MAX_INT)]
NAME_CHARS = 256  # names and ids: KBs, files, datasets, tenants, roles, sessions, traces
NOTE_CHARS = 4000  # free text: reasons, descriptions, notes
MAX_ITEMS = 1000  # entries of a list of names (roles, files, paths, heading levels)
PATH_CHARS = 4096  # a file's path in a KB, a server path (the catalog's column)
Name = Annotated[str, StringConstraints(max_length=NAME_CHARS)]
PathText = Annotated[str, StringConstraints(max_length=PATH_CHARS)]
Note = Annotated[str, StringConstraints(max_length=NOTE_CHARS)]
