"""Dictionary translation of query words between English and Chinese (CC-CEDICT)."""

from lore.lexical.bilingual import language, other_language_share, translate_terms


def test_english_phrases_become_chinese_words_and_asking_words_are_dropped() -> None:
    words = translate_terms("How many days of annual leave do I get?").split()
    assert "年假" in words and "天" in words  # the phrase as one gloss; "days" by its stem
    assert not {"几", "几个", "多少"} & set(words)  # "how many" asks, it is not a term
    assert "病假" in translate_terms("How do I apply for sick leave?").split()
    assert "报销" in translate_terms("How do I apply for reimbursement?").split()


def test_chinese_words_become_english_glosses() -> None:
    assert "annual leave" in translate_terms("年假有几天？")  # the dictionary's longest word, not 年 + 假
    assert "warranty period" in translate_terms("LF-500的保修期是多久？")
    assert translate_terms("？？") == ""


def test_language_and_the_share_of_texts_in_the_other_one() -> None:
    assert language("年假有几天？") == "zh" and language("What is the refund window?") == "en"
    assert language("LF-500 Mover 的保修期") == "zh"
    texts = ["年假天数按工龄计算。", "Refunds within 30 days.", "病假需提前通知。", "报销须提交发票。"]
    assert other_language_share("How many days of leave?", texts) == 0.75
    assert other_language_share("年假有几天？", texts) == 0.25
    assert other_language_share("anything", []) == 0.0
