"""Rebuild capcliff/perf/data/mla_bmm.json: aiconfigurator-core's measured times of MLA's two
absorbed decode BMMs (W_UK before the attention kernel, `mla_gen_pre`; W_UV after it,
`mla_gen_post`) per GPU, engine, weight dtype and heads per GPU.

Run: python benchmarks/build_mla_bmm.py [--check] [--out PATH]
(needs aiconfigurator-core; writes the JSON, or with --check says whether the shipped file matches
a rebuild; asserts nothing).

Rows kept (`systems/data/{gpu}/mla_bmm/{engine}/{release}/mla_bmm_perf.parquet`, CUDA graph):
SGLang 0.5.14 `sglang_torch_bmm` (bfloat16): the kernel SGLang runs for DeepSeek's block-FP8
and BF16 `kv_b_proj` on CUDA (models/deepseek_v2.py `post_load_weights` dequantizes 128 x 128
block-FP8 weights to BF16 unless SGL_USE_DEEPGEMM_BMM on Hopper, off by default; the absorbed
path then calls `torch.bmm`). TensorRT-LLM 1.3.0rc20 `trtllm_bmm_out` (bfloat16 weights) and the
fp8 rows (block-FP8 weights: `fp8_block_scaling_bmm_out` on Hopper, the weight dequantized to
BF16 and `bmm_out` on Blackwell; aiconfigurator's collector/trtllm/collect_mla_bmm.py and
kernel_source_backends.yaml, after TensorRT-LLM's attention.py at 1.3.0rc20). Each entry is the
sum of the two ops' latencies at one token count, in microseconds (the mean where a point was
measured twice).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

OUT = Path(__file__).parent.parent / "capcliff" / "perf" / "data" / "mla_bmm.json"
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "b300_sxm": "b300"}
# engine -> (release, {weight dtype the table is keyed by: (bmm_dtype, kernel sources)})
KERNELS = {
    "sglang": ("0.5.14", {"bfloat16": ("bfloat16", ("sglang_torch_bmm",))}),
    "trtllm": (
        "1.3.0rc20",
        {
            "bfloat16": ("bfloat16", ("trtllm_bmm_out",)),
            "fp8_block": (
                "fp8",
                ("trtllm_fp8_block_scaling_bmm_out", "trtllm_bmm_out_dequant_bf16"),
            ),
        },
    ),
}


def build() -> dict[str, object]:
    """The file's content, from the installed aiconfigurator-core's tables."""
    import aiconfigurator_core
    import pandas as pd

    root = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
    tables = []
    tokens: list[int] | None = None
    for system, hardware in SYSTEMS.items():
        for engine, (release, kinds) in KERNELS.items():
            table = root / system / "mla_bmm" / engine / release / "mla_bmm_perf.parquet"
            rows = pd.read_parquet(table)
            for weight, (dtype, sources) in kinds.items():
                kind = rows[(rows.bmm_dtype == dtype) & rows.kernel_source.isin(sources)]
                for heads in sorted(int(h) for h in kind.num_heads.unique()):
                    at = kind[kind.num_heads == heads]
                    # some points were measured twice (a re-run): their mean
                    pre = at[at.op_name == "mla_gen_pre"].groupby("num_tokens").latency.mean()
                    post = at[at.op_name == "mla_gen_post"].groupby("num_tokens").latency.mean()
                    counts = sorted(int(n) for n in set(pre.index) & set(post.index))
                    tokens = tokens or counts
                    if counts != tokens:
                        raise SystemExit(f"{system} {engine} {heads}: token counts differ")
                    us = [round(1000 * float(pre[n] + post[n]), 3) for n in counts]
                    tables.append(
                        {"hardware": hardware, "engine": engine, "weight": weight,
                         "heads": heads, "us": us}
                    )  # fmt: skip
    return {
        "source": (
            "aiconfigurator-core 0.12: systems/data/{gpu}/mla_bmm/{engine}/{release}/"
            "mla_bmm_perf.parquet (sglang 0.5.14 sglang_torch_bmm; trtllm 1.3.0rc20 "
            "trtllm_bmm_out, fp8: trtllm_fp8_block_scaling_bmm_out on Hopper, "
            "trtllm_bmm_out_dequant_bf16 on Blackwell; CUDA graph); us = mla_gen_pre + "
            "mla_gen_post latency in microseconds at each token count"
        ),
        "tokens": tokens,
        "tables": tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = build()
    text = json.dumps(data, indent=1) + "\n"
    if args.check:
        same = args.out.read_text(encoding="utf-8") == text
        print("matches" if same else "differs")
        return
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(data['tables'])} tables")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
