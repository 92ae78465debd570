"""Writing a benchmark fit's section into a calibration file."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from capcliff.errors import InputError


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


def check_replaced(output: Path | None) -> None:
    """Refuse, before any work or output, an existing `--output` (replaced with --force) that is
    no calibration file: its sections are kept in the file written, so it is read as one, and a
    log or a spec there failed that read after the answer said "written:" (fuzz_random seed 57:
    `calibrate LOG --force --output logs/log.txt`, exit 2 with the file unchanged)."""
    from capcliff.calibrate.calibration_file import load_calibration

    if output is None or not output.exists():
        return
    try:
        load_calibration(output)
    except InputError as exc:
        raise InputError(
            f"--output: {output} is no calibration file ({str(exc).removeprefix(f'{output}: ')}); "
            "--force replaces a calibration, keeping its other sections: give a new file or "
            "a calibration"
        ) from None
