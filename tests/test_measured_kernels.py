"""The measured-kernel step-time source (perf/measured_kernels.py, `--step-source kernels`).

Without the `kernels` extra: the refusals and the surrogate's arithmetic on hand-made tables.
With it (aiconfigurator-core installed): the surrogate against aiconfigurator's own calls.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.catalog.layout import Layout
from capcliff.cli import main
from capcliff.memory.budget import EngineName
from capcliff.perf import measured_kernels
from capcliff.perf.measured_kernels import (
    KernelSurrogate,
    KernelTarget,
    LayoutKey,
    MeasuredStepModel,
    kernel_surrogate,
    kernel_target,
)
from capcliff.perf.step_time import StepTimeModel
from capcliff.units import KVDType

SWEEP = ["sweep", "deepseek-r1", "--gpus", "8", "--layout", "tp8", "--engine", "sglang",
         "--isl", "1024", "--osl", "64", "--num-requests", "8", "--concurrency", "4"]  # fmt: skip


def _one_line_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()


# Refusals


def test_kernels_without_the_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(measured_kernels, "extra_installed", lambda: False)
    line = _one_line_error([*SWEEP, "--step-source", "kernels"], capsys)
    assert "--step-source" in line and "pip install '.[kernels]'" in line


def test_an_unknown_step_source_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error([*SWEEP, "--step-source", "measured"], capsys)
    assert "--step-source" in line and "'roofline'" in line and "'kernels'" in line


# The surrogate's arithmetic on hand-made tables (no aiconfigurator needed)

# decode: a(b) = 10 ms + 0.1 ms b, s(b) = 1 us per context token at every b (two grid batches);
# prefill: 1 ms + 0.01 ms per token + 1 ns per (token x attended key): bilinear, so exact.
HAND = KernelSurrogate(
    batches=(1.0, 101.0),
    decode_base_s=(10.1e-3, 20.1e-3),
    decode_per_context_s=(1e-6, 1e-6),
    prefill_tokens=(1.0, 1001.0),
    prefill_attended=(16.0, 1016.0),
    prefill_s=(
        (1e-3 + 1e-5 + 16e-9, 1e-3 + 1e-5 + 1016e-9),
        (1e-3 + 1001e-5 + 1001 * 16e-9, 1e-3 + 1001e-5 + 1001 * 1016e-9),
    ),
    label="hand",
)


def test_decode_interpolates_between_grid_batches() -> None:
    # b = 51: a = 10 + 0.1 x 51 = 15.1 ms; at c = 2,000: + 2,000 x 1 us = 17.1 ms
    assert HAND.decode_s(51, 2000) == pytest.approx(17.1e-3)


def test_prefill_is_exact_on_a_bilinear_table() -> None:
    # 501 tokens attending 516 keys: 1 + 5.01 + 501 x 516 x 1e-6 ms = 6.268516 ms
    assert HAND.prefill_at(501, 516) == pytest.approx(6.268516e-3)


def test_a_mixed_step_is_the_prefill_pass_plus_the_decoders_attention() -> None:
    # 7 decoders at 2,000 tokens each and a 512-token chunk after 1,024 (step_plan.step_load):
    # tokens 519, seqs 8, context 14,000 + 1,536 = 15,536,
    # pairs 14,000 + 512 x 1,024 + 512 x 513 / 2 = 669,616.
    # attended = (669,616 - 15,536 + 512) / 512 = 1,278.5; prefix = 1,278.5 - 256.5 = 1,022;
    # decode context = 15,536 - 512 - 1,022 = 14,002.
    # prefill pass over 519 tokens: 1 + 5.19 + 519 x 1,278.5 x 1e-6 ms = 6.8535415 ms;
    # decoders' attention: s x their mean context = 1 us x 14,002 / 7 = 2.000286 ms.
    expected = 6.8535415e-3 + 2.000286e-3
    assert HAND.mixed_s(519, 8, 15_536, 669_616) == pytest.approx(expected)


def _roofline(pp: int = 1) -> StepTimeModel:
    return StepTimeModel(
        pp=pp, weight_bytes=1e9, expert_bytes=0.0, expert_choice_fraction=0.0,
        kv_bytes_per_token=1e5, flops_per_token=1e9, flops_per_sequence=0.0,
        attention_flops_per_pair=1e4, bandwidth_bytes_per_s=1e12,
        peak_bandwidth_bytes_per_s=1e12, flops_per_s=1e14, step_overhead_s=5e-3,
    )  # fmt: skip


def _measured(pp: int = 1) -> MeasuredStepModel:
    return MeasuredStepModel(**{**_roofline(pp).__dict__, "step_overhead_s": 0.0}, surrogate=HAND)


def test_a_decode_run_sums_the_surrogates_steps() -> None:
    # 11 sequences, 11,000 tokens of context growing by 11 a step: step j is
    # 10 + 1.1 + (11,000 + 11 j) x 1e-3 / 11 ms = 12.1 + 0.001 j ms; 5 steps: 60.51 ms
    line = _measured().decode_line(11, 11_000)
    assert line.total_s(5) == pytest.approx(60.51e-3)
    assert _measured().step_time_s(11, 11, 11_000, 11_000) == pytest.approx(12.1e-3)


def test_pipeline_micro_batches_price_one_micro_batch_through_the_model() -> None:
    # PP 2, 20 sequences: 2 micro-batches of 10; a(10) = 11 ms; mean context 500: + 0.5 ms
    assert _measured(pp=2).step_time_s(20, 20, 10_000, 10_000) == pytest.approx(11.5e-3)


def test_calibration_terms_apply_to_the_measured_times() -> None:
    model = _measured()
    scaled = MeasuredStepModel(
        **{**model.__dict__, "variable_scale": 2.0, "step_overhead_s": 1e-3}
    )  # b = 1 at context 0: 2 x 10.1 + 1 ms
    assert scaled.step_time_s(1, 1, 0, 0) == pytest.approx(21.2e-3)


# With aiconfigurator installed

R1_TP8 = ("deepseek-ai/DeepSeek-R1", "h200-sxm", EngineName.SGLANG, Layout(tp=8, ep=8))
QWEN_TP2 = ("Qwen/Qwen3-32B", "h200-sxm", EngineName.VLLM, Layout(tp=2))
CASES = {"r1-tp8-ep8-sglang-h200": R1_TP8, "qwen3-32b-tp2-vllm-h200": QWEN_TP2}


@cache
def _pair(name: str) -> tuple[KernelSurrogate, Any]:
    """The surrogate and aiconfigurator's own compiled engine, built independently."""
    engine_module = pytest.importorskip("aiconfigurator_core.sdk.engine")
    repo, gpu, engine, layout = CASES[name]
    target = kernel_target(hf_repo=repo, hardware_id=gpu, engine=engine, kv_dtype=KVDType.BF16,
                           weights=None, max_context=131072)  # fmt: skip
    handle = engine_module.EngineHandle.compile(
        repo, target.system, target.backend, tp_size=layout.tp, moe_tp_size=layout.moe_tp,
        moe_ep_size=layout.ep, kvcache_quant_mode="bfloat16", fmha_quant_mode="bfloat16",
    )  # fmt: skip
    return kernel_surrogate(target, LayoutKey.of(layout)), handle


# Decode: one affine line in context per batch (the simulator's DecodeLine); aiconfigurator's
# step bends by up to ~5 % over 1k-16k contexts, so 6 % at grid batches and between them.
DECODE_TOLERANCE = 0.06
# Prefill: bilinear on the grid; aiconfigurator's own surface is uneven between grid points
# (up to ~13 % for gpt-oss-120b), so 3 % at grid points, 10 % between for these two models.
PREFILL_GRID_TOLERANCE = 0.03
PREFILL_BETWEEN_TOLERANCE = 0.10


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("batch", [1, 4, 16, 64, 256, 5, 40, 300])
@pytest.mark.parametrize("context", [1024, 4096, 16384, 3000])
def test_decode_matches_aiconfigurator(name: str, batch: int, context: int) -> None:
    surrogate, handle = _pair(name)
    # decode_step_latency(b, isl, osl=0) prices context isl + 1 (sdk/rust_engine_step.py)
    direct_s = handle.decode_step_latency(batch, context - 1, 0) * 1e-3
    assert surrogate.decode_s(batch, context) == pytest.approx(direct_s, rel=DECODE_TOLERANCE)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize(
    ("tokens", "prefix", "tolerance"),
    [(1024, 0, PREFILL_GRID_TOLERANCE), (4096, 0, PREFILL_GRID_TOLERANCE),
     (2048, 3072, PREFILL_GRID_TOLERANCE),  # attended 3,072 + 1,024.5: the grid's 4,096
     (1500, 0, PREFILL_BETWEEN_TOLERANCE), (3000, 5000, PREFILL_BETWEEN_TOLERANCE)],
)  # fmt: skip
def test_a_prefill_chunk_matches_aiconfigurator(
    name: str, tokens: int, prefix: int, tolerance: float
) -> None:
    surrogate, handle = _pair(name)
    direct_s = handle.predict_prefill_latency(1, tokens + prefix, prefix) * 1e-3
    attended = prefix + (tokens + 1) / 2  # mean keys per token of a chunk after `prefix`
    assert surrogate.prefill_at(tokens, attended) == pytest.approx(direct_s, rel=tolerance)


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 4096), more=st.integers(0, 512),
    context=st.integers(0, 131072), longer=st.integers(0, 8192),
)  # fmt: skip
def test_decode_never_gets_faster_with_more_work(
    batch: int, more: int, context: int, longer: int
) -> None:
    surrogate, _ = _pair("r1-tp8-ep8-sglang-h200")
    now = surrogate.decode_s(batch, context)
    assert surrogate.decode_s(batch + more, context) >= now
    assert surrogate.decode_s(batch, context + longer) >= now


def test_sweep_says_the_kernels_priced_its_steps(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("aiconfigurator_core")
    assert main([*SWEEP, "--gpu", "h200-sxm", "--step-source", "kernels"]) == 0
    out = capsys.readouterr().out
    assert "step times: measured kernels: aiconfigurator-core" in out
    assert "sglang" in out and "h200_sxm" in out


def test_an_unsupported_gpu_names_the_supported_ones(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("aiconfigurator_core")
    line = _one_line_error([*SWEEP, "--gpu", "mi300x", "--step-source", "kernels"], capsys)
    assert "'mi300x'" in line and "h200-sxm" in line


def test_an_unmapped_model_names_the_supported_ones(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("aiconfigurator_core")
    args = ["sweep", "deepseek-r1-distill-qwen-32b", "--isl", "100", "--osl", "10",
            "--num-requests", "4", "--step-source", "kernels"]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert "DeepSeek-R1-Distill-Qwen-32B" in line and "qwen3-32b," in line


def test_a_target_keeps_the_kv_dtype() -> None:
    pytest.importorskip("aiconfigurator_core")
    target = kernel_target(hf_repo="Qwen/Qwen3-32B", hardware_id="h100-sxm",
                           engine=EngineName.TRTLLM, kv_dtype=KVDType.FP8, weights=None,
                           max_context=40960)  # fmt: skip
    assert target == KernelTarget("Qwen/Qwen3-32B", "h100_sxm", "trtllm", "fp8", max_context=40960)
