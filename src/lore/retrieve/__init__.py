"""Retrieval: query embedding and tokenising, dense/BM25/hybrid search, fusion, rerank hook."""
