"""An approximate dense index (faiss HNSW over 8-bit codes) beside the embedded store's exact arrays.

Node ids are the rows' positions in the MemoryIndex. Dead rows stay in the graph and are kept out by the
same filter mask every search applies inside the graph (faiss ID selector), never after a fixed top-k.
The graph only proposes candidates: they are rescored exactly with the stored float vectors.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from lore.config import StoreSettings

_TRAIN_ROWS = 50_000  # rows the 8-bit quantiser learns each dimension's range from


@dataclass(frozen=True)
class AnnParams:
    """When the store switches to the graph, and how hard it searches (the `[store] ann_*` settings)."""

    min_rows: int
    ef_search: int
    ef_construction: int
    m: int
    rescore: int
    filter_min_share: float
    ef_max: int

    @classmethod
    def from_settings(cls, s: StoreSettings | None = None) -> AnnParams:
        """The settings' values (their defaults without settings): one place holds the defaults."""
        s = s or StoreSettings()
        return cls(
            s.ann_min_rows,
            s.ann_ef_search,
            s.ann_ef_construction,
            s.ann_m,
            s.ann_rescore,
            s.ann_filter_min_share,
            s.ann_ef_max,
        )


class AnnIndex:
    """HNSW graph over the first `ntotal` rows; add rows in order with `sync`."""

    def __init__(
        self, dim: int, params: AnnParams, graph: faiss.Index | None = None, mapped: bool = False
    ) -> None:
        self.dim, self.params = dim, params
        self._graph = graph
        self._mapped = mapped  # a memory-mapped graph is read-only: copied into memory before an add
        self._lock = threading.Lock()  # faiss allows concurrent searches but not an add during one

    @property
    def ntotal(self) -> int:
        return 0 if self._graph is None else int(self._graph.ntotal)

    def sync(self, vectors: np.ndarray) -> None:
        """Add the rows of `vectors` the graph does not hold yet (rows only ever append)."""
        if len(vectors) <= self.ntotal:
            return
        with self._lock:
            if self._graph is None:
                # The stubs type the quantiser argument as a ScalarQuantizer; faiss takes its QT_* enum int.
                qtype = faiss.ScalarQuantizer.QT_8bit
                args = (self.dim, qtype, self.params.m, faiss.METRIC_INNER_PRODUCT)
                graph = faiss.IndexHNSWSQ(*args)  # type: ignore[arg-type]
                graph.hnsw.efConstruction = self.params.ef_construction
                step = max(1, len(vectors) // _TRAIN_ROWS)
                graph.train(np.ascontiguousarray(vectors[::step], dtype=np.float32))
                self._graph = graph
            elif self._mapped:  # faiss aborts the process on an add to a viewed graph
                self._graph = faiss.deserialize_index(faiss.serialize_index(self._graph))
                self._mapped = False
            start = self.ntotal
            self._graph.add(np.ascontiguousarray(vectors[start:], dtype=np.float32))

    def search(
        self, query: np.ndarray, mask: np.ndarray, n_allowed: int, k: int, vectors: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Candidates among the masked rows, rescored exactly: (positions, exact scores), unsorted."""
        n = self.ntotal
        # A filter lets through only a share of the nodes the search visits: widen it (up to 2x at 25%).
        share = max(n_allowed / max(n, 1), 1e-6)
        wanted = max(k * self.params.rescore, k)
        ef = max(
            int(min(max(self.params.ef_search, wanted) / min(1.0, share * 2), self.params.ef_max)), wanted
        )
        # Rescore every candidate the search kept: 8-bit codes misorder near-duplicates (a dense cluster
        # holds more of them than `wanted`), and an exact dot product per candidate is cheap.
        wanted = ef
        bits = None
        if n_allowed < n:
            bits = np.packbits(mask[:n], bitorder="little")  # kept alive until the search returns
            sel = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
            params = faiss.SearchParametersHNSW(efSearch=ef, sel=sel)  # type: ignore[attr-defined] # not in stubs
        else:
            params = faiss.SearchParametersHNSW(efSearch=ef)  # type: ignore[attr-defined] # not in stubs
        assert self._graph is not None  # callers search only after `sync` built the graph
        with self._lock:
            _, ids = self._graph.search(query.reshape(1, -1).astype(np.float32), wanted, params=params)
        del bits
        found = ids[0][ids[0] >= 0]
        found = found[mask[found]]  # the selector already did this; cheap insurance
        return found, vectors[found] @ query

    def save(self, path: Path) -> None:
        """Write the graph to `path` (the caller renames it into place)."""
        assert self._graph is not None  # saved only when it holds every row, so once built
        with self._lock:
            faiss.write_index(self._graph, str(path))

    @classmethod
    def open(cls, path: Path, dim: int, params: AnnParams, rows: int) -> AnnIndex | None:
        """The graph saved at `path`, memory-mapped; None unless it holds exactly `rows` rows of `dim`."""
        try:
            graph = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
        except RuntimeError:
            return None
        if graph.d != dim or graph.ntotal != rows:
            return None
        return cls(dim, params, graph, mapped=True)
