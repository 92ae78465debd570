"""TensorRT-LLM's KV pool holds every layer of a sliding-window model in full.

Source: tensorrt_llm/_torch/pyexecutor/resource_manager.py `KVCacheManager.__init__` (every
release read, PR #5151 of June 2025 to PR #16942 of July 2026): with
`kv_cache_config.max_attention_window` unset, the window vector is [max_seq_len], one window for
all layers; gpt-oss's 128-token window only masks the attention kernel
(modeling_gpt_oss.py `AttentionBlock`). vLLM and SGLang keep their own rules
(tests/test_user2_trial.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.cli.main import main
from capcliff.memory.budget import EngineName
from capcliff.memory.layout_memory import LayoutMemory, sliding_context_tokens
from capcliff.sim.config import KVCapacity


def _layout(
    capsys: pytest.CaptureFixture[str], model: str, engine: str, layout: str = "tp1", *extra: str
) -> dict[str, int]:
    gpus = parse_layout(layout).gpus
    assert main(["memory", model, "--engine", engine, "--layout", layout, "--gpus", str(gpus),
                 "--gpu", "h200-sxm", "--format", "json", *extra]) == 0  # fmt: skip
    layout_json: dict[str, int] = json.loads(capsys.readouterr().out)["layouts"][0]
    return layout_json


@pytest.mark.parametrize(
    ("model", "layout", "expected"),
    [
        # 36 layers x 2 (K, V) x 8 KV heads x 64 x 2 B = 73,728 B a token, sliding layers included
        ("gpt-oss-120b", "tp1", 73_728),
        # TP 2 splits the 8 KV heads: 36 x 2 x 4 x 64 x 2 = 36,864 B
        ("gpt-oss-120b", "tp2", 36_864),
        # 24 layers x 2 x 8 x 64 x 2 = 49,152 B
        ("gpt-oss-20b", "tp1", 49_152),
        # Gemma 3 27B: 62 layers x 2 x 16 KV heads x 128 x 2 B = 507,904 B
        ("gemma-3-27b", "tp1", 507_904),
    ],
    ids=["gpt-oss-120b-tp1", "gpt-oss-120b-tp2", "gpt-oss-20b-tp1", "gemma-3-27b-tp1"],
)
def test_trtllm_charges_a_sliding_layer_every_token(
    capsys: pytest.CaptureFixture[str], model: str, layout: str, expected: int
) -> None:
    assert _layout(capsys, model, "trtllm", layout)["kv_bytes_per_token_per_gpu"] == expected


def test_vllm_charges_the_same_gpt_oss_layers_less_than_trtllm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM at 131,072 tokens: 18 x 2,048 + 18 x 2,048 x (128 + 8,192) / 131,072 = 39,204 B, where
    # TensorRT-LLM charges all 36 layers: 73,728 B
    assert _layout(capsys, "gpt-oss-120b", "vllm")["kv_bytes_per_token_per_gpu"] == 39_204


def test_trtllms_gpt_oss_pool_does_not_depend_on_max_model_len(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # one window of max_seq_len for every layer: the bytes a token, and so the tokens of the pool,
    # are the same whatever the context (vLLM's window average falls as the context grows)
    short = _layout(capsys, "gpt-oss-120b", "trtllm", "tp1", "--max-model-len", "32768")
    long = _layout(capsys, "gpt-oss-120b", "trtllm", "tp1", "--max-model-len", "131072")
    assert short["kv_capacity_tokens_per_replica"] == long["kv_capacity_tokens_per_replica"]


def _memory(model: str, engine: str) -> LayoutMemory:
    dep = resolve(get_model(model), get_hardware("h200-sxm"), settings_of({"engine": engine}))
    return dep.memory(parse_layout("tp1"), 131_072)


def test_trtllms_pool_divides_its_allotment_by_every_layers_bytes() -> None:
    # kvCacheManager.cpp calculateMaxNumBlocks with one window (share 1.0): tokens =
    # floor(0.9 x free / 73,728), blocks = ceil(tokens / 32)
    stage = _memory("gpt-oss-120b", EngineName.TRTLLM.value).stages[0]
    used = sum(t.bytes for t in stage.terms if t.name != "fraction_reserve")
    allotted = int((stage.total_memory_bytes - used) * 0.9)
    assert stage.blocks == math.ceil(allotted // 73_728 / 32)


def test_the_simulator_charges_trtllm_every_layer_of_a_token() -> None:
    mem = _memory("gpt-oss-120b", EngineName.TRTLLM.value)
    kv = KVCapacity.of_layout(mem, get_hardware("h200-sxm"))
    assert (kv.kv_bytes_per_token, kv.tokens) == (73_728, mem.stages[0].blocks * 32)


@pytest.mark.parametrize(
    ("model", "engine", "expected"),
    [
        ("gpt-oss-120b", EngineName.TRTLLM, None),
        ("gpt-oss-120b", EngineName.VLLM, 4_096),
        ("gpt-oss-120b", EngineName.VLLM_V0, 4_096),
        ("llama-3.1-8b", EngineName.VLLM, None),
    ],
    ids=["trtllm-full", "vllm-window", "vllm-v0-window", "no-window"],
)
def test_only_vllm_averages_sliding_layers_at_the_context(
    model: str, engine: EngineName, expected: int | None
) -> None:
    assert sliding_context_tokens(get_model(model).arch, engine, 4_096) == expected


def test_a_window_vector_in_trtllms_yaml_is_named_as_sized_by_the_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    options = tmp_path / "extra.yml"
    options.write_text("kv_cache_config:\n  max_attention_window: [128, 131072]\n")
    command = f"trtllm-serve openai/gpt-oss-120b --tp_size 1 --extra_llm_api_options {options}"
    assert main(["memory", "--serve-command", command, "--gpu", "h200-sxm"]) == 0
    err = capsys.readouterr().err
    assert "kv_cache_config.max_attention_window: [128, 131072] (a KV pool per window size" in err
