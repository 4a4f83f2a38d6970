"""Dictionary translation of query words between English and Chinese (the glossary, then CC-CEDICT)."""

from pathlib import Path

import pytest

from lore.config import load_settings
from lore.engine import Lore
from lore.errors import ConfigError
from lore.lexical.bilingual import (
    glossary,
    in_other_language,
    language,
    other_language_share,
    shows_names,
    translate_terms,
    translated_coverage,
    translation_groups,
    untranslated_names,
    use_glossaries,
)


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


def test_a_text_in_the_other_language_is_covered_by_the_questions_translated_words() -> None:
    groups = translation_groups("How many days of annual leave do I get?")
    assert ["年假", "年休假"] in groups  # one group per English word or phrase the dictionary knows
    assert (
        translated_coverage(groups, "年假天数按累计工作年限计算：每年 5 天") == 1.0
    )  # 年假, 天 ("get" asks)
    assert translated_coverage(groups, "每月 10 号发放上个月的工资。") == 0.0
    zh = translation_groups("年假怎么申请？")
    # 申请's gloss "apply for sth" is matched without the dictionary's placeholder
    assert translated_coverage(zh, "How do I apply for annual leave?") == 1.0
    assert translated_coverage([], "anything") == 0.0
    # A gloss of several words is found by half of them, a name's gloss by the name before its comma.
    drugs = translation_groups("产生耐药性的两个最主要原因是什么？")
    assert ["drug resistance", "drug tolerance"] in drugs
    assert translated_coverage(drugs, "The main cause of resistance is overuse.") == 0.75
    chopin = translation_groups("肖邦访问了哪座城市？")
    assert translated_coverage(chopin, "In 1837 Chopin visited the city of London.") == 1.0


def test_a_text_is_in_the_other_language_for_a_reader_of_the_question() -> None:
    assert in_other_language("年假天数按累计工作年限计算。", "en")
    assert not in_other_language("SKU: RB-200-STD; Model: LF-200 Picker; 保修期 (months): 24", "zh")
    assert in_other_language("Every LF-200 Picker comes with a 24-month warranty.", "zh")
    assert not in_other_language("Refunds within 30 days.", "en")


def test_the_glossary_gives_workplace_senses_first() -> None:
    assert translation_groups("When is salary paid?")[0][:2] == [
        "工资",
        "工資",
    ]  # CC-CEDICT alone: 待遇, 薪水
    assert translation_groups("工資每月幾號發放？")[0][0] == "salary"  # traditional forms too; 幾號 asks
    assert translation_groups("What do I need for reimbursement?")[-1][0] == "报销"  # CC-CEDICT: 偿还
    assert ["get" in g for g in translation_groups("How many days of leave do I get?")] == [False, False]
    assert (
        translation_groups("每周可以远程办公几天？")[2][0] == "remote work"
    )  # a glossary word of 4 characters
    assert all(zh and en for zh, en in glossary()) and len(glossary()) > 100


def test_names_no_dictionary_translates_must_be_shown_as_they_are() -> None:
    assert untranslated_names("公司的WiFi密码是多少？") == ["WiFi"]
    assert untranslated_names("What does CarePlus include?") == ["CarePlus"]
    assert untranslated_names("How much is the LF-200?") == ["LF-200"]
    assert untranslated_names("How many days of annual leave do I get?") == []  # all in the dictionary
    assert untranslated_names("U盘坏了怎么办") == []  # one letter names nothing
    assert untranslated_names("Which district does Kaluga Oblast belong to?") == []  # written in 汉字 there
    assert shows_names(["WiFi"], "访客如何连接办公室 Wi-Fi？") and not shows_names(
        ["WiFi"], "all access via VPN"
    )


def test_a_glossary_of_ones_own_is_read_after_the_shipped_one(tmp_path: Path) -> None:
    own = tmp_path / "glossary.txt"
    own.write_text("# our systems\n鲸鱼系统, 鲸鱼平台 | WhaleOps, Whale Ops\n", encoding="utf-8")
    assert not any("鲸鱼系统" in g for g in translation_groups("How do I log in to WhaleOps?"))
    try:
        use_glossaries([own])
        assert ["鲸鱼系统", "鲸鱼平台"] in translation_groups("How do I log in to WhaleOps?")
        assert "WhaleOps" not in untranslated_names("How do I log in to WhaleOps?")
        assert any("whaleops" in [w.lower() for w in g] for g in translation_groups("鲸鱼系统怎么登录？"))
        bad = tmp_path / "bad.txt"
        bad.write_text("鲸鱼系统 WhaleOps\n", encoding="utf-8")
        with pytest.raises(ValueError, match=r"bad.txt line 1: expected 'Chinese names \| English names'"):
            use_glossaries([own, bad])
        assert ["鲸鱼系统", "鲸鱼平台"] in translation_groups("How do I log in to WhaleOps?")  # kept
    finally:
        use_glossaries([])
    assert not any("鲸鱼系统" in g for g in translation_groups("How do I log in to WhaleOps?"))


def test_a_glossary_that_is_not_one_stops_lore_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "ours.txt"
    bad.write_text("WhaleOps | 鲸鱼系统\n", encoding="utf-8")  # the sides swapped
    with pytest.raises(ConfigError, match=r"\[retrieve\] glossaries: glossary .*ours.txt line 1"):
        Lore(load_settings(home=tmp_path / "home", retrieve={"glossaries": [str(bad)]}))
