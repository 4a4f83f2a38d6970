"""Lexical analysis shared by every store backend: jieba for Chinese, accent folding and stemming for
English."""

from lore.lexical.fold import TOKENIZER_VERSION, fold
from lore.lexical.tokenize import CJK, CJK_CHAR, is_chinese, tokenize, tokenize_many

__all__ = ["CJK", "CJK_CHAR", "TOKENIZER_VERSION", "fold", "is_chinese", "tokenize", "tokenize_many"]
