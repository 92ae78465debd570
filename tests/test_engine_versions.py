"""Release-specific step-time terms: SGLang < 0.4.8 DP attention (overlap off, idle ranks eager)
and SGLang < 0.4.6's Triton MLA extend (prefill attention at 6 % of BF16 peak)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.perf.profiles import (
    PROFILES,
    dp_eager_pass_s,
    dp_host_overhead_s,
    engine_profile,
    profile_label,
)
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.releases import parse_version
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType
from tests.conftest import arch_of
from tests.simtools import fixed_batch, toy_model

OLD = "0.4.3.post2"  # the release of the dstack SGLang DP-attention rows (B02-B06)


def test_releases_parse_from_the_ways_benchmarks_name_them() -> None:
    assert parse_version("sglang 0.4.3.post2") == (0, 4, 3)
    assert parse_version("lmsysorg/sglang:v0.5.12-cu130") == (0, 5, 12)
    assert parse_version("0.7") == (0, 7, 0)
    with pytest.raises(InputError, match="engine_version"):
        parse_version("latest")


def test_sglang_before_0_4_8_gets_the_dp_attention_profile() -> None:
    old = engine_profile(EngineName.SGLANG, OLD)
    assert old.dp_eager_op_s == pytest.approx(15e-6)
    assert old.dp_attention_host_overhead_s == pytest.approx(2e-3)
    # PR #7269 landed for 0.4.8: that release and later, and no release given, get the latest
    for version in ("0.5.12", None):
        assert engine_profile(EngineName.SGLANG, version) is PROFILES[EngineName.SGLANG]
    # 0.4.8 - 0.5.5: the same rules without aiter's MLA decode floor (test_aiter_mla_decode.py)
    first = engine_profile(EngineName.SGLANG, "0.4.8")
    assert first.label == PROFILES[EngineName.SGLANG].label
    assert first.dp_attention_host_overhead_s is None and first.dp_eager_op_s == 0.0
    # V0 outside 0.7.1-0.7.x (its absorbed MLA decode, test_mla_absorbed.py) keeps one profile
    for version in ("0.6.3", "0.7.0", "0.8.0", "0.10.1"):
        assert engine_profile(EngineName.VLLM_V0, version) is PROFILES[EngineName.VLLM_V0]
    assert "0.4.0 - 0.4.3" in profile_label(EngineName.SGLANG, {}, OLD)
    # 0.4.4 and 0.4.5 keep the Triton MLA extend figure but not the 0.4.0-0.4.3 kernel cost
    mid = engine_profile(EngineName.SGLANG, "0.4.5")
    assert mid.mla_extend_efficiency == pytest.approx(0.06)
    assert mid.mla_kernel_floor_s is None
    # 0.4.6 and 0.4.7: the DP-attention rules stay, the Triton MLA extend figure does not
    later = engine_profile(EngineName.SGLANG, "0.4.7")
    assert later.dp_eager_op_s == pytest.approx(15e-6)
    assert later.mla_extend_efficiency is None
    assert "0.4.6 - 0.4.7" in later.label


def test_sglang_0_4_3_deepseek_decode_kernels_cost_13_8_us_each() -> None:
    # R1 at TP 8: 61 layers x 33 kernels x 13.8 us = 27.7794 ms per step (host time 0: overlap
    # scheduler on without DP attention); dpa8: 61 x 31 kernels (no TP all-reduces at attention
    # TP 1) x 13.8 us = 26.0958 ms + 2 ms host time = 28.0958 ms. A GQA model keeps 1 us.
    model = get_model("deepseek-r1")
    kwargs = {"scheme": WeightScheme.as_shipped(model.arch), "kv_dtype": KVDType.BF16}
    hw, old = get_hardware("h200-sxm"), engine_profile(EngineName.SGLANG, OLD)
    tp8 = step_time_model(model.arch, hw, parse_layout("tp8"), profile=old, **kwargs)
    assert tp8.step_overhead_s == pytest.approx(27.7794e-3)
    dpa8 = step_time_model(model.arch, hw, parse_layout("dpa8"), profile=old, **kwargs)
    assert dpa8.step_overhead_s == pytest.approx(28.0958e-3)
    llama = get_model("llama-3.1-8b")
    gqa = step_time_model(
        llama.arch, hw, parse_layout("tp1"), profile=old,
        scheme=WeightScheme.as_shipped(llama.arch), kv_dtype=KVDType.BF16,
    )  # fmt: skip
    assert gqa.step_overhead_s == pytest.approx(32 * 10 * 1e-6)  # 32 layers x 10 kernels x 1 us
    # overridable by name, like every profile term
    faster = old.with_overrides({"mla_kernel_floor_s": 1e-6})
    assert step_time_model(
        model.arch, hw, parse_layout("tp8"), profile=faster, **kwargs
    ).step_overhead_s == pytest.approx(61 * 33 * 1e-6)


def test_a_prefill_prices_its_attention_at_the_extend_rate() -> None:
    # toy: 1 GB weights at 1 TB/s, 10 GFLOP/token + 0.1 GFLOP/seq at 100 TFLOP/s, 1 MFLOP/pair,
    # 1 ms overhead. A 1,000-token prefill with 500,000 pairs and an extend rate of 10 TFLOP/s:
    # GEMMs (1e13 + 1e8) / 1e14 = 0.100001 s, attention 5e11 / 1e13 = 0.05 s, memory 1.1 ms:
    # 0.150001 + 0.001 = 0.151001 s (without the extend rate 0.105001 + 0.001 = 0.106001 s)
    plain = toy_model()
    slow = dataclasses.replace(plain, extend_attention_flops_per_s=1e13)
    prefill = (1000, 1, 1000, 500_000)
    assert slow.step_time_s(*prefill) == pytest.approx(0.151001)
    assert plain.step_time_s(*prefill) == pytest.approx(0.106001)
    # a decode step (one token per sequence) keeps the decode kernels' figures, bit for bit
    decode = (4, 4, 4000, 4000)
    assert slow.step_time_s(*decode) == plain.step_time_s(*decode)


def test_sglang_0_4_3_prices_r1_prefill_attention_at_6_percent_of_bf16_peak() -> None:
    # H200 dense BF16 989.4 TFLOP/s x 0.06 = 59.364 TFLOP/s, on TP and DP-attention layouts alike
    # (the Triton backend serves both); 0.4.6 and later leave it to the model's MFU (None)
    model = get_model("deepseek-r1")
    kwargs = {"scheme": WeightScheme.as_shipped(model.arch), "kv_dtype": KVDType.BF16}
    hw = get_hardware("h200-sxm")
    for layout in ("dpa8", "tp8"):
        old = step_time_model(
            model.arch, hw, parse_layout(layout), profile=engine_profile(EngineName.SGLANG, OLD),
            **kwargs,
        )  # fmt: skip
        assert old.extend_attention_flops_per_s == pytest.approx(59.364e12)
    new = step_time_model(
        model.arch, hw, parse_layout("dpa8"), profile=engine_profile(EngineName.SGLANG, "0.4.6"),
        **kwargs,
    )  # fmt: skip
    assert new.extend_attention_flops_per_s is None
    # a GQA model has no MLA extend kernel: the term does not apply
    llama = get_model("llama-3.1-8b")
    gqa = step_time_model(
        llama.arch, hw, parse_layout("tp1"), profile=engine_profile(EngineName.SGLANG, OLD),
        scheme=WeightScheme.as_shipped(llama.arch), kv_dtype=KVDType.BF16,
    )  # fmt: skip
    assert gqa.extend_attention_flops_per_s is None


def test_the_release_is_a_setting_with_a_one_line_error() -> None:
    assert settings_of({"engine_version": "0.4.3"}).engine_version == "0.4.3"
    with pytest.raises(InputError, match=r"^--engine-version: .*release like 0\.4\.3"):
        settings_of({"engine_version": "latest"})


def test_an_eager_r1_pass_under_dp_attention() -> None:
    # 61 layers x 33 kernels (10 + gather and post-MoE all-reduce 2 + MLA 6 + MoE 7 + FP8 8)
    # x 15 us = 2,013 x 15 us = 30.195 ms
    old = engine_profile(EngineName.SGLANG, OLD)
    r1 = arch_of("deepseek-r1")
    assert dp_eager_pass_s(old, r1, parse_layout("dpa8")) == pytest.approx(30.195e-3)
    # without attention DP, or in a release that graphs idle ranks, no floor
    assert dp_eager_pass_s(old, r1, parse_layout("tp8")) == 0.0
    assert dp_eager_pass_s(engine_profile(EngineName.SGLANG), r1, parse_layout("dpa8")) == 0.0


def test_the_overlap_scheduler_is_off_only_under_dp_attention() -> None:
    old = engine_profile(EngineName.SGLANG, OLD)
    assert dp_host_overhead_s(old, parse_layout("dpa8")) == pytest.approx(2e-3)
    assert dp_host_overhead_s(old, parse_layout("tp8")) == 0.0


def test_the_r1_step_model_carries_the_floor_unless_calibrated() -> None:
    model = get_model("deepseek-r1")
    kwargs = {"scheme": WeightScheme.as_shipped(model.arch), "kv_dtype": KVDType.BF16}
    hw, dpa8 = get_hardware("h200-sxm"), parse_layout("dpa8")
    old = engine_profile(EngineName.SGLANG, OLD)
    assert step_time_model(
        model.arch, hw, dpa8, profile=old, **kwargs
    ).eager_floor_s == pytest.approx(30.195e-3)
    fitted = step_time_model(model.arch, hw, dpa8, profile=old, fitted={"scale": 1.5}, **kwargs)
    assert fitted.eager_floor_s == 0.0


def _floored(floor_s: float, ranks: int) -> StepTimeModel:
    group = MoEGroup(
        ranks=ranks,
        expert_bytes=1e6,
        expert_choice_fraction=0.25,
        expert_flops_per_token=1e6,
        moe_layers=1,
        exchange=ExchangeCost(1e-6, 1e-9),
    )
    return dataclasses.replace(toy_model(), moe=group, eager_floor_s=floor_s)


def test_a_lockstep_step_with_an_idle_or_prefilling_rank_lasts_the_eager_pass() -> None:
    model = _floored(1.0, ranks=2)
    decode = (1, 1, 100, 100)  # toy step ~ 2 ms: far under the 1 s floor
    assert model.lockstep_step_time_s([decode], ranks=2) == 1.0  # one rank idle
    assert model.lockstep_step_time_s([decode, decode], ranks=2) < 0.01  # all decode: graphs
    assert model.lockstep_step_time_s([decode, (40, 1, 40, 820)], ranks=2) == 1.0  # a prefill


def test_one_request_on_two_ranks_pays_the_floor_every_step() -> None:
    # one request (40-token prompt, 30 output tokens): 1 prefill step + 29 decode steps, rank 1
    # idle throughout, every step at the 1 s floor: 30 s (both the exact and fast-forward paths)
    model = _floored(1.0, ranks=2)
    result = simulate(fixed_batch(1, prompt=40, output=30), model, *_roomy(), dp=2)
    assert result.makespan_s == pytest.approx(30.0)
    # two requests, one per rank: only the joint prefill step is eager (1 s), decode is graphed
    both = simulate(fixed_batch(2, prompt=40, output=30), model, *_roomy(), dp=2)
    assert 1.0 < both.makespan_s < 2.0


def _roomy() -> tuple[KVCapacity, SimConfig]:
    """A KV cache and batch limits these workloads never reach."""
    return KVCapacity(blocks=1000, block_size=16), SimConfig(max_num_batched_tokens=1024)


@given(
    seqs=st.integers(1, 64),
    extra=st.integers(0, 4096),
    context=st.integers(0, 200_000),
    rate=st.floats(1e11, 1e15),
)
@settings(max_examples=60, deadline=None)
def test_the_extend_rate_only_touches_prefill_steps(
    seqs: int, extra: int, context: int, rate: float
) -> None:
    # decode steps (one token per sequence) are bit-for-bit unchanged; a step that prefills is
    # never faster with an extend kernel slower than the model's FLOP rate (1e14 in toy_model)
    plain = toy_model()
    with_rate = dataclasses.replace(plain, extend_attention_flops_per_s=rate)
    pairs = context + extra * (extra + 1) // 2
    decode = (seqs, seqs, context, context)
    assert with_rate.step_time_s(*decode) == plain.step_time_s(*decode)
    prefill = (seqs + extra, seqs, context + extra, pairs)
    if extra and rate <= plain.flops_per_s:
        assert with_rate.step_time_s(*prefill) >= plain.step_time_s(*prefill) * (1 - 1e-12)


@pytest.mark.parametrize(
    ("engine", "version"),
    [("vllm", "0.0.1"), ("vllm", "0.6.3"), ("sglang", "0.0.9"), ("trtllm", "0.0.1")],
)
def test_a_release_before_the_engines_first_is_refused(engine: str, version: str) -> None:
    # vLLM's V1 engine first shipped in 0.7.0; no engine shipped a 0.0.x release. Before this, the
    # oldest modelled profile was used without a word.
    with pytest.raises(InputError, match=r"^engine_version: .* older than the earliest"):
        engine_profile(EngineName(engine), version)


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.7.0"), ("vllm-v0", "0.6.3")])
def test_the_first_releases_are_accepted(engine: str, version: str) -> None:
    assert engine_profile(EngineName(engine), version) is not None


def test_a_containers_year_month_tag_is_no_engine_release() -> None:
    # NGC's tritonserver:25.01-trtllm-python-py3 ships a TensorRT-LLM 0.x; read as release 25.1 it
    # was past every rule's newest release (h-badin26, left)
    from capcliff.errors import InputError
    from capcliff.releases import parse_version

    for tag in ("25.01-trtllm-python-py3", "24.12"):
        with pytest.raises(InputError, match=r"YY\.MM tag"):
            parse_version(tag)
    assert parse_version("1.0.0rc3") == (1, 0, 0)
    assert parse_version("0.17.0") == (0, 17, 0)
