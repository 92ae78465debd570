"""Options a command line takes from elsewhere than its own words: the YAML file that vLLM's and
trtllm-serve's `--config` (trtllm-serve's `--extra_llm_api_options`) names, and vLLM's dotted
keys of a JSON flag (`--speculative-config.method ngram`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from capcliff.analysis.flag_releases import takes
from capcliff.analysis.serve_command.command import FIELD
from capcliff.errors import InputError
from capcliff.files import is_file


def dotted_json(options: list[tuple[str, str | None]], flag: str) -> list[tuple[str, str | None]]:
    """`options` with vLLM's dotted keys of the JSON argument `flag` (`--speculative-config.method
    ngram --speculative-config.num_speculative_tokens 3`, the same as the JSON object; vllm
    utils/argparse_utils.py FlexibleArgumentParser) merged into one `flag` JSON value, after
    any JSON the flag was given whole. A value is read as JSON where it is one (3 is a number),
    else as text."""
    whole: dict[str, Any] = {}
    dotted: dict[str, Any] = {}
    rest: list[tuple[str, str | None]] = []
    for name, value in options:
        head, dot, key = name.partition(".")
        if head.replace("_", "-") != flag or (not dot and value is None):
            rest.append((name, value))
        elif not dot:
            try:
                parsed = json.loads(value or "")
            except ValueError:
                return options  # not JSON: the flag's own reader says so
            if not isinstance(parsed, dict):
                return options
            whole.update(parsed)
        else:
            *parents, leaf = key.split(".")
            where = dotted
            for part in parents:
                where = where.setdefault(part, {}) if isinstance(where.get(part, {}), dict) else {}
            try:
                where[leaf] = True if value is None else json.loads(value)
            except ValueError:
                where[leaf] = value
    if not dotted:
        return options
    return [*rest, (flag, json.dumps({**whole, **dotted}))]


# the flags that name an engine's YAML options file: vLLM's FlexibleArgumentParser `--config`;
# trtllm-serve's `--config`, alias `--extra_llm_api_options` (tensorrt_llm/commands/serve.py)
_CONFIG_FLAGS = {"vllm": ("config",), "trtllm": ("config", "extra_llm_api_options")}
# the first TensorRT-LLM release whose typed flags win over its YAML (data/flag_releases.toml)
TRTLLM_FLAGS_OVER_YAML = "typed flags over the --config YAML"


def yaml_overrides_flags(engine: str, release: tuple[int, int, int] | None) -> bool:
    """Whether `engine` at `release` (None: the latest modelled) lets its YAML file override
    the flags typed on its command line: trtllm-serve before 1.2 only."""
    return engine == "trtllm" and not takes(release, "trtllm", TRTLLM_FLAGS_OVER_YAML)


def with_config_file(
    engine: str,
    options: list[tuple[str, str | None]],
    base_dir: Path | None,
    release: tuple[int, int, int] | None = None,
) -> list[tuple[str, str | None]]:
    """`options` with the named YAML file's options in, so that the last of a setting given
    twice is the one the engine keeps. vLLM inserts them before the command line's, which win
    (`_pull_args_from_config`, vllm/utils/argparse_utils.py, refuses a second `--config`).
    trtllm-serve before 1.2 lets the YAML override the flags (`update_llm_args_with_extra_dict`
    after `get_llm_args`, tensorrt_llm/commands/serve.py); from 1.2 the flags typed win and the
    YAML fills the rest (`yaml_overrides_flags`). Its last `--config` counts."""
    names = _CONFIG_FLAGS.get(engine, ())
    at = [i for i, (name, _) in enumerate(options) if name in names]
    if not at:
        return options
    if engine == "vllm" and len(at) > 1:
        raise InputError(
            f'{FIELD}: --config is given {len(at)} times; vLLM reads one config file ("More '
            'than one config file specified!"): merge them into one'
        )
    flag, value = options[at[-1]]
    data = _config_mapping(flag, value, base_dir)
    rest = [option for i, option in enumerate(options) if i not in at]
    if engine == "vllm":
        return [*_flat_options(data, nested=False), *rest]
    if yaml_overrides_flags(engine, release):
        return [*rest, *_flat_options(data, nested=True)]
    return [*_flat_options(data, nested=True), *rest]


def _config_mapping(flag: str, value: str | None, base_dir: Path | None) -> dict[Any, Any]:
    """The mapping of the YAML file `--flag value` names; a missing, unreadable or non-mapping
    file is a one-line error (the engine does not start without it)."""
    from capcliff.analysis.engine_yaml import read_mapping
    from capcliff.files import read_text

    if not value:
        raise InputError(f"{FIELD}: --{flag} names no file; give the YAML file's path")
    path = Path(value).expanduser()
    if base_dir is not None and not path.is_absolute() and is_file(base_dir / path):
        path = base_dir / path
    text = read_text(path, field=f"{FIELD}: --{flag}")
    try:
        return read_mapping(text)
    except InputError as exc:
        raise InputError(f"{FIELD}: --{flag} {value}: {exc}") from None


def _flat_options(data: Mapping[Any, Any], *, nested: bool) -> list[tuple[str, str | None]]:
    """A YAML mapping as (flag name, value) pairs: vLLM's `key: true` is the switch `--key`
    (false leaves it out) and a mapping is its JSON; trtllm-serve's nested sections are
    `section.key`, its booleans `true`/`false`."""
    out: list[tuple[str, str | None]] = []
    for key, value in data.items():
        name = str(key)
        if nested and isinstance(value, dict):
            out += [(f"{name}.{k}", v) for k, v in _flat_options(value, nested=True)]
        elif value is None or (value is False and not nested):
            continue
        elif isinstance(value, bool):
            out.append((name, ("true" if value else "false") if nested else None))
        elif isinstance(value, dict | list):
            out.append((name, json.dumps(value)))
        else:
            out.append((name, str(value)))
    return out
