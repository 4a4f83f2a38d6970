"""Storage in an S3-compatible bucket (AWS S3, MinIO, Ceph, ...) through boto3, with a local download
cache: a key's local copy is refreshed when the object's ETag differs from the one it was fetched with."""

from __future__ import annotations

import builtins
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lore.config import StorageSettings
from lore.errors import ConfigError, MissingDependencyError, UnavailableError
from lore.storage.base import Entry, check_key
from lore.storage.local import _relative_key

_INSTALL_HINT = "pip install 'lore-kb[s3]'"
_MISSING = {"404", "NoSuchKey", "NotFound"}


def parse_url(url: str) -> tuple[str, str]:
    """`s3://bucket/prefix` → (bucket, prefix without slashes at either end); ConfigError otherwise."""
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc or parsed.query or parsed.fragment:
        raise ConfigError(f"storage.url {url!r}: expected s3://bucket or s3://bucket/prefix")
    return parsed.netloc, parsed.path.strip("/")


def _client(settings: StorageSettings) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise MissingDependencyError(f"S3 storage needs boto3: {_INSTALL_HINT}") from exc
    return boto3.client(
        "s3",
        endpoint_url=settings.endpoint_url or None,
        region_name=settings.region or None,
        aws_access_key_id=settings.access_key_id or None,
        aws_secret_access_key=settings.secret_access_key or None,
        config=Config(
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=settings.timeout_s,
            read_timeout=settings.timeout_s,
            s3={"addressing_style": settings.addressing_style},
        ),
    )


def _etag_file(local: Path) -> Path:
    return local.with_name(f".{local.name}.etag")  # hidden: never listed, never a build input


def _etag(local: Path) -> str | None:
    try:
        return _etag_file(local).read_text(encoding="utf-8")
    except OSError:
        return None


class S3Storage:
    """Keys are objects `<prefix>/<key>` in one bucket; `root` is this process's download cache."""

    def __init__(self, settings: StorageSettings, cache_dir: Path) -> None:
        self.bucket, self.prefix = parse_url(settings.url)
        self.root = cache_dir
        self._s3 = _client(settings)
        from botocore.exceptions import BotoCoreError, ClientError

        self._client_error, self._transport_errors = ClientError, (BotoCoreError,)

    def _name(self, key: str) -> str:
        return f"{self.prefix}/{check_key(key)}" if self.prefix else check_key(key)

    def _call(self, method: str, **kwargs: Any) -> Any:
        """One S3 call; None for a missing object; `UnavailableError` (503) when the service is down or
        refuses (credentials, permissions): a deployment problem, not the caller's."""
        try:
            return getattr(self._s3, method)(**kwargs)
        except self._client_error as exc:
            code = str(exc.response.get("Error", {}).get("Code"))
            if code in _MISSING:
                return None
            raise UnavailableError(f"object storage s3://{self.bucket}: {code} on {method}") from exc
        except self._transport_errors as exc:
            raise UnavailableError(f"object storage s3://{self.bucket} unreachable: {exc}") from exc

    def path(self, key: str) -> Path:
        return self.root / check_key(key)

    def fetch(self, key: str) -> Path | None:
        local = self.path(key)
        head = self._call("head_object", Bucket=self.bucket, Key=self._name(key))
        if head is None:
            local.unlink(missing_ok=True)
            _etag_file(local).unlink(missing_ok=True)
            return None
        if local.is_file() and local.stat().st_size == head["ContentLength"] and _etag(local) == head["ETag"]:
            return local
        local.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=local.parent, prefix=".dl-", delete=False) as tmp:
            body = self._call("get_object", Bucket=self.bucket, Key=self._name(key))
            if body is None:  # deleted in between
                Path(tmp.name).unlink(missing_ok=True)
                return None
            shutil.copyfileobj(body["Body"], tmp)
        mtime = body["LastModified"].timestamp()  # every replica's copy gets the object's time
        os.utime(tmp.name, (mtime, mtime))
        os.replace(tmp.name, local)
        _etag_file(local).write_text(body["ETag"], encoding="utf-8")
        return local

    def put(self, key: str, src: Path) -> None:
        self._upload(key, src)
        local = self.path(key)  # keep the finished file as the cached copy
        local.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, local)
        self._stamp(key, local)

    def publish(self, key: str) -> None:
        local = self.path(key)
        self._upload(key, local)
        self._stamp(key, local)

    def _upload(self, key: str, src: Path) -> None:
        with src.open("rb") as f:
            self._call("put_object", Bucket=self.bucket, Key=self._name(key), Body=f)

    def _stamp(self, key: str, local: Path) -> None:
        """Give the cached copy the object's time and ETag, so `fetch` knows it is current."""
        head = self._call("head_object", Bucket=self.bucket, Key=self._name(key))
        if head is not None:
            mtime = head["LastModified"].timestamp()
            os.utime(local, (mtime, mtime))
            _etag_file(local).write_text(head["ETag"], encoding="utf-8")

    def read_bytes(self, key: str) -> bytes | None:
        body = self._call("get_object", Bucket=self.bucket, Key=self._name(key))
        return None if body is None else bytes(body["Body"].read())

    def write_bytes(self, key: str, data: bytes) -> None:
        self._call("put_object", Bucket=self.bucket, Key=self._name(key), Body=data)

    def _objects(self, prefix: str, delimiter: str) -> list[dict[str, Any]]:
        folder = self._name(prefix) + "/"
        out: list[dict[str, Any]] = []
        token: dict[str, str] = {}
        while True:
            page = self._call(
                "list_objects_v2", Bucket=self.bucket, Prefix=folder, Delimiter=delimiter, **token
            )
            out += page.get("Contents", []) if page else []
            if not page or not page.get("IsTruncated"):
                return out
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def list(self, prefix: str) -> list[Entry]:
        entries = [Entry(o["Key"].rsplit("/", 1)[-1], int(o["Size"])) for o in self._objects(prefix, "/")]
        return sorted((e for e in entries if e.name and not e.name.startswith(".")), key=lambda e: e.name)

    def folders(self, prefix: str) -> builtins.list[str]:
        folder = self._name(prefix) + "/"
        names: list[str] = []
        token: dict[str, str] = {}
        while True:
            page = self._call("list_objects_v2", Bucket=self.bucket, Prefix=folder, Delimiter="/", **token)
            names += [p["Prefix"][len(folder) :].rstrip("/") for p in (page or {}).get("CommonPrefixes", [])]
            if not page or not page.get("IsTruncated"):
                return sorted(n for n in names if n and not n.startswith("."))
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def move_prefix(self, src: str, dest: str) -> int:
        # S3 has no rename: each object is copied (unless already there), then the old ones deleted.
        # Another process doing the same copies the same bytes; a source gone meanwhile is skipped.
        folder, moved = self._name(src) + "/", 0
        for obj in self._objects(src, ""):
            target = self._name(f"{dest}/{obj['Key'][len(folder) :]}")
            if self._call("head_object", Bucket=self.bucket, Key=target) is not None:
                continue
            source = {"Bucket": self.bucket, "Key": obj["Key"]}
            if self._call("copy_object", Bucket=self.bucket, Key=target, CopySource=source) is not None:
                moved += 1
        self.delete_prefix(src)
        return moved

    def delete_prefix(self, prefix: str) -> None:
        keys = [o["Key"] for o in self._objects(prefix, "")]
        for i in range(0, len(keys), 1000):
            batch = [{"Key": k} for k in keys[i : i + 1000]]
            self._call("delete_objects", Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
        shutil.rmtree(self.path(prefix), ignore_errors=True)

    def delete(self, key: str) -> bool:
        found = self._call("head_object", Bucket=self.bucket, Key=self._name(key)) is not None
        if found:
            self._call("delete_object", Bucket=self.bucket, Key=self._name(key))
        local = self.path(key)
        local.unlink(missing_ok=True)
        _etag_file(local).unlink(missing_ok=True)
        return found

    def key_of(self, path: Path) -> str | None:
        return _relative_key(self.root, path)

    def check(self) -> None:
        if self._call("head_bucket", Bucket=self.bucket) is None:
            raise UnavailableError(f"object storage: bucket {self.bucket!r} does not exist")
