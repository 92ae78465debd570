"""The seventeenth bad-input campaign (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py offload17 price17 serve17 base17 cal17

What the sixteen campaigns before did not try: `--offload` with engines and pools that cannot
hold it and its sizes spelled as people type them (offload17, with the disagg pools' own
spellings), price lists beside GPU lists that repeat, mix case or pad a type (price17), serve
commands as the engines' own launchers and shells write them (env prefixes, `python -m
vllm.entrypoints.openai.api_server`, a flag given twice, `--flag=value`; serve17), `check
--baseline` files that are another spec's, another version's or missing keys (base17), and a
calibration written by `calibrate` then used on `plan`/`sweep` for deployments other than its
own (cal17).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases7 import ONLINE, SW
from fuzz_harness import Case

# fmt: off
Table = list[tuple[str, list[str], bool | None]]
OFF = fs.OFFLOAD_BASE
PLAN_OFF = ["plan", "llama-3.1-8b", "--jobs", "1", "--num-requests", "20", "--gpus", "1", "--slo-ttft", "2", "--workload", "multiturn-chat", "--clients", "4"]
DIS = [*SW, "--disagg"]

OFFLOAD17: Table = [
    ("v0-offload-plan", [*PLAN_OFF, "--engine", "vllm-v0", "--offload", "cpu:64GiB"], None),
    ("v0-offload-nvme-plan", [*PLAN_OFF, "--engine", "vllm-v0", "--offload", "cpu:64GiB,nvme:1TiB"], None),
    ("v0-policy-vllm-plan", [*PLAN_OFF, "--engine", "vllm-v0", "--policy", "vllm"], None),
    ("sglang-offload-plan", [*PLAN_OFF, "--engine", "sglang", "--offload", "cpu:64GiB"], None),
    ("trtllm-offload-plan", [*PLAN_OFF, "--engine", "trtllm", "--offload", "cpu:64GiB"], None),
    ("offload-tib-decimal", [*OFF, "--offload", "cpu:0.5TiB"], False),
    ("offload-mib-over-gib", [*OFF, "--offload", "cpu:2048MiB"], False),
    ("offload-mib-under-gib", [*OFF, "--offload", "cpu:512MiB"], True),
    ("offload-tb", [*OFF, "--offload", "cpu:1TB"], None),
    ("offload-bytes-int", [*OFF, "--offload", "cpu:68719476736"], None),
    ("offload-nvme-only", [*OFF, "--offload", "nvme:1TiB"], None),
    ("offload-nvme-twice", [*OFF, "--offload", "nvme:1TiB,nvme:2TiB"], True),
    ("offload-cpu-upper-twice", [*OFF, "--offload", "CPU:8GiB,cpu:8GiB"], True),
    ("offload-tab", [*OFF, "--offload", "cpu:\t64GiB"], None),
    ("offload-newline", [*OFF, "--offload", "cpu:64GiB\n"], None),
    ("offload-semicolon", [*OFF, "--offload", "cpu:64GiB;nvme:1TiB"], True),
    ("offload-equals", [*OFF, "--offload", "cpu=64GiB"], True),
    ("offload-past-host", [*OFF, "--offload", "cpu:100TiB"], None),
    ("offload-disagg", [*DIS, "1p:tp1,1d:tp1", "--offload", "cpu:64GiB"], None),
    ("offload-tp2", [*OFF, "--gpus", "2", "--layout", "tp2", "--offload", "cpu:64GiB"], None),
    ("offload-memory-cmd", ["memory", "llama-3.1-8b", "--gpus", "1", "--offload", "cpu:64GiB"], None),
    ("disagg-gpu-case", [*DIS, "1p:tp1@H100-SXM,1d:tp1"], None),
    ("disagg-gpu-space", [*DIS, "1p:tp1@ h100-sxm,1d:tp1"], None),
    ("disagg-order-dp", [*DIS, "1d:tp1,1p:tp1"], None),
    ("disagg-pp", [*DIS, "1p:pp2,1d:tp1"], None),
    ("disagg-tp1x", [*DIS, "1p:tp1x,1d:tp1"], True),
    ("disagg-p-without-count", [*DIS, "p:tp1,d:tp1"], None),
    ("disagg-float-count", [*DIS, "1.5p:tp1,1d:tp1"], True),
    ("disagg-zero-d", [*DIS, "1p:tp1,0d:tp1"], True),
    ("disagg-plus-d", [*DIS, "1p:tp1,+1d:tp1"], True),
    ("disagg-huge", [*DIS, "1p:tp1,100000d:tp1"], True),
    ("disagg-tp-huge", [*DIS, "1p:tp1,1d:tp4096"], True),
    ("disagg-engine-vllm-v0", [*DIS, "1p:tp1,1d:tp1", "--engine", "vllm-v0"], None),
    ("disagg-engine-trtllm", [*DIS, "1p:tp1,1d:tp1", "--engine", "trtllm"], None),
    ("disagg-with-layout", [*DIS, "1p:tp1,1d:tp1", "--gpus", "2", "--layout", "tp2"], None),
    ("disagg-kv-overhead-tiny", [*DIS, "1p:tp1,1d:tp1", "--kv-transfer-overhead-ms", "1e-300"], None),
]

PRICE17: Table = [
    ("price-dup-gpu-one-price", [*ONLINE, "--gpu", "h100-sxm,h100-sxm", "--price-gpu-hour", "2"], True),
    ("price-case-dup", [*ONLINE, "--gpu", "H100-SXM,h100-sxm"], True),
    ("price-space-dup", [*ONLINE, "--gpu", "h100-sxm, h100-sxm"], True),
    ("gpu-list-space", [*ONLINE, "--gpu", "h100-sxm, h200-sxm"], None),
    ("price-space", [*ONLINE, "--gpu", "h100-sxm,h200-sxm", "--price-gpu-hour", "2, 3"], None),
    ("price-three-gpus-two", [*ONLINE, "--gpu", "h100-sxm,h200-sxm,b200", "--price-gpu-hour", "2,3"], True),
    ("price-named", [*ONLINE, "--gpu", "h100-sxm", "--price-gpu-hour", "h100-sxm=2"], True),
    ("price-dollar-unit", [*ONLINE, "--gpu", "h100-sxm", "--price-gpu-hour", "2$/h"], True),
    ("price-exp", [*ONLINE, "--gpu", "h100-sxm", "--price-gpu-hour", "2e0"], None),
    ("price-huge", [*ONLINE, "--gpu", "h100-sxm", "--price-gpu-hour", "1e6"], None),
    ("price-sweep", [*SW, "--price-gpu-hour", "2"], None),
    ("price-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--price-gpu-hour", "2"], True),
    ("gpu-list-sweep-dup", [*SW, "--gpu", "h100-sxm,h100-sxm"], True),
    ("gpu-list-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "h100-sxm,h200-sxm"], True),
    ("gpu-list-disagg-plan", ["plan", "llama-3.1-8b", "--jobs", "1", "--gpus", "2", *fs.SMALL, "--arrival", "batch", "--disagg", "--gpu", "h100-sxm,h100-sxm"], True),
    ("gpu-list-mixed-vendor-trtllm", [*ONLINE, "--gpu", "h100-sxm,mi300x", "--engine", "trtllm"], None),
]

V = "vllm serve meta-llama/Llama-3.1-8B"
S = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"
T = "trtllm-serve meta-llama/Llama-3.1-8B"
SERVE17: list[tuple[str, str, bool | None]] = [
    ("vllm-api-server", "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B", False),
    ("vllm-api-server-py3", "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B --tensor-parallel-size 1", False),
    ("vllm-api-server-no-model", "python -m vllm.entrypoints.openai.api_server --tensor-parallel-size 1", None),
    ("vllm-model-flag", "vllm serve --model meta-llama/Llama-3.1-8B", None),
    ("vllm-equals", f"{V} --max-num-seqs=8 --tensor-parallel-size=1", False),
    ("vllm-twice-last-wins", f"{V} --max-num-seqs 8 --max-num-seqs 16", None),
    ("vllm-tp-twice-short", f"{V} -tp 1 --tensor-parallel-size 1", None),
    ("vllm-env-prefix", f"VLLM_USE_V1=1 CUDA_VISIBLE_DEVICES=0 {V}", False),
    ("vllm-env-v0", f"VLLM_USE_V1=0 {V}", False),
    ("vllm-env-v0-offload", f"VLLM_USE_V1=0 {V} --kv-offloading-backend native --kv-offloading-size 64", True),
    ("vllm-env-v1-offload", f"VLLM_USE_V1=1 {V} --kv-offloading-backend native --kv-offloading-size 64", False),
    ("vllm-env-v0-engine-vllm", f"VLLM_USE_V1=0 {V}", None),
    ("v1-offload-engine-vllm-v0", f"{V} --kv-offloading-backend native --kv-offloading-size 64", True),
    ("vllm-env-export", f"export CUDA_VISIBLE_DEVICES=0; {V}", True),
    ("vllm-env-cmd", f"env CUDA_VISIBLE_DEVICES=0 {V}", False),
    ("vllm-quoted-model", "vllm serve 'meta-llama/Llama-3.1-8B' --max-num-seqs '8'", False),
    ("vllm-unbalanced-quote", "vllm serve 'meta-llama/Llama-3.1-8B", True),
    ("vllm-max-num-seqs-zero", f"{V} --max-num-seqs 0", True),
    ("vllm-max-num-seqs-neg", f"{V} --max-num-seqs=-1", True),
    ("vllm-gmu-two", f"{V} --gpu-memory-utilization 2", True),
    ("vllm-gmu-nan", f"{V} --gpu-memory-utilization nan", True),
    ("vllm-offload-size-neg", f"{V} --kv-offloading-backend native --kv-offloading-size -4", True),
    ("vllm-offload-size-nan", f"{V} --kv-offloading-backend native --kv-offloading-size nan", True),
    ("vllm-offload-size-tiny", f"{V} --kv-offloading-backend native --kv-offloading-size 0.001", True),
    ("vllm-offload-size-no-backend", f"{V} --kv-offloading-size 64", None),
    ("vllm-offload-equals", f"{V} --kv-offloading-backend=native --kv-offloading-size=64", False),
    ("vllm-sudo", f"sudo {V}", True),
    ("vllm-docker", "docker run --gpus all vllm/vllm-openai --model meta-llama/Llama-3.1-8B", True),
    ("vllm-bash-c", f"bash -c '{V}'", True),
    ("vllm-trailing-backslash", f"{V} \\", None),
    ("vllm-comment", f"{V} # my server", None),
    ("sglang-equals", f"{S} --tp=1 --max-running-requests=8", False),
    ("sglang-model-twice", f"{S} --model-path meta-llama/Llama-3.1-70B", None),
    ("sglang-tp-twice", f"{S} --tp 1 --tp 2", None),
    ("sglang-tp-size-alias", f"{S} --tp-size 1", False),
    ("sglang-env", f"SGLANG_ENABLE_SPEC_V2=1 {S}", None),
    ("sglang-hicache-zero", f"{S} --enable-hierarchical-cache --hicache-size 0", None),
    ("sglang-hicache-neg", f"{S} --enable-hierarchical-cache --hicache-size -1", True),
    ("sglang-hicache-nan", f"{S} --enable-hierarchical-cache --hicache-size nan", True),
    ("sglang-hicache-policy-bad", f"{S} --enable-hierarchical-cache --hicache-size 8 --hicache-write-policy sometimes", True),
    ("sglang-mem-frac-two", f"{S} --mem-fraction-static 2", True),
    ("sglang-python3-path", "/usr/bin/python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B", False),
    ("sglang-model-alias", "python -m sglang.launch_server --model meta-llama/Llama-3.1-8B", None),
    ("trtllm-equals", f"{T} --tp_size=1 --max_batch_size=8", False),
    ("trtllm-dash-names", f"{T} --tp-size 1 --max-batch-size 8", None),
    ("trtllm-batch-zero", f"{T} --max_batch_size 0", True),
    ("trtllm-frac-two", f"{T} --kv_cache_free_gpu_memory_fraction 2", True),
    ("trtllm-frac-nan", f"{T} --kv_cache_free_gpu_memory_fraction nan", True),
    ("trtllm-twice", f"{T} --tp_size 1 --tp_size 2", None),
    ("trtllm-backend-pytorch", f"{T} --backend pytorch", False),
]

BASE = fs.SPEC
SPEC2 = fs.SPEC.replace('name = "s"', 'name = "other"')


def _baseline(**scenario: object) -> str:
    return json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {"s": scenario}})


GOOD = {"analytic_cliff_concurrency": 1993, "kv_capacity_tokens_per_replica": 414576, "latency_basis": "whole run",
        "layout": "tp1", "output_throughput_tok_s": 684.124, "peak_kv_utilization": 0.002, "preemptions": 0,
        "simulated_cliff_concurrency": None, "sweet_spot_concurrency": 16, "sweet_spot_output_tok_s": 1654.96,
        "swept_concurrency_max": 16, "tpot_p99_s": 0.0058, "ttft_p99_s": 2.35}
BASE17: list[tuple[str, str, bool | None]] = [
    ("other-spec", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {"other": GOOD}}), True),
    ("no-scenarios-key", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1}), True),
    ("empty-scenarios", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {}}), True),
    ("schema-2", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 2, "scenarios": {"s": GOOD}}), True),
    ("schema-0", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 0, "scenarios": {"s": GOOD}}), True),
    ("schema-str", json.dumps({"kind": "capcliff-check-baseline", "schema_version": "1", "scenarios": {"s": GOOD}}), True),
    ("schema-float", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1.0, "scenarios": {"s": GOOD}}), None),
    ("kind-other", json.dumps({"kind": "capcliff-plan", "schema_version": 1, "scenarios": {"s": GOOD}}), True),
    ("kind-missing", json.dumps({"schema_version": 1, "scenarios": {"s": GOOD}}), None),
    ("missing-throughput", _baseline(**{k: v for k, v in GOOD.items() if k != "output_throughput_tok_s"}), None),
    ("missing-all", _baseline(), None),
    ("only-layout", _baseline(layout="tp1"), None),
    ("layout-other", _baseline(**{**GOOD, "layout": "tp2"}), None),
    ("unknown-key", _baseline(**GOOD, throughput_typo=1.0), True),
    ("throughput-str", _baseline(**{**GOOD, "output_throughput_tok_s": "684"}), True),
    ("throughput-bool", _baseline(**{**GOOD, "output_throughput_tok_s": True}), True),
    ("throughput-zero", _baseline(**{**GOOD, "output_throughput_tok_s": 0}), None),
    ("throughput-inf", _baseline(**{**GOOD, "output_throughput_tok_s": 1e999}), True),
    ("preemptions-float", _baseline(**{**GOOD, "preemptions": 0.5}), True),
    ("cliff-neg", _baseline(**{**GOOD, "analytic_cliff_concurrency": -1}), True),
    ("basis-other", _baseline(**{**GOOD, "latency_basis": "steady state"}), None),
    ("basis-garbage", _baseline(**{**GOOD, "latency_basis": "xyz"}), None),  # words, never compared
    ("ttft-neg", _baseline(**{**GOOD, "ttft_p99_s": -1.0}), True),
    ("kv-util-two", _baseline(**{**GOOD, "peak_kv_utilization": 2.0}), True),
    ("scenario-list", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": [GOOD]}), True),
    ("scenario-null", json.dumps({"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {"s": None}}), True),
    ("bom", "\ufeff" + _baseline(**GOOD), None),
    ("dup-scenario-key", '{"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {"s": ' + json.dumps(GOOD) + ', "s": ' + json.dumps(GOOD) + "}}", True),
]


def _calibrate_into(argv: list[str]) -> Callable[[Path], None]:
    """A setup that writes `c.toml` with `calibrate ARGV -o c.toml` in a child of its own."""
    def write(folder: Path) -> None:
        import os
        import subprocess
        import sys

        env = {**os.environ, "PYTHONPATH": str(fs.ROOT)}
        subprocess.run([sys.executable, "-m", "capcliff", *argv, "-o", str(folder / "c.toml")], env=env, capture_output=True, check=False)
    return write


LOG8B = str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt")
CAL_DSR1 = ["calibrate", str(fs.DSR1_CSV), "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--engine", "sglang"]
DSR1 = ["deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--engine", "sglang", *fs.SMALL]
CAL17: list[tuple[str, list[str], list[str], bool | None]] = [
    ("log-on-own-model", ["calibrate", LOG8B], ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "4"], None),
    ("log-on-other-model", ["calibrate", LOG8B], ["sweep", "qwen3-8b", *fs.SMALL, "--concurrency", "4"], True),
    ("log-on-other-engine", ["calibrate", LOG8B], ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "4", "--engine", "sglang"], True),
    ("log-on-other-layout", ["calibrate", LOG8B], ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "4", "--gpus", "2", "--layout", "tp2"], None),
    ("log-on-plan", ["calibrate", LOG8B], ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2", "--slo-ttft", "2"], None),
    ("log-on-plan-fleet", ["calibrate", LOG8B], ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2", "--slo-ttft", "2", "--gpu", "h100-sxm,mi300x"], None),
    ("log-on-disagg", ["calibrate", LOG8B], ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "4", "--disagg", "1p:tp1,1d:tp1"], None),
    ("dsr1-on-own", CAL_DSR1, ["sweep", *DSR1, "--concurrency", "4"], None),
    ("dsr1-on-other-gpu", CAL_DSR1, ["sweep", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--layout", "tp8", "--engine", "sglang", *fs.SMALL, "--concurrency", "4"], None),
    ("dsr1-on-vllm", CAL_DSR1, ["sweep", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", *fs.SMALL, "--concurrency", "4"], True),
    ("dsr1-on-llama", CAL_DSR1, ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "4", "--engine", "sglang"], True),
    ("dsr1-on-plan-kv-fp8", CAL_DSR1, ["plan", *DSR1, "--jobs", "1", "--rate", "1", "--slo-ttft", "5", "--kv-dtype", "fp8"], None),
]


def offload17_cases() -> Iterator[Case]:
    for name, argv, invalid in OFFLOAD17:
        yield Case("offload17", name, argv, {}, invalid)


def price17_cases() -> Iterator[Case]:
    for name, argv, invalid in PRICE17:
        yield Case("price17", name, argv, {}, invalid)


def serve17_cases() -> Iterator[Case]:
    for name, command, invalid in SERVE17:
        engine = ["--engine", name.rsplit("-engine-", 1)[1]] if "-engine-" in name else []
        yield Case("serve17", name, [*fs.SMALL_SWEEP, *engine, "--serve-command", command], {}, invalid)


def base17_cases() -> Iterator[Case]:
    for name, text, invalid in BASE17:
        yield Case("base17", name, ["check", "{d}/s.toml", "--baseline", "{d}/b.json"], {"s.toml": BASE, "b.json": text}, invalid)
    # another spec's baseline, written by capcliff itself
    def other(folder: Path) -> None:
        import os
        import subprocess
        import sys

        (folder / "o.toml").write_text(SPEC2)
        env = {**os.environ, "PYTHONPATH": str(fs.ROOT)}
        subprocess.run([sys.executable, "-m", "capcliff", "check", str(folder / "o.toml"), "--write-baseline", str(folder / "b.json")], env=env, capture_output=True, check=False)
    yield Case("base17", "written-by-other-spec", ["check", "{d}/s.toml", "--baseline", "{d}/b.json"], {"s.toml": BASE}, True, setup=other)


def cal17_cases() -> Iterator[Case]:
    for name, make, use, invalid in CAL17:
        yield Case("cal17", name, [*use, "--calibration", "{d}/c.toml"], {}, invalid, setup=_calibrate_into(make))


SURFACES17: dict[str, Callable[[], Iterator[Case]]] = {
    "offload17": offload17_cases,
    "price17": price17_cases,
    "serve17": serve17_cases,
    "base17": base17_cases,
    "cal17": cal17_cases,
}
# fmt: on
