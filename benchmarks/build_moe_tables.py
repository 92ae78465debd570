"""Rebuild capcliff/perf/data/moe_tables.json: aiconfigurator-core's measured MoE layer times for
DeepSeek-V3/R1's own routed-expert shape, per GPU, engine, weight format and MoE TP x EP.

Run: python benchmarks/build_moe_tables.py [--check] [--distribution D] [--out PATH]
(needs `pip install '.[kernels]'`; writes the JSON, or with --check says whether the shipped file
matches a rebuild; asserts nothing). `--distribution balanced` (or `power_law_1.2`) builds the
same tables from aiconfigurator's rows in that routing distribution, for experiments: point
`--out` elsewhere; the shipped file is the `power_law_1.01` build.

`op_curves.json`'s `moe` curves are one line per token count fitted through every MoE shape the
table measured (many models), at `balanced` routing. For DeepSeek-V3/R1 (hidden 7168, expert
width 2048, 256 experts, top 8) the tables hold the model's own shape at every MoE TP x EP and 27
token counts (1-16,384), so this script keeps those rows as they are: per token count, the
fastest measured kernel (the engine picks among them per shape, as build_op_curves.py does) in
the routing distribution aiconfigurator's own DeepSeek model prices with:
`aiconfigurator_core/sdk/models/deepseek.py` sets `self._power_law_alpha = 1.01` and
`sdk/config.py` `workload_distribution = "power_law"`, so it reads the `power_law_1.01` rows.
The releases are the ones op_curves.json was built from (`_current_release`).

A table is kept only where the kernel aiconfigurator measured is the one the engine runs for
DeepSeek by default (`DEFAULT_KERNELS`): SGLang's Triton fused MoE on Hopper and FlashInfer's
TensorRT-LLM-gen MoE on Blackwell (sglang 0.5.x server_args.py: `moe_runner_backend = "auto"`,
switched to "flashinfer_trtllm" on sm100 for DeepseekV3ForCausalLM with fp8 / modelopt_fp4;
Triton otherwise), and TensorRT-LLM's CUTLASS MoE on Hopper (llm_args.py `MoeConfig.backend`
default 'CUTLASS'; InferenceX's dsr1_fp8_h200_trt.sh sets it too). Not kept: TensorRT-LLM on
Blackwell, whose block-FP8 table measured DeepGEMM only, while the R1 launch scripts there select
`moe_config.backend: TRTLLM` (trtllm-gen; dsr1_fp8_b200_trt.sh since 2026-01-29,
dsr1_fp4_b200_trt.sh), which no table measured. vLLM's table on Hopper is its Triton fused MoE,
which is not its default everywhere: vLLM's `Fp8MoEMethod` runs block-FP8 experts on DeepGEMM
where `VLLM_USE_DEEP_GEMM` allows it and the package is installed (`has_deep_gemm()`), on the
Triton `fused_experts` kernel otherwise; the table prices the latter, which capcliff selects with
`--moe-backend triton` (perf/moe_tables.py: no vLLM default). TensorRT-LLM's TRTLLM backend on
Blackwell runs the trtllm-gen MoE runner that FlashInfer ported and SGLang runs there, so
capcliff prices it with the SGLang trtllm-gen tables kept here (perf/moe_tables.py,
`SHARED_KERNELS`), not with a table of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from build_op_curves import (
    BACKENDS,
    ROOT,
    SYSTEMS,
    _current_release,
    _fastest,
    _package_dir,
    _table,
)

OUT = ROOT / "capcliff" / "perf" / "data" / "moe_tables.json"
# DeepSeek-V3/R1's routed experts (config.json: hidden_size, moe_intermediate_size,
# n_routed_experts, num_experts_per_tok)
SHAPE = {"hidden_size": 7168, "inter_size": 2048, "num_experts": 256, "topk": 8}
DISTRIBUTION = "power_law_1.01"  # aiconfigurator sdk/models/deepseek.py, _power_law_alpha
# the routing distributions aiconfigurator's moe_perf tables measured the DeepSeek shape in
DISTRIBUTIONS = ("power_law_1.01", "balanced", "power_law_1.2")
FORMATS = ("fp8_block", "nvfp4")
HOPPER, BLACKWELL = ("h100_sxm", "h200_sxm"), ("b200_sxm", "b300_sxm", "gb200")
DEFAULT_KERNELS = {
    "sglang": {s: ("sglang_fused_moe_triton",) for s in HOPPER}
    | {s: ("sglang_flashinfer_trtllm_moe",) for s in BLACKWELL},
    "trtllm": {s: ("moe_torch_flow_cutlass",) for s in HOPPER},
    # vLLM's Triton fused MoE (`fused_experts`; aiconfigurator names it by release), kept as the
    # kernel `--moe-backend triton` selects: it is what vLLM runs for block-FP8 experts on Hopper
    # where DeepGEMM is not installed (see the module docstring)
    "vllm": {s: ("vllm_fp8moe_triton_tritonexperts", "vllm_fused_moe") for s in HOPPER},
}
# A replica's MoE layer spans its TP ranks (moe_tp x moe_ep); 64 covers an NVL72 rack's layouts.
MAX_RANKS = 64  # the formats DeepSeek-R1 is served in (model_cards/)


def tables_of(
    frame: Any, kernels: tuple[str, ...], distribution: str = DISTRIBUTION
) -> list[dict[str, Any]]:
    """One table per (format, MoE TP, MoE EP): token counts and the fastest measured seconds of
    `kernels` in routing `distribution`."""
    rows = frame[(frame.distribution == distribution) & frame.kernel_source.isin(kernels)]
    for column, value in SHAPE.items():
        rows = rows[rows[column] == value]
    keys = ["moe_dtype", "moe_tp_size", "moe_ep_size", "num_tokens"]
    rows = _fastest(rows[rows.moe_dtype.isin(FORMATS)], keys)
    out = []
    for (fmt, tp, ep), part in rows.groupby(["moe_dtype", "moe_tp_size", "moe_ep_size"]):
        if tp * ep > MAX_RANKS:
            continue
        part = part.sort_values("num_tokens")
        out.append({
            "format": str(fmt), "moe_tp": int(tp), "moe_ep": int(ep),
            "tokens": [int(t) for t in part.num_tokens],
            "us": [round(float(ms) * 1e3, 1) for ms in part.latency],
        })  # fmt: skip
    return out


def build(distribution: str = DISTRIBUTION) -> dict[str, Any]:
    """Every DeepSeek-shape MoE table the installed aiconfigurator-core holds, in routing
    `distribution`."""
    import pandas as pd

    tables: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    for system, hardware in SYSTEMS.items():
        for backend in BACKENDS:
            kernels = DEFAULT_KERNELS.get(backend, {}).get(system)
            release = _current_release(system, backend)
            path = _table(system, "moe", backend, release, "moe_perf.parquet")
            if path is None or kernels is None:
                continue
            key = f"{hardware}/{backend}"
            table = path.relative_to(_package_dir()).as_posix()
            frame = pd.read_parquet(path)
            # the kernel this release's table measured (vLLM's is named by release)
            kernels = tuple(k for k in kernels if (frame.kernel_source == k).any())
            sources[key] = f"{table} (release {release}, kernel {', '.join(kernels)})"
            tables += [{"hardware": hardware, "engine": backend, **t}
                       for t in tables_of(frame, kernels, distribution)]  # fmt: skip
    return {
        "source": (
            f"aiconfigurator-core {version('aiconfigurator-core')} (NVIDIA, Apache-2.0), "
            f"measured moe_perf rows, {distribution} routing; benchmarks/build_moe_tables.py"
        ),
        "shape": SHAPE,
        "distribution": distribution,
        "tables_read": sources,
        "tables": tables,
    }


def _dumps(data: dict[str, Any]) -> str:
    """The JSON with one table per line (the file stays small and diffs stay readable)."""
    head = {k: v for k, v in data.items() if k != "tables"}
    lines = [json.dumps(t, separators=(",", ":")) for t in data["tables"]]
    body = json.dumps(head, indent=1)[:-2]
    return body + ',\n "tables": [\n' + ",\n".join(lines) + "\n ]\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument(
        "--distribution", choices=DISTRIBUTIONS, default=DISTRIBUTION,
        help=f"aiconfigurator routing distribution to read (default {DISTRIBUTION})",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: shipped)")
    args = parser.parse_args()
    data = build(args.distribution)
    text = _dumps(data)
    out: Path = args.out
    if args.check:
        same = out.exists() and out.read_text() == text
        sys.stdout.write("shipped file matches a rebuild\n" if same else "shipped file differs\n")
        return
    out.write_text(text)
    sys.stdout.write(f"{len(data['tables'])} tables -> {out}\n")


if __name__ == "__main__":
    main()
