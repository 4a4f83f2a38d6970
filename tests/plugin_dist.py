"""What `pip install <plugin>` leaves on a site folder: the plug-in's module and its dist-info with entry
points, for the plug-in tests."""

from __future__ import annotations

from pathlib import Path


def install_plugin(site: Path, dist: str, module: str, source: str, entry_points: str) -> None:
    """Write `module`.py and `dist`-1.0.dist-info (METADATA, entry_points.txt, RECORD) into `site`."""
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
