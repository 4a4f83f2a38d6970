"""Results of the console's administrator tools: a KB's chunking settings and their preview, feedback with
what an administrator made of it (a FAQ row)."""

from __future__ import annotations

from pydantic import Field

from lore.app.results import FeedbackRow, Result
from lore.app.scenario_results import FaqRowInfo
from lore.config import ChunkStrategy

STRATEGY_HELP = (
    'How prose is cut: "structure" keeps articles, clauses, lists and table rows whole; "semantic" cuts '
    "where the meaning moves (sentence embeddings). Both within the sizes."
)


class ChunkingDefaults(Result):
    """The configured chunk sizes and strategy (`[chunk]`): what a KB without its own follows."""

    child_size: int
    child_overlap: int
    parent_size: int
    strategy: ChunkStrategy = Field(description=STRATEGY_HELP)


class ChunkingSettings(Result):
    """A KB's chunk sizes and strategy for its next build, the configured ones, and whether the KB has its
    own."""

    kb: str
    child_size: int
    child_overlap: int
    parent_size: int
    strategy: ChunkStrategy = Field(description=STRATEGY_HELP)
    schema_name: str = Field(description="The chunk schema its next build records.")
    own: bool
    defaults: ChunkingDefaults
    updated_by: str | None
    updated_at: str | None


class PreviewPiece(Result):
    """One chunk the preview would make."""

    index: int
    text: str
    length: int = Field(description="Its size in text units.")
    chars: int
    heading_path: list[str]
    parent: int = Field(description="Its parent's position within the file.")
    page: int | None


class ChunkingPreview(Result):
    """The chunks a file would make with the given sizes and strategy (nothing is stored)."""

    source: str
    strategy: ChunkStrategy = Field(description=STRATEGY_HELP)
    schema_name: str
    documents: int
    chunks: int
    parents: int
    preview: list[PreviewPiece]


class HandledRow(FeedbackRow):
    """A rating with what an administrator made of it (null: not handled yet)."""

    handled_at: str | None
    handled_by: str | None
    handled_as: str | None = Field(description='What it became, e.g. "faq:<scenario>:<row>".')


class FeedbackFaq(Result):
    """The rating, now handled, and the FAQ row it became."""

    feedback: HandledRow
    scenario: str
    faq: FaqRowInfo
