"""The offline default generator: answers with the evidence's own sentences, each one cited.

It leads with the sentence that best answers the question (lexical coverage of the question's
tokens, an answer of the asked type, refined by embedding similarity and the passage's rerank score;
from the reranker's top passage unless that one scores far lower), then its support in passage
order; an FAQ row says its answer cell, a table row its asked column as "column: value"; one fact
from two files is said once with both citations. Nothing but the passages' words (and a unit's name).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from lore.answer.citations import close_clause, end_sentence, insert_marker, join_sentences
from lore.answer.crosslang import is_cross_language, question_language
from lore.answer.generators.base import Passage
from lore.answer.generators.candidates import Candidate, same_fact
from lore.answer.generators.row_answers import comparison, faq_row, named_rows, sibling_rows
from lore.answer.qtypes import has_answer_type, question_parts, question_type
from lore.answer.ranges import asked_figures, band_fit
from lore.answer.readable import clean_markup, list_item, render_lines
from lore.answer.rows import faq_cells, names_other_item, read_row
from lore.embed.base import Embedder, scaled_similarity
from lore.embed.cache import EmbeddingCache, embed_texts
from lore.lexical import tokenize
from lore.lexical.bilingual import in_other_language, translated_coverage, translation_groups
from lore.schema import index_text
from lore.text.sentences import coverage, local_weights, split_sentences, title_line, token_weights
from lore.text.units import text_units

LOCAL_RARITY = True  # weigh question terms by their rarity among the retrieved passages
PASSAGE_MIX = 0.25  # share of a sentence's score that is its passage's coverage of the question
RANK_BONUS = 0.02  # added for the retriever's top passage, divided by rank below it
# When a reranker ordered the passages, the lead sentence comes from its top passage unless that
# passage's best sentence scores below this share of the best one overall: the reranker tells the
# answering passage apart better than sentence overlap does (whole English dev `fit` split: the gold
# passage cited 0.929 -> 0.944).
TOP_LEAD = 0.5
_TOP_EXTRA = 3  # the top passage's sentences outside the shortlist that are scored for the lead
RERANK_MIX = 0.05  # weight of the passage's relative rerank score in its sentences' score
_TYPE_MISS = 0.6  # a sentence without an answer of the asked type (no number for "how many") weighs less
# In a bilingual KB a sentence in the question's language leads unless one in the other language, matched
# by the question's translated words, scores clearly higher.
_SAME_LANGUAGE_LEAD = 0.8
# A sentence whose band ("满5年不足10年的") holds the quantity the question states ("交了7年") weighs
# more, one whose bands of that quantity all miss it less (enterprise_dev's number questions).
_BAND_HIT, _BAND_MISS = 1.3, 0.7


class ExtractiveGenerator:
    """Selects and cites the best-supported sentences from the passages."""

    name = "extractive"
    buffered = True  # the whole answer is known before the first token: the pipeline may renumber it

    def __init__(
        self,
        embedder: Embedder | None = None,
        cache: EmbeddingCache | None = None,
        *,
        max_sentences: int = 3,
        max_units: int = 320,
        keep_ratio: float = 0.8,
        other_ratio: float = 0.9,
        top_ratio: float = 0.7,
        next_ratio: float = 0.6,
        shortlist: int = 8,
    ) -> None:
        self.embedder, self.cache = embedder, cache
        self.max_sentences, self.max_units = max_sentences, max_units
        self.keep_ratio, self.other_ratio, self.shortlist = keep_ratio, other_ratio, shortlist
        self.top_ratio, self.next_ratio = top_ratio, next_ratio

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the chosen sentences one by one, each followed by its `[n]` marker(s); a comparison of
        items whose rows are among the passages is one Markdown table."""
        table = comparison(question, passages)
        if table:
            yield table
            return
        text, listing = "", False
        for cand in self._with_items(self.select(question, passages), passages, question):
            piece, listing = _rendered(cand, text, listing)
            yield piece
            text += piece

    def select(self, question: str, passages: Sequence[Passage]) -> list[Candidate]:
        """The chosen sentences: the best one first (the direct answer), then its support in passage order."""
        cands = _scored(question, passages)
        if not cands:
            return []
        # Across languages the terms barely overlap: the embedder chooses among more sentences.
        short = cands[: self.shortlist * (3 if is_cross_language(question, passages) else 1)]
        top_n = min(p.n for p in passages)
        # The reranker's top passage's best sentences are scored too, even below the shortlist: they
        # may lead (see TOP_LEAD).
        reranked = any(p.hit.rerank_score is not None for p in passages)
        top_own = [c for c in cands if reranked and c.passage == top_n and c not in short][:_TOP_EXTRA]
        if self.embedder is not None:
            self._add_similarity(question, short + top_own)
        _add_rerank(short + top_own, passages)
        short.sort(key=lambda c: (-round(c.score, 6), c.passage))
        head = short[0].score
        # Unless the top passage shares none of the question's words (another language's): the reranker's
        # term features had nothing to match there.
        top_text = next(p.text for p in passages if p.n == top_n)
        trusted = reranked and coverage(tokenize(question), top_text) > 0
        own = [c for c in short + top_own if trusted and c.passage == top_n]
        best = max(own, key=lambda c: c.score) if own else short[0]
        if best.score < TOP_LEAD * head:
            best = short[0]
        # A bilingual KB: when sentences in the question's language are in the running, one of them leads
        # and the other language's sentences do not join it ("What does CarePlus include?").
        asked = question_language(question)
        same = [c for c in short if not in_other_language(c.said, asked)]
        if same and in_other_language(best.said, asked) and same[0].score >= _SAME_LANGUAGE_LEAD * best.score:
            best = same[0]
        foreign = {id(c) for c in short if in_other_language(c.said, asked)} if same else set()
        by_n = {p.n: p for p in passages}
        tops = _part_tops(question, cands, by_n)
        chosen = [best, *self._best_per_part(tops, best)]
        units = sum(text_units(c.said) for c in chosen)
        for cand in short:
            if cand in chosen or id(cand) in foreign:
                continue
            if (twin := same_fact(cand, chosen)) is not None:  # said once, with every source cited
                if cand.passage != twin.passage and cand.passage not in twin.also:
                    twin.also.append(cand.passage)
                continue
            size = text_units(cand.said)
            # Sentences from the best sentence's own passage join more easily than other passages', and the
            # prose sentence right after it more easily still (it often completes it: "…a remote workers home
            # kit. The kit typically includes: a monitor, …"); when the best is not in the retriever's top
            # passage, that passage's best sentence supports it.
            ratio = (
                self.next_ratio
                if cand.at == (best.passage, best.index + 1) and _prose(cand) and _prose(best)
                else self.keep_ratio
                if cand.passage == best.passage
                else self.top_ratio
                if cand.passage == top_n and all(c.passage != top_n for c in chosen)
                else self.other_ratio
            )
            if (
                len(chosen) >= self.max_sentences
                or cand.score < ratio * head
                or units + size > self.max_units
            ):
                continue
            chosen.append(cand)
            units += size
        if best.index == 0 and faq_row(by_n[best.passage]):  # an FAQ row says its whole answer cell
            for cand in sorted(
                (c for c in cands if c.passage == best.passage and c not in chosen), key=lambda c: c.at
            ):
                if units + text_units(cand.said) <= self.max_units:
                    chosen.append(cand)
                    units += text_units(cand.said)
        named = named_rows(question, cands, by_n)
        if named:  # "LF-200和LF-500的载重分别是多少？": each named item's row answers its part
            return named
        rows = sibling_rows(question, best, cands, by_n)
        if rows:  # "住宿标准是多少？": the asked column of every row of the table, in the table's order
            rest = [c for c in chosen if c not in rows and c.passage not in {r.passage for r in rows}]
            return [*rows, *rest][: len(rows) + max(0, self.max_sentences - 1)]
        parts = self._best_per_part(tops, None)
        if len(parts) > 1:  # "几天？怎么申请？": each part's answer in the question's order, then the rest
            lead = [c for c in parts if c in chosen]
            return [*lead, *sorted((c for c in chosen if c not in lead), key=lambda c: (c.passage, c.index))]
        # Support in passage order, the lead's own passage first (an FAQ answer's next sentences); the
        # sentences that directly follow the lead go on from it ("IT does not provide wireless peripherals.
        # Wireless peripherals can be purchased by the business unit …"), not after earlier ones.
        lead_c = chosen[0]
        after, index = set(), lead_c.index + 1
        while any(c.at == (lead_c.passage, index) for c in chosen):
            after.add(index)
            index += 1
        rest = sorted(chosen[1:], key=lambda c: (c.passage != best.passage, c.index not in after, *c.at))
        return [lead_c, *rest]

    def _with_items(
        self, chosen: list[Candidate], passages: Sequence[Passage], question: str
    ) -> list[Candidate]:
        """A chosen sentence that ends in a colon comes with the clause or list items after it in its passage
        ("有下列情形之一的…：" then （一）（二）…), as far as `max_units` allows; an item chosen on its own
        is said once, in its place."""
        by_n = {p.n: p for p in passages}
        out: list[Candidate] = []
        units = sum(text_units(c.said) for c in chosen)
        joined: set[tuple[int, int]] = set()  # clauses said as part of an earlier sentence
        for cand in chosen:
            if cand in out or cand.at in joined:
                continue
            rest = _rest_of_sentence(cand, _pieces(by_n[cand.passage], question))
            more = sum(text_units(t) for j, t in rest if not any(c.at == (cand.passage, j) for c in chosen))
            if rest and units + more <= self.max_units:
                units += more
                joined |= {(cand.passage, j) for j, _ in rest}
                whole = "".join([cand.said, *(t for _, t in rest)])
                cand = Candidate(cand.passage, cand.index, whole, cand.score, also=cand.also)
            out.append(cand)
            if cand.out or "\n" in cand.said or not cand.said.rstrip().endswith((":", "：")):
                continue
            pieces = _pieces(by_n[cand.passage], question)
            for j in range(cand.index + 1, len(pieces)):
                text = pieces[j][0]
                if list_item(text) is None:
                    break
                own = next((c for c in chosen if c.at == (cand.passage, j)), None)
                if own is None and units + text_units(text) > self.max_units:
                    break
                units += 0 if own is not None else text_units(text)
                out.append(own or Candidate(cand.passage, j, text, cand.score))
        return out

    @staticmethod
    def _best_per_part(tops: list[tuple[float, Candidate]], best: Candidate | None) -> list[Candidate]:
        """For a question with several parts ("几天？怎么申请？"), each part's best sentence (`_part_tops`)
        that adds something to `best` and to the parts before it."""
        extra: list[Candidate] = []
        for cover, top in tops:
            if (
                top is not best
                and top not in extra
                and cover > 0
                and same_fact(top, [c for c in (best, *extra) if c is not None]) is None
            ):
                extra.append(top)
        return extra

    def _add_similarity(self, question: str, cands: list[Candidate]) -> None:
        assert self.embedder is not None
        q = embed_texts(self.embedder, [question], "query", self.cache)[0]
        vecs = embed_texts(self.embedder, [c.text for c in cands], "passage", self.cache)
        # Cosines mapped onto the embedder's declared band before mixing with lexical coverage.
        sims = np.clip(scaled_similarity(self.embedder, vecs @ q), 0.0, 1.0)
        for cand, sim in zip(cands, sims, strict=True):
            cand.score = 0.6 * cand.score + 0.4 * float(sim)


def _scored(question: str, passages: Sequence[Passage]) -> list[Candidate]:
    """Every sentence (or row, FAQ answer) of the passages, scored on words alone, best first."""
    q_tokens = tokenize(question)
    qtype = question_type(question)
    weights = local_weights(q_tokens, [p.text for p in passages]) if LOCAL_RARITY else None
    asked = question_language(question)
    # Passages in the other language (a bilingual KB, a cross-language question) are matched by the
    # question's words translated by dictionary: its own words barely occur in them.
    groups = translation_groups(question) if any(in_other_language(p.text, asked) for p in passages) else []

    # Where a sentence states bands of a quantity the question gives, the band judges the figure
    # (`band_fit`): "已满20年的，年休假15天" does not match "工作15年" by its 15.
    figures = asked_figures(question)
    unfigured = {t: w for t, w in (weights or token_weights(q_tokens)).items() if t not in figures}

    def covered(text: str, banded: bool = False) -> float:
        if groups and in_other_language(text, asked):
            return translated_coverage(groups, text)
        return coverage(q_tokens, text, unfigured if banded else weights)

    cands = []
    for p in passages:
        # The passage's own coverage backs its sentences (the answer sentence often repeats only part
        # of the question; the rest is in its neighbours); a slight preference for higher-ranked
        # passages breaks ties towards retrieval's order.
        context = PASSAGE_MIX * covered(f"{p.context}\n{p.text}") + RANK_BONUS / p.n
        body = clean_markup(p.text)
        for j, (text, out) in enumerate(_pieces(p, question)):
            fit = band_fit(question, out or text)  # "15年": 已满10年不满20年的…, not 已满20年的，年休假15天
            score = (1 - PASSAGE_MIX) * covered(text, fit is not None) + context
            # A line of its own that reads as a title ("LF-200 Picker"; a sentence cut short by the
            # passage's end is not on its own line).
            title = title_line(text) and f"{text.strip()}\n" in body
            if not out and (text.rstrip().endswith(("?", "？")) or title):
                score *= 0.3  # a question (an FAQ's own, a heading) or a title does not answer anything
            if not has_answer_type(out or text, qtype, question):
                score *= _TYPE_MISS
            if fit is not None:
                score *= _BAND_HIT if fit else _BAND_MISS
            cands.append(Candidate(p.n, j, text, score, out))
    return sorted(cands, key=lambda c: -c.score)


def _part_tops(
    question: str, cands: list[Candidate], by_n: dict[int, Passage]
) -> list[tuple[float, Candidate]]:
    """(its coverage, the sentence covering it best) for each part of a question asking several things;
    empty for a single question. Ties go to the sentence whose passage, headings included, covers the part
    more ("年假怎么申请": the leave passage under 如何申请年假, not 报销's "…将退回申请")."""
    parts = [tokenize(p) for p in question_parts(question)]
    if len(parts) < 2:
        return []
    tops = []
    for tokens in parts:
        around = {n: PASSAGE_MIX * coverage(tokens, index_text(p.hit.chunk)) for n, p in by_n.items()}
        top = max(
            cands,
            key=lambda c: (
                coverage(tokens, c.text) + around[c.passage] - (0.5 if c.text.endswith(("?", "？")) else 0)
            ),
        )
        tops.append((coverage(tokens, top.text), top))
    return tops


def _add_rerank(cands: list[Candidate], passages: Sequence[Passage]) -> None:
    """A sentence weighs a little more the more relevant the reranker judged its passage (relative to the
    most relevant one); hits without a rerank score add nothing."""
    scores = {p.n: p.hit.rerank_score for p in passages}
    top = max((v for v in scores.values() if v is not None), default=0.0)
    if top > 0:
        for cand in cands:
            cand.score += RERANK_MIX * (scores[cand.passage] or 0.0) / top


def _pieces(p: Passage, question: str) -> list[tuple[str, str]]:
    """(text scored, text said) for each sentence of a passage; an FAQ row says its answer cell and a
    table row the asked column(s)."""
    chunk = p.hit.chunk
    if names_other_item(p.text, question):
        return []  # another item's row or page answers nothing about the one asked
    faq = (chunk.text, chunk.answer) if chunk.source_type == "faq" and chunk.answer else None
    if chunk.source_type not in ("faq", "table_row"):
        # Read as the page shows it: a link's text, no image or HTML comment (an image alone says nothing).
        return [(s, "") for s in split_sentences(clean_markup(p.text))]
    faq = faq or faq_cells(p.text)
    if faq is not None:  # matched on its question, said with its answer's sentences (the first leads)
        said = split_sentences(clean_markup(faq[1]))
        return [(f"{faq[0]} {s}" if j == 0 else s, s) for j, s in enumerate(said)]
    cell = read_row(p.text, question)
    # A row is also scored by its asked column in the question's words (a header in the other language).
    return [(f"{cell} {p.text}", cell)] if cell else [(p.text, p.text)]


def _prose(cand: Candidate) -> bool:
    """A sentence of running text: not a list item, a row or an FAQ answer."""
    return not cand.out and "\n" not in cand.said and list_item(cand.said) is None


def _rest_of_sentence(cand: Candidate, pieces: list[tuple[str, str]]) -> list[tuple[int, str]]:
    """The clauses after a prose sentence cut at "；", up to its full stop (position, text): the clause after
    a rule's "；" is often its exception or second half ("……应当续延至服务期满；双方另有约定的，从其约定。").
    None for a list item, a row or FAQ answer, or a sentence that ends at a full stop."""
    if not _prose(cand) or not cand.said.endswith("；"):
        return []
    rest: list[tuple[int, str]] = []
    for j in range(cand.index + 1, len(pieces)):
        text, out = pieces[j]
        if out or list_item(text) is not None or "\n" in text:
            return []  # a list or a row follows: not one sentence (the items are `_with_items`' business)
        rest.append((j, text))
        if not text.endswith("；"):
            return rest if text.endswith("。") else []
    return []


def _rendered(cand: Candidate, text: str, listing: bool) -> tuple[str, bool]:
    """What `cand` adds to the answer `text` (which ends with a list line when `listing`), and whether it
    ends with one: a clause or list item is a Markdown list line of its own, not glued into the prose;
    the citation markers go at its end."""
    lines = render_lines(cand.said) or [(False, cand.said)]
    last_item, last = lines[-1]
    last = last if last_item else close_clause(last)  # an item keeps its "；": the list goes on
    for n in [cand.passage, *cand.also]:
        last = insert_marker(last, n)
    out = text
    for is_item, line in [*lines[:-1], (last_item, last)]:
        if not out:
            out = line
        elif is_item:
            out = (out if listing else end_sentence(out)) + "\n" + line
        elif listing:  # a blank line ends the list: the prose is not read as part of its last item
            out += "\n\n" + line
        else:
            tail = out.rsplit("\n", 1)[-1]
            out = out[: len(out) - len(tail)] + join_sentences([end_sentence(tail), line])
        listing = is_item
    return out[len(text) :], listing
