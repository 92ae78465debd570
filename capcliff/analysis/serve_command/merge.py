"""A read command combined with what the user also gave, as capcliff flags (`merged_settings`,
`merged_target`) or as a spec scenario's keys (`read_into`): a different value for the same
setting is a one-line error. The model the command names is found in the catalog by its HF repo
id (`catalog_model`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capcliff.analysis.serve_command.command import FIELD, ServeCommand
from capcliff.analysis.serve_command.finish import refuse_v0_offload
from capcliff.analysis.serve_command.parse import parse_serve_command
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError

if TYPE_CHECKING:
    from capcliff.catalog.catalogs import Model


def _same(key: str, given: Any, read: Any) -> bool:
    if key == "engine":  # vllm-v0 is the vLLM command's older engine
        return bool(given == read or (given, read) == ("vllm-v0", "vllm"))
    if key in ("kv_cache_memory", "swap_space", "offload"):
        return str(given).replace(" ", "").lower() == str(read).replace(" ", "").lower() or (
            isinstance(read, int) and _bytes_equal(given, read)
        )
    if isinstance(read, float) and isinstance(given, int | float):
        return abs(float(given) - read) < 1e-9
    return bool(given == read)


def _bytes_equal(given: Any, read: int) -> bool:
    from capcliff.units import parse_bytes

    try:
        return parse_bytes(str(given), field=FIELD) == read
    except InputError:
        return False


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def merged_settings(command: ServeCommand, given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` (DeploymentSettings keys; None: not given) with the command's settings filled in.
    A setting given with another value than the command's is a one-line error."""
    merged = dict(given)
    for key, value in command.settings.items():
        mine = given.get(key)
        if mine is None:
            merged[key] = value
        elif not _same(key, mine, value):
            raise InputError(
                f"{FIELD}: {_flag(key)} {mine} conflicts with the command's {value}; "
                "drop one of them"
            )
    engine = merged.get("engine")
    if command.engine == "vllm" and "offload" in command.settings:
        refuse_v0_offload(str(getattr(engine, "value", engine)) == "vllm-v0", "--engine vllm-v0")
    return merged


def merged_target(
    command: ServeCommand, *, model: str | None, layout: str | None, base_dir: Path | None = None
) -> tuple[str, str]:
    """(model, layout name): the command's, or the given ones where they agree with it. The
    model the command names is found in the catalog by its HF repo id (or used as a path). A
    vLLM line's DP ranks of a MoE model are attention DP (`Layout.in_lockstep`)."""
    given = model is not None
    model = model if model is not None else catalog_model(command.model, base_dir=base_dir)
    named = _catalogued(model)
    # a path relative to a spec's folder is checked where the spec is read
    if (
        given
        and named is not None
        and named.hf_repo.lower() != command.model.lower()
        and not Path(command.model).exists()
    ):
        raise InputError(
            f"{FIELD}: model {model} ({named.hf_repo or 'no HF repo'}) conflicts with the "
            f"command's {command.model}"
        )
    ours = command.layout
    if command.engine == "vllm" and named is not None and named.arch.moe is not None:
        # vLLM runs a MoE model's DP ranks in lockstep with the MoE layers over all dp x tp
        # ranks, TP-sharded without --enable-expert-parallel (docs.vllm.ai,
        # serving/data_parallel_deployment)
        ours = ours.in_lockstep()
    read = parse_layout(layout).name if layout not in (None, "all") else None
    if read is not None and read != ours.name:
        raise InputError(f"{FIELD}: --layout {read} conflicts with the command's {ours.name}")
    return model, ours.name


def _catalogued(model: str) -> Model | None:
    from capcliff.catalog.catalogs import get_model

    try:
        return get_model(model)
    except InputError:
        return None


def catalog_model(name: str, *, base_dir: Path | None = None) -> str:
    """The catalog id whose HF repo is `name` (case-insensitive), else `name` itself when it is
    a catalog id or a path (here, or in `base_dir`: a spec's folder, which reads it from
    there); else a one-line error."""
    from capcliff.catalog.catalogs import model_catalog

    catalog = model_catalog()
    by_repo = {card.hf_repo.lower(): mid for mid, card in catalog.items() if card.hf_repo}
    if name.lower() in by_repo:
        return by_repo[name.lower()]
    if (
        name in catalog
        or Path(name).exists()
        or (base_dir is not None and (base_dir / name).exists())
    ):
        return name
    if name.startswith((".", "/", "~")):  # a path, not a repo id
        where = "here" if base_dir is None else f"here or in {base_dir}"
        raise InputError(f"{FIELD}: the model folder {name!r} is not {where}; give its path")
    raise InputError(
        f"{FIELD}: no model card has hf_repo {name!r}; pass the model's catalog id or a "
        "config.json path as MODEL (see `capcliff models`)"
    )


def read_into(
    keys: Mapping[str, Any], settings: set[str], *, base_dir: Path | None = None
) -> dict[str, Any]:
    """A spec scenario's keys (`keys`, with `serve_command`) with the command's model, layout
    and settings (`settings`: the DeploymentSettings keys) filled in; conflicts are errors. A
    model folder the command names may lie in `base_dir` (the spec's folder)."""
    release = keys.get("engine_version")
    command = parse_serve_command(
        str(keys["serve_command"]),
        base_dir=base_dir,
        release=None if release is None else str(release),
    )
    merged = merged_settings(command, {k: keys.get(k) for k in settings})
    layout = keys.get("layout")
    model, name = merged_target(
        command,
        model=None if keys.get("model") is None else str(keys["model"]),
        layout=None if layout in (None, "auto") else str(layout),
        base_dir=base_dir,
    )
    given = {k: v for k, v in merged.items() if v is not None}
    return {**keys, **given, "model": model, "layout": name}
