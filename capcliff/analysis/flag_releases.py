"""The first release of each engine that takes a flag, option value or YAML key the engine lines
print (`analysis/flags.py`), so a line for `--engine-version R` names only what release R parses.

The boundaries are data (`data/flag_releases.toml`), each with the engine source it was read from
(the parsers of the releases either side of it). A release is (major, minor, patch) as
`releases.parse_version` reads it. None for a line's release means the latest modelled release,
which takes every flag here.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, ValidationError

from capcliff.errors import CatalogError
from capcliff.releases import parse_version

Release = tuple[int, int, int]

RELEASES_FILE = "flag_releases.toml"
# The release a V0 line names when none is given: the V0 profile describes 0.6 - 0.7.
VLLM_V0_LINE_RELEASE: Release = (0, 7, 3)
# vLLM --block-size choices by release: V0's arg_utils.py `choices=[8, 16, 32, 64, 128]` (to
# 0.7.x); V1's config `BlockSize` Literal adds 1 (0.8.0 - 0.13.x) and 256 (0.14.0 - 0.17.0);
# 0.18.0's `block_size: SkipValidation[int]` takes any size (no choices).
VLLM_BLOCK_SIZES: tuple[tuple[Release, frozenset[int]], ...] = (
    ((0, 8, 0), frozenset({8, 16, 32, 64, 128})),
    ((0, 14, 0), frozenset({1, 8, 16, 32, 64, 128})),
    ((0, 18, 0), frozenset({1, 8, 16, 32, 64, 128, 256})),
)


class FirstRelease(BaseModel):
    """One boundary: the first release that takes it, and where that was read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: str
    source: str


@cache
def _table() -> dict[str, dict[str, Release]]:
    """engine -> what the line prints -> its first release, from RELEASES_FILE."""
    text = resources.files("capcliff.analysis").joinpath("data", RELEASES_FILE).read_text("utf-8")
    table: dict[str, dict[str, Release]] = {}
    for engine, entries in tomllib.loads(text).items():
        for what, entry in entries.items():
            try:
                row = FirstRelease.model_validate(entry)
            except ValidationError as exc:
                raise CatalogError(f"{RELEASES_FILE}: {engine}.{what}: {exc}") from None
            table.setdefault(engine, {})[what] = parse_version(row.first)
    return table


def first(engine: str, what: str) -> Release:
    """The first release of `engine` (vllm, sglang, trtllm) whose parser takes `what`."""
    return _table()[engine][what]


def takes(release: Release | None, engine: str, what: str) -> bool:
    """Whether `engine`'s line for `release` (None: the latest modelled) may print `what`."""
    return release is None or release >= first(engine, what)


def vllm_block_sizes(release: Release | None) -> frozenset[int] | None:
    """The --block-size values vLLM `release` accepts; None where any positive size goes."""
    if release is None:
        return None
    for until, sizes in VLLM_BLOCK_SIZES:
        if release < until:
            return sizes
    return None


def named(release: Release) -> str:
    """`release` as the engines number it: 0.8.3."""
    return ".".join(map(str, release))
