"""`scenario.toml`: one business scenario (sources, FAQ, documents, access, routing lists, prompt variables).

A scenario is a folder `<scenarios_dir>/<id>/` holding `scenario.toml`, an optional `faq.csv` and
documents under `data/<source>/`. Adding a scenario is adding a folder: no code changes.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lore.errors import LoreError, NotFoundError

_ID = r"^[a-z0-9][a-z0-9_-]{0,63}$"
RISK_CATEGORIES = ("pricing", "contract", "privacy")


class ScenarioError(LoreError):
    """A scenario folder or `scenario.toml` is missing or invalid; names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_patterns(values: list[str]) -> list[str]:
    """Entries starting with `re:` are regular expressions; they must compile."""
    for v in values:
        if not v.strip():
            raise ValueError("empty keyword")
        if v.startswith("re:"):
            try:
                re.compile(v[3:])
            except re.error as exc:
                raise ValueError(f"bad regular expression {v[3:]!r}: {exc}") from None
    return values


class Source(_Model):
    """A business source: documents under `data/<id>/`, inferred from questions by keyword patterns."""

    id: str = Field(pattern=_ID)
    label: str = ""
    patterns: list[str] = Field(default_factory=list)
    # Optional metadata overrides for this source's documents.
    tenant: str | None = None
    dataset: str | None = None
    visibility: Literal["public", "internal", "restricted"] | None = None
    roles: list[str] | None = None

    _patterns = field_validator("patterns")(_check_patterns)


class Defaults(_Model):
    """Metadata every chunk gets unless its source or FAQ row says otherwise."""

    tenant: str = Field(default="default", min_length=1)
    dataset: str = Field(default="default", min_length=1)
    visibility: Literal["public", "internal", "restricted"] = "internal"
    roles: list[str] = Field(default_factory=list)  # allowed_roles; empty = every role


def _visible_by_default() -> list[Literal["public", "internal", "restricted"]]:
    return ["public", "internal"]


class Access(_Model):
    """What callers of this scenario may ask for: a scope outside these lists is refused."""

    tenants: list[str] = Field(default_factory=list)
    datasets: list[str] = Field(default_factory=list)
    roles: list[str] = Field(default_factory=list)
    default_roles: list[str] = Field(default_factory=list)
    visibility: list[Literal["public", "internal", "restricted"]] = Field(default_factory=_visible_by_default)


class Routing(_Model):
    """Keyword lists (or `re:` patterns) extending the built-in routing rules."""

    greeting: list[str] = Field(default_factory=list)
    thanks: list[str] = Field(default_factory=list)
    handoff: list[str] = Field(default_factory=list)
    out_of_scope: list[str] = Field(default_factory=list)

    _patterns = field_validator("greeting", "thanks", "handoff", "out_of_scope")(_check_patterns)


class Risk(_Model):
    """Keyword lists (or `re:` patterns) per risk category, extending the built-in ones."""

    pricing: list[str] = Field(default_factory=list)
    contract: list[str] = Field(default_factory=list)
    privacy: list[str] = Field(default_factory=list)

    _patterns = field_validator("pricing", "contract", "privacy")(_check_patterns)


PROFILE_NAMES = ("default", "steps", "facts", "compare", "guarded", "privacy")


class ProfileText(_Model):
    """A scenario's own wording for one built-in prompt profile; what it leaves out stays built-in."""

    system: str | None = Field(default=None, min_length=1)
    user_template: str | None = None
    output_rules: list[str] | None = None
    notice: str | None = None

    @field_validator("user_template")
    @classmethod
    def _places_both(cls, value: str | None) -> str | None:
        if value is not None and not ("{passages}" in value and "{question}" in value):
            raise ValueError("must contain {passages} and {question}")
        return value


class Scenario(_Model):
    """A validated `scenario.toml` plus the folder it came from."""

    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    domain: str = ""
    description: str = ""
    kb: str = ""  # knowledge base name; default: the scenario id
    assistant_name: str = "Lore"
    support_contact: str = Field(min_length=1)
    sources: list[Source] = Field(default_factory=list)
    variables: dict[str, str] = Field(default_factory=dict)
    defaults: Defaults = Defaults()
    access: Access = Access()
    routing: Routing = Routing()
    risk: Risk = Risk()
    profiles: dict[str, ProfileText] = Field(default_factory=dict)  # [profiles.<name>] overrides
    folder: Path = Path(".")

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if unknown := sorted(set(self.profiles) - set(PROFILE_NAMES)):
            raise ValueError(
                f"profiles: unknown profile {', '.join(unknown)} (profiles: {', '.join(PROFILE_NAMES)})"
            )
        ids = [s.id for s in self.sources]
        if dupes := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"sources: duplicate id {', '.join(dupes)}")
        a = self.access
        checks: list[tuple[str, Collection[str], list[str], str]] = [
            ("access.default_roles", a.default_roles, a.roles, "access.roles")
        ]
        if a.tenants:
            checks.append(
                ("tenants of defaults/sources", self._written("tenant_id"), a.tenants, "access.tenants")
            )
        if a.datasets:
            checks.append(
                ("datasets of defaults/sources", self._written("dataset_id"), a.datasets, "access.datasets")
            )
        for name, values, allowed, where in checks:
            if extra := sorted({v for v in values if v not in allowed}):
                raise ValueError(f"{name}: {', '.join(extra)} not in {where}")
        return self

    @property
    def kb_name(self) -> str:
        return self.kb or self.id

    @property
    def faq_path(self) -> Path:
        return self.folder / "faq.csv"

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def tenants(self) -> list[str]:
        """Every tenant callers may name: the access list, else the tenants the data is written for."""
        return self.access.tenants or sorted(self._written("tenant_id"))

    @property
    def datasets(self) -> list[str]:
        return self.access.datasets or sorted(self._written("dataset_id"))

    def _written(self, field: str) -> set[str]:
        """The values of a metadata field the scenario's chunks are written with (defaults and sources)."""
        return {self.source_metadata(s)[field] for s in ["general", *(x.id for x in self.sources)]}

    def source(self, source_id: str) -> Source:
        """The named source; an unknown one is an error listing the valid ids."""
        for s in self.sources:
            if s.id == source_id:
                return s
        valid = ", ".join(s.id for s in self.sources) or "(none)"
        raise ScenarioError(f"scenario {self.id!r}: unknown source {source_id!r} (valid: {valid})")

    def source_metadata(self, source_id: str) -> dict[str, Any]:
        """Tenant, dataset, visibility and roles of a source's chunks (documents and FAQ rows alike):
        the source's own overrides, else the scenario defaults; "general" takes the defaults."""
        src = None if source_id == "general" else self.source(source_id)
        d = self.defaults
        return {
            "tenant_id": src.tenant if src and src.tenant else d.tenant,
            "dataset_id": src.dataset if src and src.dataset else d.dataset,
            "visibility": src.visibility if src and src.visibility else d.visibility,
            "allowed_roles": list(src.roles if src and src.roles is not None else d.roles),
        }

    def prompt_variables(self) -> dict[str, str]:
        """Variables injected into prompt profiles (scenario `variables` override the built-in ones)."""
        return {
            "assistant_name": self.assistant_name,
            "business_domain": self.domain or self.name,
            "support_contact": self.support_contact,
            "scenario_name": self.name,
            **self.variables,
        }


def load_scenario(folder: Path) -> Scenario:
    """Read and validate `<folder>/scenario.toml`; every bad field is named with the file."""
    path = folder / "scenario.toml"
    if not path.is_file():
        raise ScenarioError(f"{path}: no scenario.toml in the scenario folder")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    if "folder" in raw:
        raise ScenarioError(f"{path}: folder: not a setting (the scenario's folder is where the file is)")
    try:
        scenario = Scenario(**raw, folder=folder)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise ScenarioError(f"{path}: {problems}") from None
    if scenario.id != folder.name:
        raise ScenarioError(f"{path}: id: {scenario.id!r} differs from the folder name {folder.name!r}")
    return scenario


class Scenarios:
    """The scenarios under one folder (`scenario.scenarios_dir`, default `./scenarios`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "scenario.toml").is_file())

    def get(self, scenario_id: str) -> Scenario:
        """Load one scenario by id; an unknown id is an error listing the known ones."""
        if not re.match(_ID, scenario_id) or not (self.root / scenario_id / "scenario.toml").is_file():
            known = ", ".join(self.ids()) or "(none)"
            raise NotFoundError(f"unknown scenario {scenario_id!r} in {self.root} (known: {known})")
        return load_scenario(self.root / scenario_id)
