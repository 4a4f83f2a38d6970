"""The `Generator` protocol, the numbered `Passage` it answers from, and the registry."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lore.errors import LoreError
from lore.registry import Registry
from lore.schema import Hit, chunk_context


class GenerationError(LoreError):
    """A generator failed (endpoint down, timeout, bad response); names the endpoint and reason."""


@dataclass
class Passage:
    """One numbered piece of evidence: `n` is what `[n]` in the answer refers to."""

    n: int
    text: str  # what the generator sees (the parent context, trimmed to the budget)
    hits: list[Hit] = field(default_factory=list)  # the child hits this passage came from

    @property
    def hit(self) -> Hit:
        return self.hits[0]

    @property
    def context(self) -> str:
        """Where the passage sits (title, headings, sheet), which its text need not repeat."""
        return chunk_context(self.hits[0].chunk) if self.hits else ""


class Generator(Protocol):
    """Writes an answer to `question` from numbered passages, streamed as text deltas."""

    name: str

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the answer text in pieces; it cites passages as `[n]`. Raises GenerationError."""


class GeneratorFactory(Protocol):
    """Makes a generator from keyword options: `extractive` gets `embedder` and `cache`; `openai` and
    plug-ins get the chat endpoint's `model`, `base_url` and `timeout_s`."""

    def __call__(self, *args: Any, **options: Any) -> Generator: ...


GENERATORS: Registry[GeneratorFactory] = Registry("answer.generator", "lore.generators")


def register_generator(name: str, factory: GeneratorFactory) -> None:
    """Register a generator under `name` (built-ins and plugins alike)."""
    GENERATORS.register(name, factory)


def get_generator(name: str, **options: Any) -> Generator:
    """Create the generator `name` with its options."""
    return GENERATORS.get(name)(**options)
