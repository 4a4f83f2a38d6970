"""`lore eval` takes `lore search`'s retrieval options (--mode, --rerank/--no-rerank, --recall-k, --rerank-k)
and scores with them: on a tiny KB, BM25 misses the questions that share no word with their document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lore.cli.main import app
from lore.engine import Lore

runner = CliRunner()
DOCS = {  # name: its one passage
    "cats.md": "Cats are small domesticated felines. They purr when content and hunt mice at night.",
    "bread.md": "Bakers knead dough made of flour, water and yeast for ten minutes, then bake the loaves.",
    "bikes.md": "A bicycle has two wheels, pedals and a chain. Riders should wear a helmet.",
    "tides.md": "Tides rise and fall twice a day because the moon's gravity pulls on the oceans.",
    "violin.md": "A violin has four strings tuned in fifths and is played with a bow.",
    "coffee.md": "Espresso is brewed by forcing hot water through finely ground coffee beans.",
}
LEXICAL = {"question": "How long do bakers knead the dough?", "files": ["docs/bread.md"]}
# no word of these is in any document (so BM25 finds nothing); their meaning is in one
PARAPHRASES = [
    {"question": "Which household animal catches rodents?", "files": ["docs/cats.md"]},
    {"question": "What makes the sea go up and down?", "files": ["docs/tides.md"]},
]


@pytest.fixture()
def tiny(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A KB `tiny` of six one-passage documents, and the eval set; returns the set's path."""
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(f"# {name[:-3].title()}\n\n{text}\n", encoding="utf-8")
    assert runner.invoke(app, ["kb", "create", "tiny"]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(docs), "--kb", "tiny"]).exit_code == 0
    eval_set = tmp_path / "set.jsonl"
    lines = [json.dumps(q) for q in (LEXICAL, *PARAPHRASES)]
    eval_set.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return eval_set


def run_eval(eval_set: Path, *options: str) -> dict[str, Any]:
    out = runner.invoke(app, ["eval", "--kb", "tiny", "--set", str(eval_set), "--json", "-k", "1", *options])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_bm25_and_hybrid_give_their_own_figures(tiny: Path) -> None:
    bm25 = run_eval(tiny, "--mode", "bm25")
    hybrid = run_eval(tiny, "--mode", "hybrid")
    assert bm25["search"]["mode"] == "bm25" and hybrid["search"]["mode"] == "hybrid"
    # BM25: only the lexical question, at rank 1, of 3
    assert bm25["retrieval"]["recall"] == pytest.approx(1 / 3)
    assert bm25["retrieval"]["mrr"] == pytest.approx(1 / 3)
    assert bm25["retrieval"]["missed"] == [q["question"] for q in PARAPHRASES]
    # hybrid: the dense half finds the paraphrases' documents first too
    assert hybrid["retrieval"]["recall"] == hybrid["retrieval"]["mrr"] == 1.0
    assert hybrid["retrieval"]["missed"] == []


def test_rerank_and_depths_reach_the_searches_and_the_answers(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []
    real_ask = Lore.ask

    def spy(self: Lore, name: str | None, question: str, options: Any = None, *args: Any, **kw: Any) -> Any:
        asked.append(options)
        return real_ask(self, name, question, options, *args, **kw)

    monkeypatch.setattr(Lore, "ask", spy)
    out = run_eval(tiny, "--mode", "bm25", "--no-rerank", "--recall-k", "7", "--rerank-k", "3", "--answers")
    assert out["search"] == {"mode": "bm25", "recall_k": 7, "rerank": False, "rerank_k": 3}
    assert out["retrieval"]["recall"] == pytest.approx(1 / 3)
    assert len(asked) == 3 and all(
        (o.mode, o.recall_k, o.rerank, o.rerank_k) == ("bm25", 7, False, 3) for o in asked
    )
    assert asked[0].top_k != 1  # the answers keep their own number of passages, not the eval cut-off
    assert out["answers"]["false_refusals"] > 0  # BM25 hands the paraphrases nothing to answer from


def test_bad_options_are_refused(tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = runner.invoke(app, ["eval", "--kb", "tiny", "--set", str(tiny), "--mode", "fuzzy"])
    assert bad.exit_code == 2 and "--mode: must be dense, bm25 or hybrid" in bad.output
    assert runner.invoke(app, ["eval", "--kb", "tiny", "--set", str(tiny), "--recall-k", "0"]).exit_code == 2
    config = tmp_path / "no-rerank.toml"
    config.write_text('[rerank]\nprovider = "none"\n', encoding="utf-8")
    monkeypatch.setenv("LORE_CONFIG", str(config))
    unset = runner.invoke(app, ["eval", "--kb", "tiny", "--set", str(tiny), "--rerank"])
    assert unset.exit_code == 2 and "no reranker configured" in unset.output
