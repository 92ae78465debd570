"""Rows for public_serving_rows.csv from GPUStack's performance lab (vLLM V1 on H100 and H200).

Run: python benchmarks/data/gpustack_to_rows.py FIRST_ID DOC.md... > rows.csv
(each DOC.md is `git show COMMIT:docs/performance-lab/<model>/<gpu>.md` of github.com/gpustack/
gpustack at COMMIT; FIRST_ID the number of the first new row, P206 -> 206). Each page states its
GPUs and the vLLM release it ran, then prints raw `vllm bench serve` result blocks under the serve
command that produced them. Kept: the random-dataset blocks ("# random 2K input", ...) of a
`vllm serve` command for a model in CHECKPOINTS; dropped: ShareGPT blocks (capcliff replays fixed
lengths, not ShareGPT's), blocks with failed requests (fewer successes than the case's prompts),
and blocks whose generated tokens fall short of prompts x output length by more than 2 % (the
client ran without --ignore-eos, so such a case's requests stopped early at varying lengths).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

from inferencex_to_rows import COLUMNS  # the reference CSV's columns (this folder)

REPO = "github.com/gpustack/gpustack"
COMMIT = "1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc"  # last change of every page used (2026-01-06)
# The served checkpoints capcliff has a card for (fidelity.CHECKPOINTS maps them), with a note.
CHECKPOINTS = {
    "deepseek-ai/DeepSeek-R1-0528": "FP8 block-scaled weights as shipped",
    "openai/gpt-oss-120b": "MXFP4 experts as shipped",
    "openai/gpt-oss-20b": "MXFP4 experts as shipped",
    "Qwen/Qwen3-32B": "BF16",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "BF16; the 2507 refresh: the card's architecture, "
                                          "262144-token context",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "FP8 block-scaled; the 2507 refresh: the card's "
                                              "architecture, 262144-token context",
}  # fmt: skip
# The page's dataset list: "# random 2K input" -> (input, output) tokens.
CASES = {"32K": (32000, 100), "4K": (4000, 200), "2K": (2000, 100), "128": (128, 4)}
MAX_SHORTFALL = 0.02


def _blocks(text: str) -> list[dict[str, object]]:
    """Every result block with the serve command above it and its '# random ...' label."""
    serve, label, out = "", "", []
    current: dict[str, object] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if re.match(r"(vllm serve|trtllm-serve|python3? -m sglang)", line):
            serve = line
        elif line.startswith("# "):
            label = line[2:]
        elif line.startswith("============ Serving Benchmark Result"):
            current = {"serve": serve, "label": label}
        elif current is not None and line.startswith("=" * 50):
            out.append(current)
            current, label = None, ""
        elif current is not None:
            found = re.match(r"(.+?):\s+([\d.]+)$", line)
            if found:
                current[found.group(1)] = float(found.group(2))
    return out


def _page(text: str) -> tuple[str, str]:
    """(hardware sentence, vLLM release) the page states."""
    hardware = re.search(r"### Hardware\s+(.+?)\n", text)
    release = re.search(r"- vLLM: v?([\d.]+)", text)
    assert hardware and release, "page without its Hardware or Engine Version section"
    return hardware.group(1).strip(), release.group(1)


def main(args: list[str]) -> None:
    first, paths = int(args[0]), args[1:]
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    n = first
    for path in paths:
        text = Path(path).read_text()
        hardware, release = _page(text)
        gpu = "H200" if "H200" in hardware else "H100"
        page = "/".join(Path(path).stem.split("__"))  # qwen3-32b__h100.md -> qwen3-32b/h100
        for b in _blocks(text):
            serve, label = str(b["serve"]), str(b["label"])
            case = re.match(r"random (\w+) input", label)
            if not serve.startswith("vllm serve") or case is None:
                continue
            model = serve.split()[2]
            if model not in CHECKPOINTS:
                continue
            isl, osl = CASES[case.group(1)]
            prompts = 100 if isl == 32000 else 1000 if isl == 128 else 500
            done, generated = (
                int(float(str(b["Successful requests"]))),
                float(str(b["Total generated tokens"])),
            )
            if done != prompts or generated < (1 - MAX_SHORTFALL) * prompts * osl:
                continue
            tp = re.search(r"(?:-tp|--tensor-parallel-size)[ =](\d+)", serve)
            gpus = int(tp.group(1)) if tp else 1
            out.writerow({
                "row_id": f"P{n:03d}",
                "model": f"{model} ({CHECKPOINTS[model]})",
                "hardware": f"{gpus}x NVIDIA {gpu} SXM (page: '{hardware}')",
                "num_gpus": gpus, "parallelism": f"TP{gpus}",
                "engine": "vLLM", "engine_version": f"{release} (V1 engine; page: 'vLLM: "
                                                     f"v{release}')",
                "server_flags": serve,
                "benchmark_tool": f"vllm bench serve --model {model} --backend openai-chat "
                                  "--endpoint /v1/chat/completions --dataset-name random "
                                  f"--random-input-len {isl} --random-output-len {osl} "
                                  f"--num-prompts {prompts} --seed 42 (request rate inf, no "
                                  "--max-concurrency: every request sent at once; no "
                                  "--ignore-eos)",
                "dataset": "random (fixed lengths: --random-range-ratio default 0)",
                "input_len": isl, "output_len": osl, "num_requests": prompts,
                "concurrency": prompts,
                "duration_s": b["Benchmark duration (s)"],
                "request_throughput_req_s": b["Request throughput (req/s)"],
                "output_throughput_tok_s": b["Output token throughput (tok/s)"],
                "total_or_other_throughput": f"total_tok_s={b['Total Token throughput (tok/s)']}",
                "mean_ttft_ms": b["Mean TTFT (ms)"], "median_ttft_ms": b["Median TTFT (ms)"],
                "p99_ttft_ms": b["P99 TTFT (ms)"], "mean_tpot_ms": b["Mean TPOT (ms)"],
                "mean_itl_ms": b["Mean ITL (ms)"], "mean_e2e_latency_ms": "",
                "median_e2e_latency_ms": "",
                "notes": f"GPUStack performance lab, 'Other Benchmark Cases', block '# {label}' "
                         f"(page dataset list: {isl} input, {osl} output tokens); total input "
                         f"tokens {int(float(str(b['Total input tokens'])))}, generated "
                         f"{int(generated)} (openai-chat: the chat template's tokens are not "
                         "counted in the input)",
                "source": f"{REPO} docs/performance-lab/{page}.md @{COMMIT}",
                "reliability": "medium-high: raw `vllm bench serve` block under its serve "
                               "command, on a page that states the GPUs and the vLLM release; "
                               "lengths from the page's dataset list, prompts from Successful "
                               "requests; kept only if generated tokens are within 2 % of "
                               "prompts x output length (no --ignore-eos)",
            })  # fmt: skip
            n += 1


if __name__ == "__main__":
    main(sys.argv[1:])
