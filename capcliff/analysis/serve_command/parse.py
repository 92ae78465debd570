"""`parse_serve_command`: a command line through the shell split, its config file, each flag's
reader and the layout into a `ServeCommand`; `named_files`, the files a line names."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from capcliff.analysis.flag_releases import first
from capcliff.analysis.serve_command.command import FIELD, ServeCommand
from capcliff.analysis.serve_command.config_files import dotted_json, with_config_file
from capcliff.analysis.serve_command.finish import check_visible, finish, read_layout
from capcliff.analysis.serve_command.readers import Reading, read_environment, read_options
from capcliff.analysis.serve_command.shell import (
    MANY_VALUES,
    command_words,
    split_engine,
    split_options,
    take_assignments,
)
from capcliff.errors import InputError
from capcliff.files import is_file
from capcliff.releases import parse_version


def parse_serve_command(
    text: str, *, base_dir: Path | None = None, release: str | None = None
) -> ServeCommand:
    """The deployment an engine command line launches (see the package docstring). A YAML file
    the line names (`--config`, trtllm-serve's `--extra_llm_api_options`) is read from
    `base_dir` (a spec's folder) where it lies there, else from the current folder; whether it
    or the typed flags win follows the engine's `release` (None: the latest modelled)."""
    words = command_words(text)
    env = take_assignments(words)
    if not words:
        raise InputError(f"{FIELD}: empty; give the engine command line, e.g. 'vllm serve MODEL'")
    engine, rest = split_engine(words)
    version = None if release is None else parse_version(release)
    reading = Reading(engine, release=version)
    read_environment(reading, env)
    positional, options = split_options(
        rest, MANY_VALUES.get(engine, frozenset()), _valued_switches(reading, version)
    )
    options = with_config_file(engine, options, base_dir, version)
    if engine == "vllm":
        options = dotted_json(options, "speculative-config")
    read_options(reading, options)
    # SGLang's launch_server takes no positional argument: the model is --model-path
    extra = positional if reading.model is not None or engine == "sglang" else positional[1:]
    if extra:  # `--tensor-parallel-size 2 2`: the engines' argparse refuses the second 2
        raise InputError(
            f"{FIELD}: {extra[0]!r:.40} is neither the model nor a flag's value; the engine "
            "refuses it (unrecognized arguments)"
        )
    if reading.model is None and positional:
        reading.model = positional[0]
    if not reading.model:
        raise InputError(f"{FIELD}: the command names no model")
    layout = read_layout(reading)
    check_visible(reading, layout)
    finish(reading, layout)
    return ServeCommand(
        engine=engine, model=reading.model, layout=layout, settings=reading.settings,
        unmodelled=tuple(reading.unmodelled),
    )  # fmt: skip


def _valued_switches(reading: Reading, version: tuple[int, int, int] | None) -> frozenset[str]:
    """The switches that take `=value` on the command's release: vLLM's --enable-chunked-prefill
    is a StoreBoolean (`--enable-chunked-prefill=False`) before its BooleanOptionalAction (0.8.5,
    flag_releases), so on a release before it or a V0 command whose release is not given."""
    if reading.engine != "vllm":
        return frozenset()
    older = version < first("vllm", "--no-enable-chunked-prefill") if version else reading.vllm_v0
    return frozenset({"enable-chunked-prefill"}) if older else frozenset()


def named_files(text: str, folders: Iterable[Path]) -> list[Path]:
    """The files a command line names (`--config cfg.yaml`, `--extra_llm_api_options=x.yml`),
    found under any of `folders`: the engine reads them, so no output of a run may replace one."""
    try:
        words = command_words(text)
    except InputError:
        return []
    names = [part for word in words for part in (word, word.partition("=")[2]) if part]
    return [
        folder / name
        for name in names
        for folder in folders
        if not name.startswith("-") and is_file(folder / name)
    ]
