"""Write one BEIR QA folder holding several (a knowledge base in two languages, say): their passages,
questions, qrels and answers together; ids must not collide.

    python benchmarks/merge.py benchmarks/.cache/subsets/bilingual ../shared/datasets/drcd_dev \\
        benchmarks/.cache/subsets/english_qa_s100
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

FILES = ("corpus.jsonl", "queries.jsonl", "answers.jsonl")


def merge(out: Path, sources: list[Path]) -> Path:
    """The folder `out` holding every source's rows (written once; an existing folder is kept)."""
    if out.exists():
        return out
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in FILES:
        seen: set[str] = set()
        with (tmp / name).open("w", encoding="utf-8") as f:
            for src in sources:
                for line in (src / name).open(encoding="utf-8"):
                    if not line.strip():
                        continue
                    row_id = json.loads(line)["_id"]
                    if row_id in seen:
                        raise SystemExit(f"{src / name}: id {row_id!r} is in an earlier folder too")
                    seen.add(row_id)
                    f.write(line if line.endswith("\n") else line + "\n")
    header, rows = "", []
    for src in sources:
        lines = (src / "qrels.tsv").read_text(encoding="utf-8").splitlines()
        header, rows = lines[0], rows + [line for line in lines[1:] if line.strip()]
    (tmp / "qrels.tsv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    tmp.rename(out)
    return out


if __name__ == "__main__":
    print(merge(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
