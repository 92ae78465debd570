"""Writing a benchmark fit's section into a calibration file."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


def write_section(
    output: Path, name: str, section: BaseModel, *, base: Path | None, new: dict[str, object]
) -> None:
    """Write `section` as the calibration's `name` section into `output` (atomically): on top of
    `base`'s other sections (the file replaced, or the one the fit started from), else into a
    new calibration recording the deployment `new` describes (engine, source, model, GPU ...)."""
    from capcliff.calibrate.calibration_file import Calibration, calibration_toml, load_calibration
    from capcliff.files import write_text_atomic

    if base is not None:
        calibration = load_calibration(base).model_copy(update={name: section})
    else:
        calibration = Calibration.model_validate({**new, name: section})
    write_text_atomic(output, calibration_toml(calibration), overwrite=True)
