"""Lexical analysis shared by every store backend: jieba for Chinese, stemming for English."""

from lore.lexical.tokenize import tokenize, tokenize_many

__all__ = ["tokenize", "tokenize_many"]
