"""Answer generators behind one protocol, chosen by name from a registry."""

from lore.answer.generators.base import Generator, Passage, get_generator, register_generator

__all__ = ["Generator", "Passage", "get_generator", "register_generator"]
