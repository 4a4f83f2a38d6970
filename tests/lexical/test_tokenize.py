"""Tokeniser: Chinese words via jieba, English stems without stop words, mixed text."""

from lore.lexical import tokenize


def test_chinese_is_segmented_into_words_and_subwords() -> None:
    tokens = tokenize("中华人民共和国的报销制度")
    assert "报销" in tokens and "制度" in tokens
    assert "中华" in tokens and "中华人民共和国" in tokens  # search mode adds sub-words
    assert "的" not in tokens


def test_english_is_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("The invoices were approved by managers") == ["invoic", "approv", "manag"]


def test_mixed_text_keeps_order_codes_and_full_width_forms() -> None:
    tokens = tokenize("请上传 Invoices 到 OA系统，型号ＲＢ-200 v2.1")
    assert tokens.index("上传") < tokens.index("invoic") < tokens.index("oa")
    assert "rb" in tokens and "200" in tokens and "v2.1" in tokens  # NFKC folds full-width letters


def test_query_and_passage_share_tokens_across_inflections() -> None:
    assert set(tokenize("refunding")) & set(tokenize("refunds are issued"))


def test_empty_and_punctuation_only() -> None:
    assert tokenize("") == []
    assert tokenize("，。！？...") == []
