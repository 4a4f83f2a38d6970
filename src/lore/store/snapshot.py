"""The embedded store's snapshot file: its in-memory index as arrays, a JSON footer, the graph beside it.

Above the switch-over to the graph the float vectors stay in the file, memory-mapped: a search reads only
the rows it rescores (or a selective filter's rows), so they need not all be held in memory.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import xxhash

from lore.store.ann_index import AnnIndex, AnnParams
from lore.store.memory_index import MemoryIndex

MAGIC = b"LOREIDX2"  # snapshot file format, version 2 (xxh3 checksums; version 1 files are rebuilt)
_ALIGN = 64  # arrays start on this boundary, so a mapped array is aligned for BLAS
_BLOCK = 1 << 24  # bytes read at a time to check a mapped array's checksum without mapping it all in


def read_snapshot(path: Path, key: dict[str, Any], params: AnnParams | None = None) -> MemoryIndex | None:
    """The index saved under `key`; None if the snapshot is missing, stale or damaged. With at least
    `params.min_rows` live rows its vectors are a read-only memory map of the file."""
    params = params or AnnParams.from_settings()
    try:
        with open(path, "rb") as fh:
            fh.seek(-16, os.SEEK_END)
            size, magic = int.from_bytes(fh.read(8), "little"), fh.read(8)
            if magic != MAGIC:
                return None
            fh.seek(-16 - size, os.SEEK_END)
            footer = json.loads(fh.read(size))
            if footer["key"] != key:
                return None
            layout = footer["arrays"]
            arrays = {name: _read(fh, *spec) for name, spec in layout.items() if name != "vectors"}
            alive = arrays["alive"]
            mapped = alive is not None and int(np.count_nonzero(alive)) >= params.min_rows
            arrays["vectors"] = _read(fh, *layout["vectors"], mapped=mapped)
        read = {name: a for name, a in arrays.items() if a is not None}
        if len(read) < len(arrays):
            return None
        index = MemoryIndex.from_arrays(key["dim"], read)
        if footer.get("graph"):  # a missing or mismatched graph is rebuilt from the vectors
            graph = path.with_name(footer["graph"])
            index.ann = AnnIndex.open(graph, key["dim"], params, len(index.rids))
        return index
    except Exception:  # noqa: BLE001 - a damaged snapshot is only a cache miss; SQLite is the truth
        return None


def checksum(data: memoryview | bytes) -> int:
    """An array's 64-bit checksum in the footer (xxh3)."""
    return xxhash.xxh3_64_intdigest(data)


def _read(
    fh: BinaryIO, dtype: str, shape: list[int], offset: int, digest: int, *, mapped: bool = False
) -> np.ndarray | None:
    """One array of the file, or None if its checksum does not match: read into memory (numpy scans that
    faster than a map), or mapped after checking its bytes block by block. xxh3, not CRC-32: at a million
    chunks the vectors are 1.5 GB, which CRC-32 takes seconds to check on every open."""
    fh.seek(offset)
    if not mapped:
        a = np.fromfile(fh, dtype=dtype, count=math.prod(shape)).reshape(shape)
        return a if checksum(a.data) == digest else None
    check, left = xxhash.xxh3_64(), math.prod(shape) * np.dtype(dtype).itemsize
    while left:
        block = fh.read(min(left, _BLOCK))
        if not block:
            return None
        check.update(block)
        left -= len(block)
    if check.intdigest() != digest:
        return None
    # Mapped through the open file, not its name: a writer may have renamed a new snapshot in meanwhile.
    return np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))


def write_snapshot(
    path: Path, arrays: dict[str, np.ndarray], key: dict[str, Any], ann: AnnIndex | None = None
) -> None:
    """Write the graph to its own file, then the arrays and a JSON footer (key, layout, checksums, the graph's
    file name) to a temp file; then rename it in, and remove graphs no snapshot names any more."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
    graph = path.with_name(f"{path.stem}.{uuid.uuid4().hex}.ann") if ann is not None else None
    try:
        if ann is not None and graph is not None:
            ann.save(tmp)
            os.replace(tmp, graph)
        for old in path.parent.glob(f"{path.name}.*.tmp"):  # left by a crash mid-write
            if old.stat().st_mtime < time.time() - 600:
                old.unlink(missing_ok=True)
        layout: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            for name, a in arrays.items():
                a = np.ascontiguousarray(a)
                fh.write(b"\0" * (-fh.tell() % _ALIGN))
                layout[name] = (a.dtype.str, a.shape, fh.tell(), checksum(a.data))
                fh.write(a.data)
            footer = {"key": key, "arrays": layout, "graph": graph.name if graph else None}
            blob = json.dumps(footer).encode()
            fh.write(blob + len(blob).to_bytes(8, "little") + MAGIC)
        # Readers see the old file or the whole new one, never half of it; one that mapped the old file's
        # vectors keeps reading them until it lets go.
        os.replace(tmp, path)
    except (OSError, RuntimeError):  # a snapshot is only a cache: the next process rebuilds
        tmp.unlink(missing_ok=True)
        if graph is not None:
            graph.unlink(missing_ok=True)
        return
    for old in graph_files(path):  # a reader that mapped an old graph keeps it until it closes
        if old != graph:
            old.unlink(missing_ok=True)


def graph_files(snapshot: Path) -> list[Path]:
    """The graph files next to a snapshot (the current one and any left by older snapshots)."""
    return list(snapshot.parent.glob(f"{snapshot.stem}.*.ann"))
