"""The `Lore` engine under concurrent first use (the service's threadpool)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import lore.engine.wiring as engine_module
from lore.config import load_settings
from lore.engine import Lore


def test_many_threads_opening_one_kb_share_one_store_and_one_embedder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lore = Lore(load_settings(home=tmp_path / "home"))
    kb = lore.create_kb("kb")
    lore.close()
    lore = Lore(load_settings(home=tmp_path / "home"))
    opened: list[str] = []
    real_open = engine_module.open_store

    def counting_open(*args: object, **kw: object) -> object:
        opened.append(str(args[1]))
        return real_open(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_module, "open_store", counting_open)
    with ThreadPoolExecutor(8) as pool:
        stores = list(pool.map(lambda _: lore.store(kb), range(16)))
        embedders = list(pool.map(lambda _: lore.embedder(kb), range(16)))
    assert len({id(s) for s in stores}) == 1 and opened == [f"kb_{kb.id}"]
    assert len({id(e) for e in embedders}) == 1
    lore.close()
