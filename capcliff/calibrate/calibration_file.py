"""Calibration files: overhead terms fitted from an engine start-up log, applied with --calibration.

A calibration file is TOML, written by `capcliff calibrate`:

    engine = "vllm"
    source = "logs/vllm-startup.log"
    model = "llama-3.1-8b"          # optional: the model the log was taken with
    [terms_gib]                     # GiB per GPU, by term name
    activation_peak = 1.40
    non_torch = 0.21
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from capcliff.catalog.catalogs import load_toml
from capcliff.errors import CatalogError
from capcliff.memory.budget import OVERRIDABLE_TERMS, EngineName
from capcliff.units import GIB


class Calibration(BaseModel):
    """Fitted overhead terms for one engine (GiB per GPU)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: EngineName
    source: str
    model: str | None = None
    terms_gib: dict[str, float]

    @field_validator("terms_gib")
    @classmethod
    def _known_terms(cls, terms: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(terms) - set(OVERRIDABLE_TERMS))
        if unknown:
            raise ValueError(
                f"unknown term {', '.join(unknown)}; valid: {', '.join(OVERRIDABLE_TERMS)}"
            )
        negative = sorted(name for name, value in terms.items() if value < 0)
        if negative:
            raise ValueError(f"negative bytes for {', '.join(negative)}")
        return terms

    @property
    def terms_bytes(self) -> dict[str, int]:
        """The terms in bytes."""
        return {name: round(gib * GIB) for name, gib in self.terms_gib.items()}


def load_calibration(path: Path) -> Calibration:
    """Read and validate a calibration file; errors read `path: field: message`."""
    data = load_toml(path)
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise CatalogError(f"{path}: {field}: {first['msg']}") from None


def calibration_toml(calibration: Calibration) -> str:
    """The TOML text of a calibration file."""
    lines = [
        "# Written by `capcliff calibrate`; apply with --calibration FILE.",
        f'engine = "{calibration.engine.value}"',
        f"source = {_quote(calibration.source)}",
    ]
    if calibration.model:
        lines.append(f"model = {_quote(calibration.model)}")
    lines.append("")
    lines.append("[terms_gib]")
    lines += [f"{name} = {value:.4f}" for name, value in sorted(calibration.terms_gib.items())]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
