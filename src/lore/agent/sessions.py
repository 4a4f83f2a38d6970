"""Deep-mode conversation state in Redis, so any replica continues a session another one started.

A LangGraph checkpointer that keeps only each session's latest checkpoint (and its pending writes):
deep mode reads nothing older. Entries expire `ttl_s` after the session's last turn.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)


def _pack(typed: tuple[str, bytes]) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def _unpack(packed: list[str]) -> tuple[str, bytes]:
    return packed[0], base64.b64decode(packed[1])


class RedisSessionSaver(BaseCheckpointSaver[int]):
    """Latest checkpoint per (session, namespace) under `<prefix>:deep:<session>`."""

    def __init__(self, client: Any, prefix: str, ttl_s: int) -> None:
        super().__init__()
        self.client, self.prefix, self.ttl_s = client, prefix, ttl_s

    def _key(self, thread_id: str) -> str:
        return f"{self.prefix}:deep:{thread_id}"

    def _writes_key(self, thread_id: str, ns: str, checkpoint_id: str) -> str:
        return f"{self._key(thread_id)}:w:{ns}:{checkpoint_id}"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The session's latest checkpoint (or None; an older `checkpoint_id` is not kept)."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        raw = self.client.hget(self._key(thread_id), ns)
        if raw is None:
            return None
        saved = json.loads(raw)
        wanted = get_checkpoint_id(config)
        if wanted and wanted != saved["id"]:
            return None
        writes = self.client.hgetall(self._writes_key(thread_id, ns, saved["id"]))
        pending = sorted((json.loads(v) for v in writes.values()), key=lambda w: (w[0], w[4]))
        parent = saved["parent"]
        return CheckpointTuple(
            config={
                "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": saved["id"]}
            },
            checkpoint=self.serde.loads_typed(_unpack(saved["cp"])),
            metadata=self.serde.loads_typed(_unpack(saved["meta"])),
            pending_writes=[(w[0], w[1], self.serde.loads_typed(_unpack(w[2]))) for w in pending],
            parent_config={
                "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}
            }
            if parent
            else None,
        )

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The latest checkpoint of the session, if any (older ones are not kept)."""
        if config is not None and (found := self.get_tuple(config)) is not None and limit != 0:
            yield found

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Replace the session's checkpoint (channel values included) and drop the old one's writes."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        key = self._key(thread_id)
        old = self.client.hget(key, ns)
        saved = {
            "id": checkpoint["id"],
            "parent": conf.get("checkpoint_id"),
            "cp": _pack(self.serde.dumps_typed(checkpoint)),
            "meta": _pack(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
        }
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(key, ns, json.dumps(saved)).expire(key, self.ttl_s)
        if old is not None:
            pipe.delete(self._writes_key(thread_id, ns, json.loads(old)["id"]))
        pipe.execute()
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}
        }

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Keep a task's writes with the checkpoint they belong to."""
        conf = config["configurable"]
        key = self._writes_key(conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        fields = {}
        for idx, (channel, value) in enumerate(writes):
            n = WRITES_IDX_MAP.get(channel, idx)
            fields[f"{task_id}|{n}"] = json.dumps(
                [task_id, channel, _pack(self.serde.dumps_typed(value)), task_path, n]
            )
        if fields:
            pipe = self.client.pipeline(transaction=True)
            pipe.hset(key, mapping=fields).expire(key, self.ttl_s)
            pipe.execute()

    def delete_thread(self, thread_id: str) -> None:
        """Forget a session."""
        keys = [self._key(thread_id), *self.client.scan_iter(match=f"{self._key(thread_id)}:w:*", count=500)]
        self.client.delete(*keys)
