"""Load and validate the catalogs (model cards, hardware specs) and user-supplied HF model configs.

Every loading error reads `path: field: message`. Catalog files ship inside the package
(`capcliff/_data/`, put there by the wheel build) and are read from the repository's top-level
`model_cards/` and `hardware/` folders in a source checkout.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import struct
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from capcliff.catalog.architecture import Architecture, architecture_from_config
from capcliff.catalog.quantization import quantization_from_config
from capcliff.catalog.specs import HardwareSpec, ModelCard, PublishedParams
from capcliff.errors import CatalogError, UnknownIdError
from capcliff.files import (
    file_bytes,
    is_file,
    key_label,
    parse_json,
    parse_toml,
    text_problem,
    unreadable,
)

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
            data = file_bytes(path)
        except OSError as exc:
            problem = str(exc.strerror)
        else:
            problem = text_problem(data)
            if problem is None:
                return data.decode("utf-8-sig")  # a leading byte-order mark dropped
    raise CatalogError(f"{path}: (file): {problem}")


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file, reporting syntax errors as `path: (toml): message`."""
    return parse_toml(read_user_text(path), source=str(path), error=CatalogError)


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


def _catalog_file(kind: str, name: str) -> Path | None:
    """The catalog file of id `name`, or None: a name with a path separator is no id (it joined
    onto the catalog folder, so `--gpu /tmp/x` read /tmp/x.toml unchecked as a catalog entry)."""
    if not name or any(sep in name for sep in ("/", "\\", os.sep)) or name in (".", ".."):
        return None
    path = catalog_dir(kind) / f"{name}.toml"
    return path if is_file(path) else None


def get_hardware(name: str) -> HardwareSpec:
    """A hardware spec by id, with the closest ids suggested when unknown."""
    path = _catalog_file("hardware", name)
    if Path(name).suffix == ".toml" or "/" in name or os.sep in name:
        raise UnknownIdError(
            f"gpu: {name!r:.80} is a path; give a hardware id (see capcliff hardware): hardware "
            "files are read from the catalog only"
        )
    if path is not None:  # one file is all a command needs; the catalog tests validate the rest
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
    # the config the architecture was read from (None: not at hand), for a launch-line override
    config: dict[str, Any] | None = field(default=None, compare=False, repr=False)


def with_rope_scaling(model: Model, table: dict[str, Any]) -> Model:
    """`model` with `table` in place of its config's RoPE table, as the engines apply it at
    launch (vLLM's --rope-scaling and --hf-overrides update the config before the context is
    derived, vllm/transformers_utils/config.py; SGLang's --json-model-override-args updates
    hf_config, srt/configs/model_config.py): set on the text config where the model nests one,
    which is where the context is read."""
    if model.config is None:
        raise CatalogError(f"{model.source}: rope_scaling: the model's config is not at hand")
    raw = dict(model.config)
    text = raw.get("text_config")
    if isinstance(text, dict):
        raw["text_config"] = {**text, "rope_scaling": table}
    else:
        raw["rope_scaling"] = table
    arch = architecture_from_config(raw, path="--rope-scaling")
    return replace(model, arch=arch, config=raw)


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
        config=card.config,
    )


def _load_config_json(path: Path) -> dict[str, Any]:
    data = parse_json(read_user_text(path), source=str(path), error=CatalogError)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: (json): expected an object of config fields")
    return data


def _optional_file(path: Path) -> bool:
    """Whether the optional file `path` is there to read (False: absent). Something else by its
    name (a FIFO, a device, a folder, a dangling link) is a CatalogError: it was skipped as
    absent and the checkpoint sized without it (a GPTQ side file: at bf16)."""
    if is_file(path):
        return True
    try:
        there = os.path.lexists(path)
    except (OSError, ValueError):  # a name the system refuses: absent, as is_file says
        there = False
    if there:
        raise CatalogError(
            f"{path}: (file): not a regular file (a folder, device, pipe or dangling link); "
            "give the file or remove it"
        )
    return False


def _with_modelopt_file(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`raw` with the folder's `hf_quant_config.json` as its quantization_config when it has
    none: ModelOpt 0.29 and before wrote the format there, and vLLM reads it from there (its
    `transformers_utils/config.py`, "ModelOpt 0.29.0 and before saves the quantization config in
    a separate hf_quant_config.json"); such a checkpoint was sized at bf16."""
    if raw.get("quantization_config") is not None:
        return raw
    for name, method in _SIDE_FILES:
        side = folder / name
        if not _optional_file(side):
            continue
        data = _load_config_json(side)
        if method and "quant_method" not in data:
            data = {**data, "quant_method": method}
        quantization_from_config(data, path=str(side))  # its own problems, named by its own path
        return {**raw, "quantization_config": data}
    return raw


# Side files that hold a checkpoint's format when config.json has none, and the method each
# implies: AutoGPTQ's quantize_config.json and AutoAWQ's quant_config.json (no quant_method; vLLM
# reads them by name, `get_config_filenames` of its GPTQConfig and AWQConfig, weight_utils.py
# `get_quant_config`); such a checkpoint was sized at bf16.
_SIDE_FILES = (
    ("hf_quant_config.json", ""), ("quantize_config.json", "gptq"), ("quant_config.json", "awq"),
)  # fmt: skip


# Bytes per element of each safetensors dtype (the format's `Dtype` enum; sub-byte and 8-bit
# floats as the `safetensors` package names them). F4 (two per byte) counts half a byte.
SAFETENSORS_DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
# The safetensors format refuses headers over 100 MB (`safetensors` N_LEN limit).
SAFETENSORS_MAX_HEADER_BYTES = 100_000_000


def _tensor_bytes(name: str, entry: object, data_bytes: int) -> str | int:
    """Bytes of one header entry, or why it is malformed (dtype, shape, data_offsets)."""
    if not isinstance(entry, dict):
        return f"{name}: must be an object with dtype, shape and data_offsets"
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BITS:  # a list: unhashable
        known = ", ".join(SAFETENSORS_DTYPE_BITS)
        return f"{name}.dtype: unknown {dtype!r}; known: {known}"
    if not isinstance(shape, list) or not all(_whole(d) and d >= 0 for d in shape):
        return f"{name}.shape: must be a list of integers >= 0, got {shape!r}"
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_whole(o) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_bytes
    ):
        return f"{name}.data_offsets: must be [start, end] within the {data_bytes} data bytes"
    size = offsets[1] - offsets[0]
    elements = 1
    for d in shape:
        elements *= d
    if size * 8 != elements * SAFETENSORS_DTYPE_BITS[dtype]:
        return f"{name}.data_offsets: {size} bytes do not hold {dtype} of shape {shape}"
    return int(size)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _safetensors_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, data bytes) of one safetensors file; a malformed header is a CatalogError."""

    def bad(problem: str) -> CatalogError:
        return CatalogError(f"{path}: (safetensors): {problem}")

    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO blocked open(2) forever
            raise bad("a device, pipe or socket, not a file; give the checkpoint's shard")
        with path.open("rb") as handle:
            prefix = handle.read(8)
            size = path.stat().st_size
            if len(prefix) < 8:
                raise bad("shorter than the 8-byte header length; truncated")
            (length,) = struct.unpack("<Q", prefix)
            if length > min(size - 8, SAFETENSORS_MAX_HEADER_BYTES):
                raise bad(f"header length {length} is past the file's {size - 8} bytes; truncated")
            raw = handle.read(length)
    except OSError as exc:
        raise bad(f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise bad("header is not UTF-8 JSON") from None
    header = parse_json(text, source=f"{path}: (safetensors) header", error=CatalogError)
    if not isinstance(header, dict):
        raise bad("header must be a JSON object of tensors")
    return header, size - 8 - length


def safetensors_bytes(folder: Path) -> int | None:
    """Exact tensor bytes of every `*.safetensors` file in `folder`, read from their headers only.

    A safetensors file starts with an 8-byte little-endian header length, then a JSON header whose
    entries give each tensor's dtype, shape and `data_offsets` [start, end) in bytes within the
    data that follows; an entry whose bytes disagree with dtype x shape is refused.
    """
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    indexed = _indexed_shards(folder, files)
    if indexed is not None:
        # only the shards the index names: Mistral-7B-v0.3 ships a consolidated.safetensors
        # beside its shards, and it was counted twice (vLLM loads the index's files alone:
        # model_executor/model_loader/weight_utils.py, filter_duplicate_safetensors_files)
        files = [f for f in files if f.name in indexed]
    else:
        _refuse_missing_numbered_shards(folder, files)
    total = 0
    seen: set[str] = set()
    for path in files:
        header, data_bytes = _safetensors_header(path)
        spans: list[tuple[int, int, str]] = []
        for name, entry in header.items():
            if name == "__metadata__":  # the format's free-form text-to-text map
                if not isinstance(entry, dict) or not all(
                    isinstance(v, str) for v in entry.values()
                ):
                    raise CatalogError(
                        f"{path}: (safetensors): __metadata__: must be an object of strings, "
                        f"got {entry!r:.60}"
                    )
                continue
            found = _tensor_bytes(key_label(name), entry, data_bytes)
            if isinstance(found, str):
                raise CatalogError(f"{path}: (safetensors): {found}")
            spans.append((*entry["data_offsets"], key_label(name)))
            # a tensor two files hold is one parameter: vLLM loads files in turn into the
            # model's parameters by name, a later copy overwriting (weight_utils.py,
            # safetensors_weights_iterator; the model's load_weights)
            total += 0 if name in seen else found
            seen.add(name)
        _refuse_overlaps(path, spans, data_bytes)
    return total


SHARD_INDEX = "model.safetensors.index.json"
# huggingface_hub's shard names (split_torch_state_dict_into_shards: `model-00001-of-00004`)
_NUMBERED_SHARD = re.compile(r"^(?P<stem>.+)-(?P<i>\d{1,9})-of-(?P<n>\d{1,9})\.safetensors$")


def _refuse_missing_numbered_shards(folder: Path, files: list[Path]) -> None:
    """A folder without an index whose shards are numbered `-K-of-N` lacks one of the N: a
    partial download, refused as with an index (its headers' bytes are not the checkpoint's)."""
    groups: dict[tuple[str, str], set[int]] = {}
    for f in files:
        if match := _NUMBERED_SHARD.match(f.name):
            groups.setdefault((match["stem"], match["n"]), set()).add(int(match["i"]))
    for (stem, n), have in sorted(groups.items()):
        total = int(n)
        lacking = total - len({k for k in have if 1 <= k <= total})
        if lacking > 0:
            first = next(k for k in range(1, total + 1) if k not in have)
            raise CatalogError(
                f"{folder}: (safetensors): holds {total - lacking} of the {total} shards "
                f"{stem}-K-of-{n}.safetensors (lacks K = {first}{' ...' if lacking > 1 else ''}) "
                "and no model.safetensors.index.json; finish the download, or give its "
                "config.json alone"
            )


def _indexed_shards(folder: Path, files: list[Path]) -> set[str] | None:
    """The shard file names the folder's index names (None: no index); a sharded checkpoint
    whose index names a shard the folder lacks is a partial download, refused: its headers'
    bytes were printed as the checkpoint's. (A folder with the index and no shard at all is a
    config-only copy: sized from config.json, as without the index.)"""
    index = folder / SHARD_INDEX
    if not _optional_file(index):
        return None
    data = parse_json(read_user_text(index), source=str(index), error=CatalogError)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise CatalogError(f"{index}: weight_map: must be an object of tensor -> shard file names")
    present = {f.name for f in files}
    named = set(weight_map.values())
    if not named:  # every file was dropped as not in the index: the checkpoint read as none
        raise CatalogError(f"{index}: weight_map: names no shard; give the tensors' files")
    missing = sorted(named - present)
    if missing:
        raise CatalogError(
            f"{index}: weight_map: names {len(missing)} shard(s) not in the folder "
            f"({missing[0]!r:.80}{' ...' if len(missing) > 1 else ''}); the checkpoint is "
            "incomplete: finish the download, or give its config.json alone"
        )
    return named


def _refuse_overlaps(path: Path, spans: list[tuple[int, int, str]], data_bytes: int) -> None:
    """Tensors lie end to end from byte 0, in offset order (safetensors' `Metadata::validate`:
    each start must equal the previous end), and fill the data (its `deserialize`:
    MetadataIncompleteBuffer otherwise); two sharing bytes were counted twice, and bytes past the
    last tensor were not counted."""
    at, before = 0, "the data's start"
    for start, end, name in sorted(spans):
        if start != at:
            where = "overlaps" if start < at else "leaves a gap after"
            raise CatalogError(
                f"{path}: (safetensors): {name}.data_offsets: [{start}, {end}] {where} {before} "
                f"(ends at {at}); tensors lie end to end"
            )
        at, before = end, name
    if at != data_bytes:
        raise CatalogError(
            f"{path}: (safetensors): the data holds {data_bytes} bytes and its tensors end at "
            f"{at}; the file is cut or carries bytes no tensor names"
        )


def model_from_path(path: Path) -> Model:
    """A model from an HF `config.json` file or a directory holding one (and maybe safetensors)."""
    problem = unreadable(path)
    if problem not in (None, "a directory, not a file", "no such file"):  # a name too long
        raise CatalogError(f"{str(path)!r:.80}: (file): {problem}; give a shorter path")
    config_path = path / "config.json" if path.is_dir() else path
    if not _optional_file(config_path):
        raise CatalogError(f"{config_path}: (file): no such config.json")
    raw = _with_modelopt_file(_load_config_json(config_path), config_path.parent)
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
        config=raw,
    )


def get_model(name: str) -> Model:
    """A catalog model by id, or a model from a config.json path or model directory."""
    if not name.strip():  # read as the current folder: "config.json: no such config.json"
        raise CatalogError("model: blank; give a catalog id (see capcliff models), an HF "
                           "config.json or a model folder")  # fmt: skip
    path = _catalog_file("model_cards", name)
    if path is not None:
        return model_from_card(load_entry(path, ModelCard), path=str(path))
    catalog = model_catalog()
    candidate = Path(name)
    if candidate.suffix == ".toml":  # parsed as JSON: "(json): Expecting value at line 1"
        raise CatalogError(
            f"{name!r:.80}: (file): a model card is read from the catalog only; give a catalog "
            "id (see capcliff models), an HF config.json or a model folder"
        )
    missing = unreadable(candidate) == "no such file"
    if missing and (by_repo := catalog_id_of_repo(name)):
        # an HF repo id, as `vllm serve` takes it (a local folder of that name comes first)
        return get_model(by_repo)
    if missing and HF_REPO_ID.fullmatch(name) and candidate.suffix != ".json":
        raise CatalogError(
            f"model: {name!r:.80} is no file or folder here and no model card's hf_repo (see "
            "capcliff models); give a catalog id, or the model's config.json or folder"
        )
    if candidate.suffix == ".json" or unreadable(candidate) != "no such file" or "/" in name:
        return model_from_path(candidate)
    raise _unknown("model", name, list(catalog))


# Repositories the Hub renamed and redirects: Meta's Llama 3.1 checkpoints were published as
# `meta-llama/Meta-Llama-3.1-8B(-Instruct)` (July 2024) and renamed `meta-llama/Llama-3.1-8B`; vLLM
# and SGLang write the name they were given (a 2024 result or log holds the old one). Llama 3's own
# `Meta-Llama-3-8B` was never renamed, and 3.2 on were published under `Llama-3.x`.
_RENAMED_REPO = re.compile(r"(?<![\w.-])meta-(?=llama-3\.1-)", re.IGNORECASE)


def current_repo_name(name: str) -> str:
    """`name` (a repo id, its last part or a folder) under the name the Hub now gives it."""
    return _RENAMED_REPO.sub("", name)


def catalog_id_of_repo(name: str) -> str | None:
    """The id of the model card whose `hf_repo` is `name` (case-insensitive, as the Hub reads
    repo ids; a renamed repository's old name too: `current_repo_name`), else None."""
    query = current_repo_name(name.strip()).lower()
    found = [mid for mid, card in model_catalog().items() if (card.hf_repo or "").lower() == query]
    return found[0] if query and found else None
