"""The typer app, the options the commands share, and the exit codes.

Exit codes: 0 ok, 1 a sizing check failed, 2 usage or invalid input, 4 internal error.
Command modules import `app` from here and register on it; `cli.main` imports them all.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, TypeVar

import typer

from capcliff.errors import InputError

E = TypeVar("E", bound=StrEnum)
DEFAULT_MODEL = "deepseek-r1-distill-qwen-32b"
DEFAULT_GPU = "h200-sxm"
DEFAULT_GPUS = 8
EXIT_INPUT = 2
EXIT_INTERNAL = 4

app = typer.Typer(
    name="capcliff",
    help="Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    """How a command prints its result."""

    TABLE = "table"
    JSON = "json"


def _version(show: bool) -> None:
    if show:
        from capcliff import __version__

        typer.echo(f"capcliff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts."""


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table or json.")]
GpuOption = Annotated[str, typer.Option(help="Hardware id (see `capcliff hardware`).")]
EngineOption = Annotated[str, typer.Option(help="vllm, vllm-v0, sglang or trtllm.")]
KvDtypeOption = Annotated[
    str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV cache dtype: bf16, fp16, fp8.")
]
MaxModelLenOption = Annotated[
    int | None,
    typer.Option(help="Longest request, tokens (default: the log's, else the model's context)."),
]


def _resolve_gpus(gpus: int | None, layout: str, gpus_per_node: int) -> int:
    from capcliff.catalog.layout import parse_layout

    count = gpus if gpus is not None else DEFAULT_GPUS
    if layout != "all":
        from_layout = parse_layout(layout).gpus
        if gpus is not None and gpus != from_layout:
            raise InputError(f"gpus: --gpus {gpus} but layout {layout!r} uses {from_layout} GPUs")
        count = from_layout
    if count < 1 or (count > gpus_per_node and count % gpus_per_node):
        raise InputError(
            f"gpus: {count} is neither at most one node ({gpus_per_node}) nor a multiple of it"
        )
    return count


def _choice(kind: type[E], text: str, field: str) -> E:
    try:
        return kind(text)
    except ValueError:
        valid = ", ".join(str(v.value) for v in kind)
        raise InputError(f"{field}: unknown {text!r}; valid: {valid}") from None


def _bytes_or_none(text: str | None, field: str) -> int | None:
    from capcliff.units import parse_bytes

    return None if text is None else parse_bytes(text, field=field)


def _calibration_terms(path: str | None) -> tuple[dict[str, int], frozenset[str]]:
    if path is None:
        return {}, frozenset()
    from pathlib import Path

    from capcliff.calibrate.calibration_file import load_calibration

    terms = load_calibration(Path(path)).terms_bytes
    return terms, frozenset(terms)
