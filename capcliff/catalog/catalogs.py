"""Load and validate the catalogs (model cards, hardware specs) and user-supplied HF model configs.

Every loading error reads `path: field: message`. Catalog files ship inside the package
(`capcliff/_data/`, put there by the wheel build) and are read from the repository's top-level
`model_cards/` and `hardware/` folders in a source checkout.
"""

from __future__ import annotations

import difflib
import json
import re
import struct
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from capcliff.catalog.architecture import Architecture, architecture_from_config
from capcliff.catalog.specs import HardwareSpec, ModelCard, PublishedParams
from capcliff.errors import CatalogError, UnknownIdError
from capcliff.files import text_problem, unreadable

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
# A Hugging Face repo id: `organisation/name` (huggingface_hub's REPO_ID_REGEX, simplified).
HF_REPO_ID = re.compile(r"[\w.-]+/[\w.-]+")
T = TypeVar("T", bound=BaseModel)


def catalog_dir(kind: str) -> Path:
    """The folder holding catalog `kind` ("model_cards" or "hardware")."""
    shipped = _PACKAGE_DIR / "_data" / kind
    return shipped if shipped.is_dir() else _PACKAGE_DIR.parent / kind


def _validation_message(path: Path, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "(file)"
        lines.append(f"{path}: {field}: {item['msg']}")
    return "\n".join(lines)


def read_user_text(path: Path) -> str:
    """A catalog or config file's text; a missing, directory, binary or non-UTF-8 file is a
    CatalogError `path: (file): problem`."""
    problem = unreadable(path)
    if problem is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            problem = str(exc.strerror)
        else:
            problem = text_problem(data)
            if problem is None:
                return data.decode("utf-8")
    raise CatalogError(f"{path}: (file): {problem}")


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file, reporting syntax errors as `path: (toml): message`."""
    text = read_user_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: (toml): {exc}") from None


def load_entry(path: Path, model: type[T]) -> T:
    """Validate one catalog file against its pydantic model; its `id` must equal its file stem."""
    data = load_toml(path)
    try:
        entry = model.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(_validation_message(path, exc)) from None
    if getattr(entry, "id", None) != path.stem:
        raise CatalogError(f"{path}: id: {data.get('id')!r} must equal the file name {path.stem!r}")
    return entry


def load_folder(folder: Path, model: type[T]) -> dict[str, T]:
    """Every `*.toml` in `folder`, keyed by id; a duplicate id (any case) is an error."""
    entries: dict[str, T] = {}
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.toml")):
        entry = load_entry(path, model)
        key = path.stem.lower()
        if key in seen:
            raise CatalogError(f"{path}: id: duplicate of {seen[key]}")
        seen[key] = path
        entries[path.stem] = entry
    return entries


@cache
def hardware_catalog() -> dict[str, HardwareSpec]:
    """All shipped hardware specs by id."""
    return load_folder(catalog_dir("hardware"), HardwareSpec)


@cache
def model_catalog() -> dict[str, ModelCard]:
    """All shipped model cards by id (each card's config is checked when the card is used)."""
    return load_folder(catalog_dir("model_cards"), ModelCard)


def _unknown(kind: str, name: str, known: list[str]) -> UnknownIdError:
    query = name.lower()
    close = [k for k in sorted(known) if k.startswith(query) or query in k]
    close += [k for k in difflib.get_close_matches(query, known, n=3, cutoff=0.5) if k not in close]
    close = close[:3]
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}"
    return UnknownIdError(f"{kind}: unknown id {name!r}; {hint}")


def get_hardware(name: str) -> HardwareSpec:
    """A hardware spec by id, with the closest ids suggested when unknown."""
    path = catalog_dir("hardware") / f"{name}.toml"
    if path.is_file():  # one file is all a command needs; the catalog tests validate the rest
        return load_entry(path, HardwareSpec)
    catalog = hardware_catalog()
    if name in catalog:
        return catalog[name]
    raise _unknown("gpu", name, list(catalog))


@dataclass(frozen=True)
class Model:
    """A model ready for the calculators: where it came from and its architecture."""

    id: str
    name: str
    source: str
    arch: Architecture
    published: PublishedParams | None = None
    checkpoint_bytes: int | None = None  # exact, from safetensors headers, when available
    hf_repo: str = ""  # the HF repo id an engine loads ("" when a user's config names none)
    local_path: str = ""  # the model directory a user gave (an engine can load it too)


def model_from_card(card: ModelCard, *, path: str) -> Model:
    """Turn a validated card into a Model (validating its config fields)."""
    arch = architecture_from_config(card.config, path=f"{path}: config")
    return Model(
        id=card.id,
        name=card.name,
        source=card.source,
        arch=arch,
        published=card.published_params,
        hf_repo=card.hf_repo,
    )


def _load_config_json(path: Path) -> dict[str, Any]:
    text = read_user_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path}: (json): {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise CatalogError(f"{path}: (json): nested too deeply") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: (json): expected an object of config fields")
    return data


def safetensors_bytes(folder: Path) -> int | None:
    """Exact tensor bytes of every `*.safetensors` file in `folder`, read from their headers only.

    A safetensors file starts with an 8-byte little-endian header length, then a JSON header whose
    entries give each tensor's `data_offsets` [start, end) in bytes.
    """
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        try:
            with path.open("rb") as handle:
                (length,) = struct.unpack("<Q", handle.read(8))
                header = json.loads(handle.read(length))
        except (OSError, struct.error, json.JSONDecodeError, UnicodeDecodeError):
            raise CatalogError(f"{path}: (safetensors): unreadable header") from None
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            start, end = entry["data_offsets"]
            total += end - start
    return total


def model_from_path(path: Path) -> Model:
    """A model from an HF `config.json` file or a directory holding one (and maybe safetensors)."""
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.is_file():
        raise CatalogError(f"{config_path}: (file): no such config.json")
    raw = _load_config_json(config_path)
    arch = architecture_from_config(raw, path=str(config_path))
    named = raw.get("_name_or_path")
    name = named if isinstance(named, str) and named else config_path.parent.name
    return Model(
        id=name,
        name=name,
        source=str(config_path),
        arch=arch,
        checkpoint_bytes=safetensors_bytes(path) if path.is_dir() else None,
        hf_repo=name if HF_REPO_ID.fullmatch(name) and not Path(name).exists() else "",
        local_path=str(path) if path.is_dir() else "",
    )


def get_model(name: str) -> Model:
    """A catalog model by id, or a model from a config.json path or model directory."""
    path = catalog_dir("model_cards") / f"{name}.toml"
    if path.is_file():
        return model_from_card(load_entry(path, ModelCard), path=str(path))
    catalog = model_catalog()
    candidate = Path(name)
    if candidate.suffix == ".json" or candidate.exists() or "/" in name:
        return model_from_path(candidate)
    raise _unknown("model", name, list(catalog))
