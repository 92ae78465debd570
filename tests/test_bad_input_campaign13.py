"""Bad input that a thirteenth campaign (benchmarks/fuzz_cases13.py) found, and the label of a
GPTQ checkpoint at other than 4 bits. Each bad input exits 2 with one `error: ...` line naming
the field and what is valid; valid input is sized by its own rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capcliff.cli import main

# meta-llama/Llama-3.1-70B-Instruct config.json (the fields that size it)
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
    "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# Linear weights of Llama-3.1-70B per layer: q and o 8192 x 8192, k and v 8192 x 1024, gate, up
# and down 8192 x 28672: 134,217,728 + 16,777,216 + 704,643,072 = 855,638,016; x 80 layers
LINEAR_PARAMS = 68_451_041_280
# embeddings and lm_head 2 x 128,256 x 8,192 + norms (2 x 80 + 1) x 8,192, in bf16 (2 B)
NATIVE_BYTES = (2 * 128_256 * 8_192 + 161 * 8_192) * 2


def _memory_json(tmp_path: Path, quant: object, capsys: pytest.CaptureFixture[str]) -> dict:
    folder = tmp_path / "m"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    code = main(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return dict(json.loads(out))


@pytest.mark.parametrize(
    ("bits", "label", "weights_bytes"),
    [
        # GPTQ g128 with zero points: bits/8 + (16-bit scale + bits-bit zero) / 8 / 128 B each
        (3, "int3", LINEAR_PARAMS * (3 * 128 + 16 + 3) // 1024 + NATIVE_BYTES),  # 31,144,558,592
        (4, "int4", LINEAR_PARAMS * (4 * 128 + 16 + 4) // 1024 + NATIVE_BYTES),  # 39,767,785,472
        (8, "int8", LINEAR_PARAMS * (8 * 128 + 16 + 8) // 1024 + NATIVE_BYTES),  # 74,260,692,992
    ],
    ids=["gptq-3-bit", "gptq-4-bit", "gptq-8-bit"],
)
def test_gptq_checkpoint_is_labelled_and_sized_by_its_bits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bits: int, label: str, weights_bytes: int
) -> None:
    quant = {"quant_method": "gptq", "bits": bits, "group_size": 128, "desc_act": False}
    report = _memory_json(tmp_path, quant, capsys)
    assert (report["weight_dtype"], report["weights_bytes_total"]) == (label, weights_bytes)


def test_gptq_8_bit_table_header_says_int8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    quant = {"quant_method": "gptq", "bits": 8, "group_size": 128}
    (folder / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    assert main(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm"]) == 0
    assert "(weights int8, KV bf16" in capsys.readouterr().out
