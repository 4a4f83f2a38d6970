"""Lexical analysis shared by every store backend: jieba for Chinese, stemming for English."""

from lore.lexical.tokenize import CJK, CJK_CHAR, is_chinese, tokenize, tokenize_many

__all__ = ["CJK", "CJK_CHAR", "is_chinese", "tokenize", "tokenize_many"]
