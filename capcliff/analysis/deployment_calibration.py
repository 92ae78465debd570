"""A calibration file applied to a deployment: its terms, checked against the deployment.

`calibration_terms` reads the file `DeploymentSettings.calibration` names and returns its memory
terms (bytes per GPU), step-time terms and fitted acceptance, with warnings; a calibration made for
another deployment is refused unless forced, and a term larger than the device always.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.catalogs import Model
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.perf.speculation import Acceptance, parse_speculative
from capcliff.units import GIB


def _refuse_terms_past_the_device(
    terms: dict[str, int], path: Path, hardware: HardwareSpec, settings: DeploymentSettings
) -> None:
    """An InputError when a calibrated term (bytes per GPU) is more than the whole device."""
    device = max(hardware.hbm_driver_bytes, settings.gpu_total_memory or 0)
    for name, size in terms.items():
        if size > device:  # 5,000 GiB of activations printed a KV cache of -4,894 GiB
            raise InputError(
                f"calibration: {path}: terms_gib.{name}: {size / GIB:,.2f} GiB per GPU is more "
                f"than {hardware.id}'s {device / GIB:,.2f} GiB; a term of another deployment or "
                "unit"
            )


def _profile_mismatch(
    fitted: str | None, settings: DeploymentSettings, path: Path
) -> tuple[list[str], list[str]]:
    """How the step-time profile a calibration was fitted against differs from the one the
    deployment runs, as (mismatches, warnings): a mismatch for another known profile
    (`--engine-version 0.9.0` with a file fitted on 0.14: the fitted scale multiplies another
    release's step model), a warning for a label no profile has (hand-written, or an older
    capcliff's wording); neither when the same or no step-time terms."""
    from capcliff.perf.profiles import OLDER_PROFILES, PROFILES, engine_profile

    mine = engine_profile(settings.engine, settings.engine_version).label
    if fitted is None or fitted == mine:
        return [], []
    older = (p.label for steps in OLDER_PROFILES.values() for _, p in steps)
    if fitted in {*(p.label for p in PROFILES.values()), *older}:
        return [f"step-time profile {fitted!r} != {mine!r}"], []
    return [], [
        f"calibration {path}: step-time profile {fitted!r:.80} is no profile capcliff knows; "
        f"its fitted terms are applied to {mine!r}"
    ]


def calibration_terms(
    settings: DeploymentSettings,
    model: Model,
    hardware: HardwareSpec,
    *,
    weight_dtype: str,
    kv_dtype: str,
    layout: str | None,
    base_dir: Path | None,
    force: bool,
) -> tuple[dict[str, int], list[str], tuple[tuple[str, float], ...], Acceptance | None]:
    """The calibrated terms (bytes), warnings, step-time terms and the calibrated acceptance of
    the deployment's speculation; a calibration made for another deployment (or another
    speculative setting) is refused unless `force`."""
    if settings.calibration is None:
        return {}, [], (), None
    from capcliff.calibrate.calibration_file import calibration_mismatches, load_calibration

    path = Path(settings.calibration)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    calibration = load_calibration(path)
    mismatches = calibration_mismatches(
        calibration,
        engine=settings.engine,
        model=model.id,
        gpu=hardware.id,
        weight_dtype=weight_dtype,
        kv_cache_dtype=kv_dtype,
        layout=layout,
        model_shape=model.arch.shape_label,
    )
    step = calibration.step_time
    profile_mismatch, profile_warning = _profile_mismatch(
        None if step is None else step.profile, settings, path
    )
    mismatches.extend(profile_mismatch)
    fitted = calibration.speculative
    accepted, spec_note = None, []
    if fitted is not None and settings.speculative is not None:
        mine, theirs = (parse_speculative(t) for t in (settings.speculative, fitted.speculative))
        same = (mine.method, mine.num_speculative_tokens) == (
            theirs.method,
            theirs.num_speculative_tokens,
        )
        if not same:
            mismatches.append(f"speculative {fitted.speculative} != {settings.speculative}")
        elif settings.spec_acceptance is None and settings.spec_accept_length is None:
            seen = f"{fitted.concurrency_min}-{fitted.concurrency_max} clients, "
            accepted = Acceptance(
                fitted.accept_length,
                f"calibrated from {fitted.source} ({seen if fitted.concurrency_min else ''}"
                f"{fitted.points} runs)",
            )
    elif fitted is not None:
        spec_note.append(
            f"calibration {path}: its acceptance length ({fitted.accept_length:.2f} tokens per "
            f"step) applies only with --speculative {fitted.speculative}"
        )
    if mismatches and not force:
        raise InputError(
            f"calibration: {path} was made for another deployment ({'; '.join(mismatches)}); "
            "pass --force to apply it anyway"
        )
    warnings = (
        [f"calibration {path} applied to another deployment: {'; '.join(mismatches)}"]
        if mismatches
        else []
    )
    if step is not None and step.concurrency_min is not None:
        warnings.append(
            f"calibration {path}: step times fitted at {step.concurrency_min}-"
            f"{step.concurrency_max} concurrent requests ({step.points} runs); figures at other "
            "concurrencies extrapolate them"
        )
    warnings.extend(profile_warning)
    if calibration.gpu is None:
        warnings.append(
            f"calibration {path} does not record the GPU it was made on: it applies to "
            f"{hardware.id} only if it was made there"
        )
    _refuse_terms_past_the_device(calibration.terms_bytes, path, hardware, settings)
    return calibration.terms_bytes, warnings + spec_note, calibration.step_time_terms, accepted


_MISMATCH = re.compile(r"(calibration .* applied to another deployment: )(.*)")
_LAYOUT = re.compile(r"layout (\S+) != (\S+)")


def merge_layout_mismatches(warnings: Sequence[str]) -> tuple[str, ...]:
    """`warnings` with the "applied to another deployment" lines that differ only in the layout
    compared merged into one naming the layouts (`memory --layout all` printed one line per
    layout, 33 for DeepSeek-R1 on 8 GPUs); order kept, at the first of each group."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    keyed: list[tuple[str, str, str] | str] = []
    for warning in warnings:
        found = _MISMATCH.fullmatch(warning)
        parts = [] if found is None else found.group(2).split("; ")
        layouts = [m for part in parts if (m := _LAYOUT.fullmatch(part)) is not None]
        if found is None or len(layouts) != 1:
            keyed.append(warning)
            continue
        rest = "; ".join(p for p in parts if _LAYOUT.fullmatch(p) is None)
        key = (found.group(1), rest, layouts[0].group(1))
        if key not in groups:
            keyed.append(key)
        groups.setdefault(key, []).append(layouts[0].group(2))
    out: list[str] = []
    for item in keyed:
        if isinstance(item, str):
            out.append(item)
            continue
        head, rest, fitted = item
        others = groups[item]
        named = ", ".join(others) if len(others) <= 4 else f"{len(others)} other layouts"
        named += f" ({', '.join(others[:4])}, ...)" if len(others) > 4 else ""
        layout = f"layout {fitted} != {named}"
        out.append(f"{head}{rest}; {layout}" if rest else f"{head}{layout}")
    # the deployment's own line, without a layout, says less than a merged one beside it
    return tuple(w for w in out if not any(o.startswith(f"{w}; ") for o in out))
