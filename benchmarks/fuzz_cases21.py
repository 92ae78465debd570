"""The twenty-first bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py out21 use21 edit21

What the twenty campaigns before touched least: where `calibrate` writes and how its file travels
to the other commands. `calibrate -o` onto a directory, a missing folder, a FIFO, the spec
beside it, the input through a symlink, a hard link or a `./` spelling, its own previous file
with and without --force (out21); a calibration made for one GPU, engine, engine version,
model or layout applied through `--calibration` to `sweep`, `plan` (GPU lists, `--disagg`) and
through a check spec's `calibration =` key (missing, a folder, the spec itself, relative to the
spec; use21); and the written file edited by hand: step-time figures at 1e-300 and 1e300, zero
and negative scales, a string scale, a duplicated key, an unknown key, a byte-order mark, CRLF
line ends, JSON in place of TOML, and the bench inputs of `calibrate` with a BOM, CRLF or a
duplicated JSON key (edit21).

Verdicts: a calibration is a fit to one deployment; applying it to another must be refused or
said (None where capcliff may warn and go on, since a warning on exit 0 is fine); a step-time
scale or fixed time is a positive, finite, physically bounded number (a 1e300 s step is no
engine's); TOML forbids a key twice (toml.io v1.0.0, "Defining a key multiple times is
invalid"); Python's json keeps the last of a duplicated key, as vLLM's own reader would; CRLF is
a valid TOML and CSV newline; a UTF-8 BOM is what Excel and PowerShell write before CSV and JSON.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases16 import CAL_FILE
from fuzz_harness import Case, FileSpec

# fmt: off
RUNS_JSONL = "\n".join(json.dumps(r) for r in fs.RUNS) + "\n"
LOG8B = fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"
CAL = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
# what `calibrate` writes for RUNS (llama-3.1-8b, one H100, vLLM, tp1)
V_TOML = "# Written by `capcliff calibrate`; apply with --calibration FILE.\n" + CAL_FILE.replace(
    "weights_overhead = 0.0314\n", ""
)
SWEEP = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", *fs.SMALL, "--concurrency", "4", "--calibration", "{d}/c.toml"]
PLAN = ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--rate", "2", "--slo-ttft", "2", "--calibration", "{d}/c.toml"]


def _hardlink(src: str, dst: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        os.link(folder / src, folder / dst)
    return make


OUT21: list[tuple[str, list[str], dict[str, FileSpec], bool | None, Callable[[Path], None] | None]] = [
    ("new-file", [*CAL, "-o", "{d}/c.toml"], {"r.json": RUNS_JSONL}, False, None),
    ("new-file-in-subfolder", [*CAL, "-o", "{d}/sub/c.toml"], {"r.json": RUNS_JSONL, "sub/": ("dir",)}, False, None),
    ("missing-folder", [*CAL, "-o", "{d}/nope/c.toml"], {"r.json": RUNS_JSONL}, True, None),
    ("onto-folder", [*CAL, "-o", "{d}/sub"], {"r.json": RUNS_JSONL, "sub/": ("dir",)}, True, None),
    ("onto-folder-force", [*CAL, "-o", "{d}/sub", "--force"], {"r.json": RUNS_JSONL, "sub/": ("dir",)}, True, None),
    ("onto-input", [*CAL, "-o", "{d}/r.json"], {"r.json": RUNS_JSONL}, True, None),
    ("onto-input-force", [*CAL, "-o", "{d}/r.json", "--force"], {"r.json": RUNS_JSONL}, True, None),
    ("onto-input-dot-spelling", [*CAL, "-o", "{d}/./sub/../r.json", "--force"], {"r.json": RUNS_JSONL, "sub/": ("dir",)}, True, None),
    ("onto-symlink-to-input", [*CAL, "-o", "{d}/l.toml", "--force"], {"r.json": RUNS_JSONL, "l.toml": ("symlink", "r.json")}, True, None),
    ("onto-hardlink-of-input", [*CAL, "-o", "{d}/h.toml", "--force"], {"r.json": RUNS_JSONL}, True, _hardlink("r.json", "h.toml")),
    ("input-via-symlink-onto-target", ["calibrate", "{d}/l.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", "{d}/r.json", "--force"], {"r.json": RUNS_JSONL, "l.json": ("symlink", "r.json")}, True, None),
    ("log-onto-log", ["calibrate", "{d}/log.txt", "-o", "{d}/log.txt", "--force"], {"log.txt": LOG8B.read_text()}, True, None),
    ("onto-spec-no-force", [*CAL, "-o", "{d}/s.toml"], {"r.json": RUNS_JSONL, "s.toml": fs.SPEC}, True, None),
    ("onto-existing-cal-no-force", [*CAL, "-o", "{d}/c.toml"], {"r.json": RUNS_JSONL, "c.toml": V_TOML}, True, None),
    ("onto-fifo", [*CAL, "-o", "{d}/f", "--force"], {"r.json": RUNS_JSONL, "f": ("fifo",)}, True, None),
    ("empty-output", [*CAL, "-o", ""], {"r.json": RUNS_JSONL}, True, None),
    ("output-trailing-slash", [*CAL, "-o", "{d}/c.toml/"], {"r.json": RUNS_JSONL}, True, None),
    ("output-json-suffix", [*CAL, "-o", "{d}/c.json"], {"r.json": RUNS_JSONL}, None, None),
    ("output-symlink-to-missing", [*CAL, "-o", "{d}/l.toml"], {"r.json": RUNS_JSONL, "l.toml": ("symlink", "gone.toml")}, None, None),
]

# (name, calibration text, command, invalid)
USE21: list[tuple[str, str, list[str], bool | None]] = [
    ("own-sweep", V_TOML, SWEEP, False),
    ("own-release", V_TOML, [*SWEEP, "--engine-version", "0.14.0"], False),
    ("own-plan", V_TOML, [*PLAN, "--gpu", "h100-sxm", "--gpus", "1"], False),
    ("other-gpu-sweep", V_TOML, [*SWEEP[:2], "--gpu", "h200-sxm", *SWEEP[4:]], True),
    ("gpu-list-plan", V_TOML, [*PLAN, "--gpu", "h100-sxm,mi300x", "--gpus", "1"], None),
    ("gpu-list-other-only", V_TOML, [*PLAN, "--gpu", "h200-sxm,b200", "--gpus", "1"], None),
    ("disagg-own-gpu", V_TOML, [*SWEEP, "--disagg", "1p:tp1,1d:tp1"], None),
    ("disagg-other-layout", V_TOML, [*SWEEP, "--disagg", "1p:tp2,1d:tp2"], True),  # refused as `--layout tp2` is
    ("disagg-decode-other-layout", V_TOML, [*SWEEP, "--disagg", "1p:tp1,1d:tp2"], True),
    ("disagg-other-layout-force", V_TOML, [*SWEEP, "--disagg", "1p:tp2,1d:tp2", "--force"], None),  # applied and said
    ("disagg-pool-other-gpu", V_TOML, [*SWEEP, "--disagg", "1p:tp1,1d:tp1@h200-sxm"], True),
    ("plan-disagg", V_TOML, [*PLAN, "--gpu", "h100-sxm", "--gpus", "2", "--disagg"], None),
    ("other-engine", V_TOML, [*SWEEP, "--engine", "sglang"], True),
    ("other-engine-trtllm", V_TOML, [*SWEEP, "--engine", "trtllm"], True),
    ("other-model", V_TOML, ["sweep", "qwen3-8b", *SWEEP[2:]], True),
    ("other-kv-dtype", V_TOML, [*SWEEP, "--kv-dtype", "fp8"], None),
    ("other-engine-version", V_TOML.replace('engine = "vllm"\n', 'engine = "vllm"\nengine_version = "0.14.0"\n'), [*SWEEP, "--engine-version", "0.9.0"], True),  # 0.9 has no async scheduling: another step-time profile
    ("other-layout-tp2", V_TOML, [*SWEEP, "--gpus", "2", "--layout", "tp2"], None),
    ("calibration-twice", V_TOML, [*SWEEP, "--calibration", "{d}/c.toml"], None),
    ("calibration-is-folder", V_TOML, [*SWEEP[:-1], "{d}"], True),
    ("calibration-is-log", V_TOML, [*SWEEP[:-1], str(LOG8B)], True),
    ("calibration-is-bench-json", V_TOML, [*SWEEP[:-1], "{d}/r.json"], True),
    ("calibration-is-spec", V_TOML, [*SWEEP[:-1], "{d}/s.toml"], True),
    ("calibration-empty-path", V_TOML, [*SWEEP[:-1], ""], True),
]

CHECK_KEYS = 'calibration = "c.toml"\n'
# (name, spec key lines, files beside the spec, invalid)
SPEC21: list[tuple[str, str, dict[str, FileSpec], bool | None]] = [
    ("own", CHECK_KEYS, {"sub/c.toml": V_TOML}, False),
    ("missing", CHECK_KEYS, {}, True),
    ("folder", 'calibration = "."\n', {}, True),
    ("the-spec-itself", 'calibration = "s.toml"\n', {}, True),
    ("other-engine", CHECK_KEYS + 'engine = "sglang"\n', {"sub/c.toml": V_TOML}, True),
    ("other-gpu", CHECK_KEYS.replace("c.toml", "c.toml") , {"sub/c.toml": V_TOML.replace('gpu = "h100-sxm"', 'gpu = "b200"')}, True),
    ("other-model", CHECK_KEYS, {"sub/c.toml": V_TOML.replace('model = "llama-3.1-8b"', 'model = "qwen3-8b"')}, True),
    ("empty-string", 'calibration = ""\n', {}, True),
    ("not-a-string", "calibration = 3\n", {}, True),
    ("list", 'calibration = ["c.toml"]\n', {"sub/c.toml": V_TOML}, True),
    ("other-version", CHECK_KEYS + 'engine_version = "0.9.0"\n', {"sub/c.toml": V_TOML.replace('engine = "vllm"\n', 'engine = "vllm"\nengine_version = "0.14.0"\n')}, True),
    ("disagg", CHECK_KEYS + 'disagg = "1p:tp1,1d:tp1"\n', {"sub/c.toml": V_TOML}, None),
    ("disagg-other-layout", CHECK_KEYS + 'disagg = "1p:tp2,1d:tp2"\n', {"sub/c.toml": V_TOML}, True),
]


def _step(key: str, raw: str) -> str:
    return V_TOML.replace(f"\n{key} = ", f"\n{key} = {raw} #", 1)


# (name, calibration file text or bytes, invalid)
EDIT21: list[tuple[str, FileSpec, bool | None]] = [
    ("scale-1e-300", _step("scale", "1e-300"), True),
    ("scale-1e300", _step("scale", "1e300"), True),
    ("scale-1e-3", _step("scale", "1e-3"), True),
    ("scale-0", _step("scale", "0.0"), True),
    ("scale-negative", _step("scale", "-1.8"), True),
    ("scale-string", _step("scale", '"1.8052"'), True),
    ("scale-inf", _step("scale", "inf"), True),
    ("scale-nan", _step("scale", "nan"), True),
    ("scale-2", _step("scale", "2.0"), False),
    ("fixed-1e300", _step("fixed_s", "1e300"), True),
    ("fixed-1e-300", _step("fixed_s", "1e-300"), False),
    ("fixed-negative", _step("fixed_s", "-0.003"), True),
    ("fixed-1000s", _step("fixed_s", "1000.0"), True),
    ("overhead-1e300", _step("request_overhead_s", "1e300"), True),
    ("overhead-negative", _step("request_overhead_s", "-1.0"), True),
    ("points-0", _step("points", "0"), True),
    ("points-float", _step("points", "2.5"), True),
    ("concurrency-min-past-max", _step("concurrency_min", "128"), True),
    ("weights-overhead-1e300", V_TOML.replace("[terms_gib]\n", "[terms_gib]\nweights_overhead = 1e300\n"), True),
    ("weights-overhead-1e-300", V_TOML.replace("[terms_gib]\n", "[terms_gib]\nweights_overhead = 1e-300\n"), False),
    ("weights-overhead-negative-big", V_TOML.replace("[terms_gib]\n", "[terms_gib]\nweights_overhead = -1e300\n"), True),
    ("duplicate-key-scale", V_TOML.replace("scale = 1.8052\n", "scale = 1.8052\nscale = 9.0\n"), True),
    ("duplicate-table", V_TOML + "\n[step_time]\nscale = 2.0\n", True),
    ("unknown-step-key", V_TOML.replace("scale = 1.8052\n", "scale = 1.8052\nscale_decode = 2.0\n"), True),
    ("profile-other-engine", V_TOML.replace('profile = "vllm V1 >= 0.14 (async scheduling)"', 'profile = "sglang >= 0.4.8 (overlap scheduler)"'), True),
    ("profile-unknown", V_TOML.replace('profile = "vllm V1 >= 0.14 (async scheduling)"', 'profile = "banana"'), None),  # either: a label no profile has (older files) is applied and said
    ("bom", b"\xef\xbb\xbf" + V_TOML.encode(), None),
    ("crlf", V_TOML.replace("\n", "\r\n"), False),
    ("cr-only", V_TOML.replace("\n", "\r"), True),
    ("json-instead", json.dumps({"engine": "vllm", "model": "llama-3.1-8b", "gpu": "h100-sxm", "step_time": {"scale": 1.8, "fixed_s": 0.003}}), True),
    ("utf16", V_TOML.encode("utf-16"), True),
    ("step-time-not-table", V_TOML.split("[step_time]")[0] + "step_time = 1.8\n", True),
]

# calibrate's bench inputs, as other tools save them
CSV_TEXT = fs.DSR1_CSV.read_text()
CAL_CSV = ["calibrate", "{d}/b.csv", "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--engine", "sglang"]
FIRST = json.dumps(fs.RUNS[0])
INPUTS21: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    ("csv-bom", CAL_CSV, {"b.csv": b"\xef\xbb\xbf" + CSV_TEXT.encode()}, False),
    ("csv-crlf", CAL_CSV, {"b.csv": CSV_TEXT.replace("\n", "\r\n")}, False),
    ("json-bom", CAL, {"r.json": b"\xef\xbb\xbf" + RUNS_JSONL.encode()}, False),
    ("json-crlf", CAL, {"r.json": RUNS_JSONL.replace("\n", "\r\n")}, False),
    ("json-dup-key-last-wins", CAL, {"r.json": RUNS_JSONL.replace('{"date"', '{"output_throughput": 1.0, "date"', 1)}, None),  # either: RFC 8259 leaves a repeated name unpredictable; capcliff refuses it by name
    ("json-dup-key-nonsense-last", CAL, {"r.json": RUNS_JSONL.replace('"max_concurrency": 8,', '"max_concurrency": 8, "max_concurrency": -8,', 1)}, True),
    ("json-1e-300-throughput", CAL, {"r.json": RUNS_JSONL.replace('"output_throughput": 500.0', '"output_throughput": 1e-300', 1)}, True),
    ("json-1e300-throughput", CAL, {"r.json": RUNS_JSONL.replace('"output_throughput": 500.0', '"output_throughput": 1e300', 1)}, True),
    ("json-1e300-tpot", CAL, {"r.json": RUNS_JSONL.replace('"mean_tpot_ms": 14.0', '"mean_tpot_ms": 1e300', 1)}, True),
    ("json-1e-300-tpot", CAL, {"r.json": RUNS_JSONL.replace('"mean_tpot_ms": 14.0', '"mean_tpot_ms": 1e-300', 1)}, True),
    ("json-one-run-of-three-twice", CAL, {"r.json": RUNS_JSONL + FIRST + "\n"}, None),
]
# fmt: on


def out21_cases() -> Iterator[Case]:
    for name, argv, files, invalid, setup in OUT21:
        yield Case("out21", name, argv, dict(files), invalid, setup=setup)


def use21_cases() -> Iterator[Case]:
    files: dict[str, FileSpec] = {"r.json": RUNS_JSONL, "s.toml": fs.SPEC}
    for name, text, argv, invalid in USE21:
        yield Case("use21", name, argv, {**files, "c.toml": text}, invalid)
    for name, keys, extra, invalid in SPEC21:
        spec = (
            fs.SPEC.replace('engine = "vllm"\n', 'engine = "vllm"\n' + keys)
            if "engine =" not in keys
            else fs.SPEC.replace('engine = "vllm"\n', keys)
        )
        if "disagg" in keys:
            spec = spec.replace('layout = "tp1"\n', "")
        yield Case(
            "use21",
            f"spec-{name}",
            ["check", "{d}/sub/s.toml"],
            {**extra, "sub/s.toml": spec},
            invalid,
        )


def edit21_cases() -> Iterator[Case]:
    for name, text, invalid in EDIT21:
        yield Case("edit21", name, SWEEP, {"c.toml": text}, invalid)
    for name, argv, files, invalid in INPUTS21:
        yield Case("edit21", f"input-{name}", argv, dict(files), invalid)


SURFACES21: dict[str, Callable[[], Iterator[Case]]] = {
    "out21": out21_cases,
    "use21": use21_cases,
    "edit21": edit21_cases,
}
