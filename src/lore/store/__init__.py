"""Vector stores behind one protocol; backends are chosen by name from the registry."""

from lore.store.base import StoreQuery, VectorStore, open_store, register_store

__all__ = ["StoreQuery", "VectorStore", "open_store", "register_store"]
