"""The twenty-sixth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py models26 versions26 chain26 links26

What the twenty-five campaigns before tried least. Model folders of families that look like
Llama but are not (models26): an MLP of two matrices (Apertus's xIELU, Arcee's ReLU^2: vLLM
apertus.py, arcee.py), shared experts under keys the `num_experts` branch does not read (Ling's
bailing_moe `num_shared_experts` and `first_k_dense_replace`, Granite's
`shared_intermediate_size`), Phi-4-multimodal's towers under `embd_layer`, Nemotron-NAS's layers
of their own widths (`block_configs`), sliding windows on
all but every n-th layer where config.json lists no `layer_types` (Cohere 2's pattern of 4,
EXAONE 4's "LLLG"), and MiniMax-M2 as released (`attn_type_list` of 1s only and
`"shared_intermediate_size": 0`, which say "no linear layers, no shared expert"). Each valid one
carries a figure worked out by hand below. The release strings engines publish
(versions26): vLLM's 0.10.1.1 (a fourth part), its nightly wheels' `0.11.1rc2.dev106+g...`,
image tags of the three engines, and strings that are no release. One command's output fed to
another (chain26): sweep's JSON and CSV and plan's JSON to calibrate, check's JSON report and
JUnit to --baseline, memory's JSON as a model's config.json, a calibration as a check spec.
Links (links26): a model folder laid out as the Hugging Face cache lays it out (config.json and
the shard links into blobs/), an output that is a link to an input, a dangling link.

By hand. Command A (hidden 12,288, 64 layers, 8 KV heads of 128, window 4,096, pattern 4) on
tp8: one KV head a GPU, 2 x 128 x 2 B = 512 B a layer a token; 16 full layers hold every token,
48 sliding ones hold window + chunk = 4,096 + 8,192 tokens of the 131,072: 16 x 512 + 48 x 512 x
12,288 / 131,072 = 8,192 + 2,304 = 10,496 B a token a GPU. EXAONE 4.0 32B ("LLLG", 64 layers, 8
KV heads of 128) on one GPU: 4,096 B a layer a token; 16 x 4,096 + 48 x 4,096 x 12,288 / 131,072
= 65,536 + 18,432 = 83,968. MiniMax-M2 (hidden 3,072, 62 layers, 48 heads and 8 KV heads of
128, 256 experts of 1,536, vocabulary 200,064, untied): embedding and head 2 x 200,064 x 3,072 =
1,229,193,216; attention 62 x (2 x 3,072 x 6,144 + 2 x 3,072 x 1,024) = 2,730,491,904; experts
62 x 256 x 3 x 3,072 x 1,536 = 224,680,476,672; router 62 x 3,072 x 256 = 48,758,784; norms
62 x 2 x 3,072 + 3,072 = 384,000: 228,689,304,576 parameters.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases22 import DEL, _with
from fuzz_cases25 import _reading
from fuzz_harness import Case, FileSpec

MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
TP8 = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--format", "json"]

# inclusionAI/Ling-lite-1.5 config.json, sizing keys
LING = {
    "architectures": ["BailingMoeForCausalLM"], "model_type": "bailing_moe", "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408, "num_experts": 64, "num_shared_experts": 2,
    "num_experts_per_tok": 6, "first_k_dense_replace": 0, "num_attention_heads": 16, "num_key_value_heads": 4,
    "num_hidden_layers": 28, "vocab_size": 126464, "max_position_embeddings": 32768, "use_bias": False,
    "use_qkv_bias": False, "norm_head": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# swiss-ai/Apertus-8B-2509 and arcee-ai/AFM-4.5B config.json, sizing keys
APERTUS = {
    "architectures": ["ApertusForCausalLM"], "model_type": "apertus", "hidden_act": "xielu", "hidden_size": 4096,
    "intermediate_size": 21504, "max_position_embeddings": 65536, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "qk_norm": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 131072,
}  # fmt: skip
ARCEE = {
    "architectures": ["ArceeForCausalLM"], "model_type": "arcee", "hidden_act": "relu2", "hidden_size": 2560,
    "intermediate_size": 18432, "max_position_embeddings": 65536, "num_attention_heads": 20, "num_hidden_layers": 36,
    "num_key_value_heads": 4, "head_dim": 128, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128004,
}  # fmt: skip
# ibm-granite/granite-3.0-1b-a400m shape with a shared expert (granitemoeshared)
GRANITE_SHARED = {
    "architectures": ["GraniteMoeSharedForCausalLM"], "model_type": "granitemoeshared", "hidden_size": 1024,
    "intermediate_size": 512, "num_local_experts": 32, "num_experts_per_tok": 8, "shared_intermediate_size": 1024,
    "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 24, "vocab_size": 49155,
    "max_position_embeddings": 4096, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}  # fmt: skip
# microsoft/Phi-4-multimodal-instruct config.json, sizing keys and the towers' keys
PHI4MM = {
    "architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "hidden_size": 3072, "intermediate_size": 8192,
    "num_attention_heads": 24, "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 200064,
    "max_position_embeddings": 131072, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "embd_layer": {"embedding_cls": "image_audio", "image_embd_layer": {"crop_size": 448}, "audio_embd_layer": {}},
    "audio_processor": {"name": "cascades", "config": {"attention_dim": 1024, "num_blocks": 24}},
}  # fmt: skip
# nvidia/Llama-3_3-Nemotron-Super-49B-v1's shape: one block per layer of its own widths
NEMOTRON_NAS = {
    "architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "hidden_size": 8192, "intermediate_size": 28672,
    "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 80, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "block_configs": [{"attention": {"n_heads_in_group": 8, "no_op": False}, "ffn": {"ffn_mult": 2.625, "no_op": False}}] * 80,
}  # fmt: skip
# MiniMaxAI/MiniMax-M2 config.json, sizing keys (fuzz_cases11's, with the two keys as released)
MINIMAX_M2 = {
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "head_dim": 128, "hidden_size": 3072,
    "intermediate_size": 1536, "max_position_embeddings": 196608, "num_attention_heads": 48, "num_experts_per_tok": 8,
    "num_hidden_layers": 62, "num_key_value_heads": 8, "num_local_experts": 256, "num_mtp_modules": 3,
    "rotary_dim": 64, "use_qk_norm": True, "vocab_size": 200064, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "attn_type_list": [1] * 62, "shared_intermediate_size": 0,
}  # fmt: skip
# CohereLabs/c4ai-command-a-03-2025 and c4ai-command-r7b-12-2024 config.json, sizing keys
COMMAND_A = {
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 12288, "intermediate_size": 36864,
    "num_attention_heads": 96, "num_key_value_heads": 8, "num_hidden_layers": 64, "vocab_size": 256000,
    "max_position_embeddings": 131072, "sliding_window": 4096, "sliding_window_pattern": 4, "logit_scale": 0.25,
    "torch_dtype": "bfloat16", "tie_word_embeddings": True, "attention_bias": False,
}  # fmt: skip
COMMAND_R7B = {
    **COMMAND_A, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "max_position_embeddings": 8192,
}  # fmt: skip
# LGAI-EXAONE/EXAONE-4.0-32B config.json, sizing keys (the letters form of the pattern)
EXAONE4 = {
    "architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "hidden_size": 5120, "intermediate_size": 27392,
    "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 64,
    "vocab_size": 102400, "max_position_embeddings": 131072, "sliding_window": 4096,
    "sliding_window_pattern": "LLLG", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip


def _per_gpu_kv(expected: int) -> Callable[[str], str | None]:
    """The first layout's KV bytes a token a GPU at max_model_len."""
    return _reading(
        "kv_bytes_per_token_per_gpu",
        lambda d: d["layouts"][0]["kv_bytes_per_token_per_gpu"],
        expected,
    )


def _params(expected: int) -> Callable[[str], str | None]:
    return _reading("params_total", lambda d: d["params_total"], expected)


CHUNK = ["--max-num-batched-tokens", "8192"]
# fmt: off
# (name, config.json, command line, invalid, reading)
MODELS26: list[tuple[str, dict[str, object], list[str], bool | None, Callable[[str], str | None] | None]] = [
    ("ling-lite-shared-experts", LING, MEMORY, True, None),
    ("ling-v2-first-dense", _with(LING, num_shared_experts=1, first_k_dense_replace=1, model_type="bailing_moe_v2"), MEMORY, True, None),
    ("bailing-no-shared-first-dense", _with(LING, num_shared_experts=0, first_k_dense_replace=1), MEMORY, True, None),
    ("bailing-shared-true", _with(LING, num_shared_experts=True), MEMORY, True, None),
    ("granite-moe-shared", GRANITE_SHARED, MEMORY, True, None),
    ("granite-moe-shared-zero", _with(GRANITE_SHARED, shared_intermediate_size=0), MEMORY, None, None),
    ("apertus-ungated", APERTUS, MEMORY, True, None),
    ("apertus-by-class-only", _with(APERTUS, model_type=DEL), MEMORY, True, None),
    ("arcee-ungated", ARCEE, MEMORY, True, None),
    ("phi4-multimodal-towers", PHI4MM, MEMORY, True, None),
    ("nemotron-nas-blocks", NEMOTRON_NAS, MEMORY, True, None),
    ("nemotron-nas-blocks-no-widths", _with(NEMOTRON_NAS, intermediate_size=DEL, num_key_value_heads=DEL), MEMORY, True, None),
    ("minimax-m2-as-released", MINIMAX_M2, ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "8", "--format", "json"], False, _params(228_689_304_576)),
    ("minimax-attn-types-with-linear", _with(MINIMAX_M2, attn_type_list=[0, 0, 0, 1] * 15 + [0, 1]), MEMORY, True, None),
    ("minimax-attn-types-bool", _with(MINIMAX_M2, attn_type_list=[True] * 62), MEMORY, True, None),
    ("minimax-attn-types-empty", _with(MINIMAX_M2, attn_type_list=[]), MEMORY, True, None),
    ("minimax-attn-types-string", _with(MINIMAX_M2, attn_type_list="1" * 62), MEMORY, True, None),
    ("command-a-pattern-4", COMMAND_A, [*TP8, *CHUNK], False, _per_gpu_kv(10_496)),
    # no pattern key: Cohere2Config's default, 4
    ("command-a-pattern-default", _with(COMMAND_A, sliding_window_pattern=DEL), [*TP8, *CHUNK], False, _per_gpu_kv(10_496)),
    ("command-a-layer-types-win", _with(COMMAND_A, layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 16), [*TP8, *CHUNK], False, _per_gpu_kv(10_496)),
    ("command-a-no-window", _with(COMMAND_A, sliding_window=None), [*TP8, *CHUNK], False, _per_gpu_kv(64 * 512)),
    ("command-a-pattern-zero", _with(COMMAND_A, sliding_window_pattern=0), [*TP8, *CHUNK], True, None),
    ("command-r7b-tie-default", _with(COMMAND_R7B, tie_word_embeddings=DEL), MEMORY, False, None),
    ("exaone4-lllg", EXAONE4, [*MEMORY, *CHUNK], False, _per_gpu_kv(83_968)),
    ("exaone4-int-4", _with(EXAONE4, sliding_window_pattern=4), [*MEMORY, *CHUNK], False, _per_gpu_kv(83_968)),
    ("exaone4-letters-other", _with(EXAONE4, sliding_window_pattern="LLXG"), [*MEMORY, *CHUNK], True, None),
    ("exaone4-no-window", _with(EXAONE4, sliding_window=None), [*MEMORY, *CHUNK], False, _per_gpu_kv(64 * 4096)),
]
# fmt: on


def models26_cases() -> Iterator[Case]:
    for name, config, argv, invalid, answer in MODELS26:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(config)}
        yield Case("models26", name, list(argv), files, invalid, answer=answer)
    # the same models through sweep and check, where a refusal is one line too
    small = [
        "--isl",
        "100",
        "--osl",
        "50",
        "--num-requests",
        "8",
        "--gpu",
        "h200-sxm",
        "--concurrency",
        "2",
    ]
    yield Case(
        "models26",
        "sweep-apertus",
        ["sweep", "{d}/m", *small],
        {"m/config.json": json.dumps(APERTUS)},
        True,
    )
    yield Case(
        "models26",
        "sweep-command-r7b",
        ["sweep", "{d}/m", *small],
        {"m/config.json": json.dumps(COMMAND_R7B)},
        False,
    )
    spec = fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "m"')
    yield Case(
        "models26",
        "check-ling",
        ["check", "{d}/s.toml"],
        {"s.toml": spec, "m/config.json": json.dumps(LING)},
        True,
    )


LLAMA_MEM = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--format", "json"]
# fmt: off
# (name, engine, release string, invalid)
VERSIONS26: list[tuple[str, str, str, bool | None]] = [
    # vLLM: PyPI 0.10.1.1 (a fourth part), the image tag, the nightly wheel, a local build
    ("vllm-0.10.1.1", "vllm", "0.10.1.1", False),
    ("vllm-v0.10.1.1", "vllm", "v0.10.1.1", False),
    ("vllm-image-0.10.1.1", "vllm", "vllm/vllm-openai:v0.10.1.1", False),
    ("vllm-wheel-0.10.1.1-cu128", "vllm", "vllm-0.10.1.1+cu128", False),
    ("vllm-nightly", "vllm", "0.11.1rc2.dev106+gd31f7844f", False),
    ("vllm-dev-local", "vllm", "0.11.1.dev0+gabc1234.d20251201", False),
    ("vllm-rocm-local", "vllm", "0.11.0+rocm700", False),
    ("vllm-pip-show", "vllm", "Version: 0.11.0", False),
    ("vllm-nightly-tag", "vllm", "vllm/vllm-openai:nightly-0123abc", True),
    ("vllm-latest", "vllm", "latest", True),
    ("vllm-fourth-part-letters", "vllm", "0.10.1.x", True),
    ("vllm-five-parts", "vllm", "0.10.1.1.1", None),
    ("vllm-fourth-part-huge", "vllm", "0.10.1." + "9" * 50, True),
    ("vllm-rocm-image", "vllm", "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909", None),
    # SGLang: image tags with platform tails, release candidates
    ("sglang-image-amd64", "sglang", "lmsysorg/sglang:v0.5.4.post1-cu129-amd64", False),
    ("sglang-image-gb200", "sglang", "lmsysorg/sglang:v0.5.5-cu129-gb200", False),
    ("sglang-rc", "sglang", "0.5.0rc2", False),
    ("sglang-rocm-dev", "sglang", "rocm/sgl-dev:v0.5.2-rocm630-mi30x-20250915", False),
    ("sglang-nightly-dev", "sglang", "lmsysorg/sglang:nightly-dev-20251201-abc", True),
    # TensorRT-LLM: release candidates with posts, the NGC image
    ("trtllm-rc", "trtllm", "1.1.0rc5", False),
    ("trtllm-rc-post", "trtllm", "1.2.0rc6.post1", False),
    ("trtllm-ngc", "trtllm", "nvcr.io/nvidia/tensorrt-llm/release:1.0.0rc4", False),
    ("trtllm-module", "trtllm", "tensorrt_llm 1.1.0", False),
]
# fmt: on


def versions26_cases() -> Iterator[Case]:
    for name, engine, text, invalid in VERSIONS26:
        argv = [*LLAMA_MEM, "--engine", engine, "--engine-version", text]
        yield Case("versions26", name, argv, {}, invalid)
    # a start-up log of vLLM 0.10.1.1: its release is read, and a calibration written from it
    # is applied on the same release
    log = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text().replace("0.10.2", "0.10.1.1")
    yield Case(
        "versions26",
        "log-0.10.1.1",
        ["calibrate", "{d}/v.log", "--gpu", "h100-sxm", "--format", "json"],
        {"v.log": log},
        False,
    )
    yield Case(
        "versions26",
        "spec-0.10.1.1",
        ["check", "{d}/s.toml"],
        {
            "s.toml": fs.SPEC.replace(
                'engine = "vllm"', 'engine = "vllm"\nengine_version = "0.10.1.1"'
            )
        },
        False,
    )


def _produce(name: str, argv: list[str]) -> Callable[[Path], None]:
    """A setup that writes `capcliff ARGV`'s standard output to `name` in the case folder (the
    output of one command, to be fed to another)."""

    def setup(folder: Path) -> None:
        env = {**os.environ, "CAPCLIFF_SIM_CORE": "python"}
        done = subprocess.run(
            [sys.executable, "-m", "capcliff", *argv],
            cwd=folder,
            env=env,
            capture_output=True,
            check=False,
        )
        (folder / name).write_bytes(done.stdout)

    return setup


SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20", "--gpu", "h100-sxm"]
SWEEP_JSON = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "2,4", "--format", "json"]
SWEEP_CSV = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "2,4", "--format", "csv"]
PLAN_JSON = [
    "plan",
    "llama-3.1-8b",
    "--gpus",
    "1",
    "--jobs",
    "1",
    *SMALL,
    "--arrival",
    "batch",
    "--format",
    "json",
]
MEM_JSON = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--format", "json"]
CHECK_JSON = ["check", "s.toml", "--format", "json"]
# fmt: off
# (name, file written, the command writing it, the command reading it, invalid)
CHAIN26: list[tuple[str, str, list[str], list[str], bool | None]] = [
    ("sweep-json-to-calibrate", "o.json", SWEEP_JSON, ["calibrate", "{d}/o.json", "--model", "llama-3.1-8b"], True),
    ("sweep-csv-to-calibrate", "o.csv", SWEEP_CSV, ["calibrate", "{d}/o.csv", "--model", "llama-3.1-8b"], True),
    ("plan-json-to-calibrate", "o.json", PLAN_JSON, ["calibrate", "{d}/o.json", "--model", "llama-3.1-8b"], True),
    ("memory-json-as-config", "m/config.json", MEM_JSON, ["memory", "{d}/m", "--gpu", "h100-sxm", "--gpus", "1"], True),
    ("memory-json-as-model-file", "o.json", MEM_JSON, ["memory", "{d}/o.json", "--gpu", "h100-sxm", "--gpus", "1"], True),
    ("check-json-as-baseline", "o.json", CHECK_JSON, ["check", "{d}/s.toml", "--baseline", "{d}/o.json"], True),
    ("sweep-json-as-baseline", "o.json", SWEEP_JSON, ["check", "{d}/s.toml", "--baseline", "{d}/o.json"], True),
    ("check-json-as-calibration", "o.json", CHECK_JSON, ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "2", "--calibration", "{d}/o.json"], True),
    ("sweep-json-as-spec", "o.json", SWEEP_JSON, ["check", "{d}/o.json"], True),
    ("sweep-csv-as-trace", "o.csv", SWEEP_CSV, ["sweep", "llama-3.1-8b", "--workload", "{d}/o.csv", "--gpu", "h100-sxm", "--concurrency", "2"], True),
    ("memory-json-as-serve-command", "o.json", MEM_JSON, ["memory", "--gpu", "h100-sxm", "--serve-command", "vllm serve {d}/o.json"], True),
    ("empty-output-to-calibrate", "o.json", ["memory", "no-such-model"], ["calibrate", "{d}/o.json", "--model", "llama-3.1-8b"], True),
]
# fmt: on


def chain26_cases() -> Iterator[Case]:
    for name, written, producer, reader, invalid in CHAIN26:
        files: dict[str, FileSpec] = {"s.toml": fs.SPEC}
        if "/" in written:
            files[written.rsplit("/", 1)[0]] = ("dir",)
        yield Case("chain26", name, reader, files, invalid, setup=_produce(written, producer))
    # a baseline check wrote, read by the next check of the same spec: valid
    write = Case(
        "chain26",
        "write-then-read-baseline",
        ["check", "{d}/s.toml", "--baseline", "{d}/b.json"],
        {"s.toml": fs.SPEC},
        False,
    )
    write.setup = lambda folder: _produce(
        "w.out", ["check", "s.toml", "--write-baseline", "b.json"]
    )(folder)
    yield write
    # the JUnit and Markdown reports as a spec or a baseline
    for report, flag in (("r.xml", "--junit"), ("r.md", "--markdown")):
        case = Case(
            "chain26",
            f"{report}-as-baseline",
            ["check", "{d}/s.toml", "--baseline", f"{{d}}/{report}"],
            {"s.toml": fs.SPEC},
            True,
        )
        case.setup = (
            lambda r, f: lambda folder: _produce("w.out", ["check", "s.toml", f, r])(folder)
        )(report, flag)
        yield case


def _safetensors(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file of `tensors` (name: (dtype, shape)), zero-filled."""
    sizes = {"BF16": 2, "F32": 4}
    header: dict[str, object] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


def links26_cases() -> Iterator[Case]:
    llama = json.dumps(fs.llama_config())
    shard = _safetensors(
        {"model.norm.weight": ("BF16", [4096]), "lm_head.weight": ("BF16", [16, 4096])}
    )
    hub: dict[str, FileSpec] = {
        "hub/blobs/aa11": llama,
        "hub/blobs/bb22": shard,
        "hub/snapshots/rev/config.json": ("symlink", "../../blobs/aa11"),
        "hub/snapshots/rev/model.safetensors": ("symlink", "../../blobs/bb22"),
    }
    mem = [
        "memory",
        "{d}/hub/snapshots/rev",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "1",
        "--format",
        "json",
    ]
    # the shard's bytes by hand: 4,096 x 2 + 16 x 4,096 x 2 = 139,264
    yield Case(
        "links26",
        "hf-cache-layout",
        mem,
        hub,
        False,
        answer=_reading("checkpoint_bytes", lambda d: d["checkpoint_bytes"], 139_264),
    )
    dangling = {**hub, "hub/snapshots/rev/model.safetensors": ("symlink", "../../blobs/missing")}
    yield Case("links26", "hf-cache-dangling-shard", mem, dangling, None)
    # outputs that are links: to an input (refused), dangling, to a folder
    sweep = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "2"]
    yield Case(
        "links26",
        "plot-link-to-spec",
        ["check", "{d}/s.toml", "--junit", "{d}/out.xml"],
        {"s.toml": fs.SPEC, "out.xml": ("symlink", "s.toml")},
        True,
    )
    yield Case(
        "links26",
        "plot-link-to-spec-force",
        ["check", "{d}/s.toml", "--junit", "{d}/out.xml", "--force"],
        {"s.toml": fs.SPEC, "out.xml": ("symlink", "s.toml")},
        True,
    )
    yield Case(
        "links26",
        "plot-dangling-link",
        [*sweep, "--plot", "{d}/p.png"],
        {"p.png": ("symlink", "nowhere/p.png")},
        None,
    )
    yield Case(
        "links26",
        "plot-link-to-dir",
        [*sweep, "--plot", "{d}/p.png"],
        {"d": ("dir",), "p.png": ("symlink", "d")},
        True,
    )
    yield Case(
        "links26",
        "plot-link-to-config",
        [*sweep, "--plot", "{d}/p.png", "--force"],
        {"m/config.json": llama, "p.png": ("symlink", "m/config.json")},
        None,
    )


SURFACES26: dict[str, Callable[[], Iterator[Case]]] = {
    "models26": models26_cases,
    "versions26": versions26_cases,
    "chain26": chain26_cases,
    "links26": links26_cases,
}
