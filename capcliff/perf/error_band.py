"""The error a user should expect of a simulated figure, as the validation measured it.

`benchmarks/fidelity.py` predicts public serving benchmarks (output throughput, mean TPOT, mean
TTFT) and records the median absolute error per engine (and per GPU where it has rows for
one; from the rows of a sustained load, in cells of at least five rows: `fidelity.sustained`,
`MIN_BAND_ROWS`),
uncalibrated (the engine profile's named terms) and calibrated (step terms fitted to other rows,
the predicted one held out), in `error_bands.json` next to this module (data, regenerated with
`python benchmarks/fidelity.py --write-bands`). Every report prints the band of its engine and
GPU; where the validation has no row for them, the band of the engine on any GPU; for an engine
with no row at all, per metric the wider of every engine's on that GPU and every engine's on
every GPU (another engine's few deployments on one GPU do not vouch for it); it says which.
Fractions (0.2 = 20 %).
With speculative decoding, throughput and TPOT carry the band `benchmarks/speculative_fidelity.py
--write-bands` measured on the public MTP rows (the file's `speculative` section).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

BANDS_FILE = "error_bands.json"
ANY = "all"  # the key of "every GPU" and "every engine" in the data file
METRICS = ("throughput", "tpot", "ttft")


@dataclass(frozen=True)
class ErrorBand:
    """Median absolute held-out errors (fractions; None: no row measured it) and their basis."""

    throughput: float | None
    tpot: float | None
    ttft: float | None
    rows: int  # public benchmark rows behind the figures
    scope: str  # which rows: "sglang on h200-sxm", "sglang, any GPU", "every engine"
    calibrated: bool
    # the same rows' calibrated band, (throughput, TPOT), on an uncalibrated band: whether a
    # calibration tightens it is measured, not assumed (2026-12-07, h-user: SGLang on H200
    # printed "throughput ±5 %, TPOT ±6 % (uncalibrated; calibrate to tighten)", and after a
    # calibration "±11 %, ±15 % (calibrated)")
    calibrated_band: tuple[float | None, float | None] | None = None

    @property
    def calibration_tightens(self) -> bool:
        """Whether the validation's calibrated band of the same rows is narrower in throughput
        and TPOT (True when it was not measured: calibrating is then the way to learn it)."""
        if self.calibrated or self.calibrated_band is None:
            return True
        pairs = zip(self.calibrated_band, (self.throughput, self.tpot), strict=True)
        return all(c is None or u is None or c < u for c, u in pairs)

    def calibration_advice(self) -> str:
        """'calibrate to tighten', or what calibrating did in validation when it widened."""
        if self.calibration_tightens:
            return "calibrate to tighten"
        assert self.calibrated_band is not None
        names = ("throughput", "TPOT")
        wider = ", ".join(
            f"{n} ±{v * 100:.0f} %" for n, v in zip(names, self.calibrated_band, strict=True)
            if v is not None
        )  # fmt: skip
        return f"a calibration on other runs did not tighten it in validation: {wider}"

    def describe(self) -> str:
        """One phrase: 'held-out error (median): throughput ±16 %, TPOT ±9 %, mean TTFT ±43 %
        (uncalibrated; sglang, any GPU: 7 public rows)'."""
        names = {"throughput": "throughput", "tpot": "TPOT", "ttft": "mean TTFT"}
        parts = [
            f"{names[m]} ±{v * 100:.0f} %" for m in METRICS if (v := getattr(self, m)) is not None
        ]
        basis = "calibrated" if self.calibrated else f"uncalibrated; {self.calibration_advice()}"
        return (
            f"held-out error (median): {', '.join(parts) or 'not measured'} "
            f"({basis}; {self.scope}: {self.rows} public rows)"
        )


@cache
def _file() -> dict[str, Any]:
    text = resources.files("capcliff.perf").joinpath(BANDS_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _bands() -> dict[str, Any]:
    data: dict[str, Any] = _file()["engines"]
    return data


def speculative_band(engine: str, plain: ErrorBand) -> ErrorBand:
    """The band of a speculative figure: throughput and TPOT as measured on the public MTP
    rows for `engine` (else every engine's), uncalibrated (no calibration fits acceptance);
    TTFT as `plain` (speculation does not touch prefill steps)."""
    rows = _file().get("speculative", {}).get("engines", {})
    entry, scope = rows.get(engine), f"{engine} MTP rows, any GPU"
    if entry is None:
        entry, scope = rows.get(ANY), f"every engine's MTP rows (none for {engine})"
    if entry is None:
        return dataclasses.replace(plain, throughput=None, tpot=None, scope="no MTP rows")
    return ErrorBand(
        throughput=entry.get("throughput"), tpot=entry.get("tpot"), ttft=plain.ttft,
        rows=int(entry["rows"]), scope=f"speculative: {scope}", calibrated=False,
    )  # fmt: skip


def _gpu_key(hardware_id: str) -> str:
    """The data file's GPU key: the catalog id's family ('h200-sxm' -> 'h200')."""
    return hardware_id.split("-")[0].lower()


def error_band(engine: str, hardware_id: str, *, calibrated: bool) -> ErrorBand:
    """The band of `engine` (capcliff's engine name: vllm, vllm-v0, sglang, trtllm) on
    `hardware_id`, from the most specific rows the validation has: the engine's on that GPU,
    else the engine's on any GPU. An engine with no row of its own is not given another engine's
    figure on one GPU alone (a handful of deployments, none of them its own): each metric is the
    larger of every engine's on that GPU and every engine's on every GPU, and it says so."""
    bands = _bands()
    gpu = _gpu_key(hardware_id)
    basis = "calibrated" if calibrated else "uncalibrated"
    for key, scope in ((gpu, f"{engine} on {hardware_id}"), (ANY, f"{engine}, any GPU")):
        entry = bands.get(engine, {}).get(key)
        if entry is not None:
            figures, fitted = entry[basis], entry.get("calibrated", {})
            return ErrorBand(
                throughput=figures.get("throughput"), tpot=figures.get("tpot"),
                ttft=figures.get("ttft"), rows=int(entry["rows"]), scope=scope,
                calibrated=calibrated,
                calibrated_band=(fitted.get("throughput"), fitted.get("tpot")),
            )  # fmt: skip
    others = [e for e in (bands.get(ANY, {}).get(gpu), bands.get(ANY, {}).get(ANY)) if e]
    if not others:
        return ErrorBand(None, None, None, 0, "no validation rows", calibrated)

    def widest(metric: str, of: str = basis) -> float | None:
        values = [v for e in others if (v := e[of].get(metric)) is not None]
        return max(values) if values else None

    where = (
        f"every engine on {hardware_id} or on every GPU, the wider"
        if len(others) > 1
        else "every engine and GPU"
    )
    return ErrorBand(
        throughput=widest("throughput"), tpot=widest("tpot"), ttft=widest("ttft"),
        rows=max(int(e["rows"]) for e in others), scope=f"no rows for {engine}: {where}",
        calibrated=calibrated,
        calibrated_band=(widest("throughput", "calibrated"), widest("tpot", "calibrated")),
    )  # fmt: skip
