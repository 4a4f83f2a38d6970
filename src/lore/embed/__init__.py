"""Dense embedding providers behind one protocol, a registry, and a content-hash cache."""

from lore.embed.base import Embedder, get_embedder, register_embedder

__all__ = ["Embedder", "get_embedder", "register_embedder"]
