"""Speculative decoding: the acceptance model, the verification step's roofline, the draft's
memory, the engine flags, and the simulator with speculation on and off."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.flags import sglang_speculative_flags, vllm_speculative_flags
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.draft import SpecMethod, draft_memory, draft_model
from capcliff.memory.weights import WeightScheme
from capcliff.perf.communication import Communication
from capcliff.perf.moe_tables import MoETable
from capcliff.perf.op_curves import OpCurve
from capcliff.perf.speculation import (
    Speculation,
    acceptance,
    expected_tokens_per_step,
    parse_speculative,
)
from capcliff.perf.step_time import SpecStep, StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType
from tests.simtools import fixed_batch


def test_expected_tokens_from_per_position_rates() -> None:
    # 1 + 0.8 + 0.8*0.6 + 0.8*0.6*0.4 = 1 + 0.8 + 0.48 + 0.192 = 2.472
    assert expected_tokens_per_step((0.8, 0.6, 0.4)) == pytest.approx(2.472)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=16))
def test_accepted_tokens_per_step_stay_within_one_and_k_plus_one(rates: list[float]) -> None:
    expected = expected_tokens_per_step(tuple(rates))
    assert 1.0 <= expected <= len(rates) + 1 + 1e-9


def test_mtp_default_acceptance_is_the_chat_prompt_measurement() -> None:
    # a = 0.75, 0.75*0.86 = 0.645, 0.645*0.86 = 0.5547; E = 1 + 0.75 + 0.75*0.645
    # + 0.75*0.645*0.5547 = 1 + 0.75 + 0.48375 + 0.26834 = 2.50209: InferenceX PR #649's ~2.50
    accepted = acceptance(Speculation(SpecMethod.MTP, 3))
    assert accepted.tokens_per_step == pytest.approx(2.50209, abs=1e-4)


def test_mtp_default_with_one_draft_token_is_sglang_issue_8092s_accept_length() -> None:
    # K = 1: E = 1 + 0.75 = 1.75, the "accept length is 1.75" SGLang issue #8092 logs
    assert acceptance(Speculation(SpecMethod.MTP, 1)).tokens_per_step == pytest.approx(1.75)


@pytest.mark.parametrize("text", ["mtp", "mtp:0", "mtp:x", "medusa:3", "ngram:3:draft", "mtp:17"])
def test_bad_speculative_settings_are_one_line_input_errors(text: str) -> None:
    with pytest.raises(InputError, match=r"^speculative: "):
        parse_speculative(text)


def test_accept_length_past_k_plus_one_is_refused() -> None:
    with pytest.raises(InputError, match=r"spec_accept_length: must be in \[1, 4\]"):
        acceptance(Speculation(SpecMethod.MTP, 3), length=4.5)


def test_ngram_has_no_default_acceptance() -> None:
    with pytest.raises(InputError, match="ngram has no published default"):
        acceptance(Speculation(SpecMethod.NGRAM, 3))


def _dense_model() -> StepTimeModel:
    """A dense one-GPU model with round numbers: 1 GB of weights at 1 TB/s, 1 TFLOP/s."""
    return StepTimeModel(
        pp=1, weight_bytes=1e9, expert_bytes=0.0, expert_choice_fraction=0.0,
        kv_bytes_per_token=1e5, flops_per_token=2e9, flops_per_sequence=1e8,
        attention_flops_per_pair=1e5, bandwidth_bytes_per_s=1e12, peak_bandwidth_bytes_per_s=1e12,
        flops_per_s=1e12, step_overhead_s=1e-3, comm=Communication(),
    )  # fmt: skip


def test_verification_step_time_follows_the_roofline() -> None:
    # n-gram K = 3, E = 2 tokens per step; 4 sequences reading C = 8,000 tokens of context.
    # memory: 1e9/1e12 + 1e5 * 8,000 / 1e12 = 1e-3 + 8e-4 = 1.8e-3 s (weights and KV once)
    # compute: (2e9 + 1e8) * 4 seqs * 4 query tokens / 1e12 + 1e5 * 4 * 8,000 / 1e12
    #        = 3.36e-2 + 3.2e-3 = 3.68e-2 s (K + 1 = 4 times the FLOPs): compute-bound
    # step: (3.68e-2 + 1e-3 overhead) / 2 = 1.89e-2 s per generated token
    model = replace(_dense_model(), spec=SpecStep(k=3, tokens_per_step=2.0))
    assert model.step_time_s(4, 4, 8000, 8000) == pytest.approx(1.89e-2)


def test_speculation_pays_when_memory_bound_and_loses_when_compute_bound() -> None:
    plain = _dense_model()
    spec = replace(plain, spec=SpecStep(k=3, tokens_per_step=2.0))
    # 1 sequence, 1,000 tokens: plain max(1.1e-3, 2.2e-3) + 1e-3 = 3.2e-3 s; speculative
    # max(1.1e-3, 8.4e-3 + 4e-4) + 1e-3 = 9.8e-3 / 2 = 4.9e-3 s: with these FLOPs even one
    # sequence is compute-bound, so speculation loses ...
    assert spec.step_time_s(1, 1, 1000, 1000) > plain.step_time_s(1, 1, 1000, 1000)
    # ... and with 100x cheaper FLOPs (memory-bound) it pays at low batch
    cheap = replace(plain, flops_per_s=1e14)
    cheap_spec = replace(cheap, spec=SpecStep(k=3, tokens_per_step=2.0))
    assert cheap_spec.step_time_s(1, 1, 1000, 1000) < cheap.step_time_s(1, 1, 1000, 1000)
    # 4,096 short sequences (40,960 tokens of context): plain compute 2.1e9 * 4,096 / 1e14 =
    # 8.6e-2 s > memory 1e-3 + 4.1e-3 s; speculative compute 4x that, / 2: it loses
    assert cheap_spec.step_time_s(4096, 4096, 40_960, 40_960) > cheap.step_time_s(
        4096, 4096, 40_960, 40_960
    )


def test_speculative_step_time_equals_its_decode_line() -> None:
    draft = replace(_dense_model(), weight_bytes=1e7, flops_per_token=2e7, step_overhead_s=0.0)
    model = replace(_dense_model(), spec=SpecStep(k=2, tokens_per_step=2.2, draft=draft))
    line = model.decode_line(8, 16_000)
    assert model.step_time_s(8, 8, 16_000, 16_000) == line.step_s(0)
    assert model.hbm_bytes(8, 8, 16_000) == line.bytes0


def test_mtp_draft_of_deepseek_r1_is_one_moe_layer_and_its_latent_kv() -> None:
    arch = get_model("deepseek-r1").arch
    draft = draft_model(arch, SpecMethod.MTP)
    assert draft is not None
    memory = draft_memory(draft, Layout(tp=8), WeightScheme.as_shipped(arch), KVDType.BF16)
    # KV: one MLA layer, (512 latent + 64 rope) x 2 B = 1,152 B per token on every TP rank
    assert memory.kv_bytes_per_token == 1152
    # weights: 256 experts x 3 x 7,168 x 2,048 fp8 = 11.27 GB over 8 GPUs = 1.41 GB, plus
    # attention, shared expert and eh_proj (2 x 7,168^2 bf16 = 0.21 GB): 1.5 to 1.8 GB
    assert 1.5e9 < memory.weights_bytes < 1.8e9


def test_an_eagle_drafts_pass_adds_its_fusion_projection_to_its_own_layer() -> None:
    # EAGLE-3 on Llama-3.1-8B fuses 3 hidden states: fc is 3 x 4,096 x 4,096 = 50,331,648
    # weights in bf16, so each draft pass reads 100,663,296 B more than the draft layer alone and
    # does 2 x 50,331,648 = 100,663,296 FLOPs more per token
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.evaluate.replica_models import deployment_profile, replica_models

    settings = settings_of({"speculative": "eagle:3"})
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    assert dep.draft is not None and dep.scheme.native.value == "bf16"
    _, steps = replica_models(dep, dep.memory(Layout(), 8192), {})
    assert steps.spec is not None and steps.spec.draft is not None
    profile, fitted = deployment_profile(dep, {})
    layer = step_time_model(
        dep.draft.arch, dep.hardware, Layout(), scheme=dep.scheme, kv_dtype=dep.kv_dtype,
        profile=profile, fitted=fitted,
    )  # fmt: skip
    assert steps.spec.draft.weight_bytes - layer.weight_bytes == 100_663_296
    assert steps.spec.draft.flops_per_token - layer.flops_per_token == 100_663_296


def test_ngram_draft_has_no_memory() -> None:
    arch = get_model("llama-3.1-8b").arch
    assert draft_model(arch, SpecMethod.NGRAM) is None


def test_engine_flags_for_mtp() -> None:
    assert vllm_speculative_flags(("mtp", 3, None)) == [
        "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 3}',
    ]
    assert sglang_speculative_flags(("mtp", 3, None)) == [
        "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
    ]  # fmt: skip


def _sim(spec: SpecStep | None):  # type: ignore[no-untyped-def]
    arch = get_model("deepseek-r1-distill-llama-8b").arch
    model = step_time_model(
        arch, get_hardware("h200-sxm"), Layout(), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16,
    )  # fmt: skip
    if spec is not None:
        model = replace(model, spec=spec)
    capacity = KVCapacity(blocks=4000, block_size=16)
    config = SimConfig(max_num_seqs=16, max_num_batched_tokens=8192)
    return simulate(fixed_batch(40, 100, 300), model, capacity, config)


@given(st.floats(1.0, 4.0))
def test_speculation_preserves_output_lengths(tokens_per_step: float) -> None:
    plain = _sim(None)
    spec = _sim(SpecStep(k=3, tokens_per_step=tokens_per_step))
    assert np.array_equal(spec.output_tokens, plain.output_tokens)


def test_more_accepted_tokens_never_slow_decoding() -> None:
    slow = _sim(SpecStep(k=3, tokens_per_step=1.5)).makespan_s
    fast = _sim(SpecStep(k=3, tokens_per_step=3.5)).makespan_s
    assert fast < slow


def test_trtllm_speculative_config_as_its_llm_api_names_it() -> None:
    # tensorrt_llm.llmapi: MTPDecodingConfig(num_nextn_predict_layers=K), Eagle3DecodingConfig(
    # max_draft_len=K, speculative_model=...), NGramDecodingConfig(max_draft_len=K).
    from capcliff.analysis.flags import trtllm_speculative_config

    assert trtllm_speculative_config(("mtp", 3, None)) == (
        "speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}"
    )
    assert trtllm_speculative_config(("eagle", 2, "org/draft")) == (
        "speculative_config: {decoding_type: Eagle3, max_draft_len: 2, "
        "speculative_model: org/draft}"
    )
    assert trtllm_speculative_config(("ngram", 4, None)) == (
        "speculative_config: {decoding_type: NGram, max_draft_len: 4}"
    )
    assert trtllm_speculative_config(None) is None


# The speculative step's host time and attention as a plain decode step's (perf/step_time.py
# `_spec_coefficients`, `_multi_token_terms`). The figures extend
# test_verification_step_time_follows_the_roofline: n-gram K = 3, E = 2, 4 sequences reading
# 8,000 tokens of context, GPU work 3.68e-2 s per speculative step, step overhead 1e-3 s.


def test_a_serial_engine_adds_the_host_time_per_sequence_once_per_speculative_step() -> None:
    # host 1e-4 s per scheduled sequence, no overlap: (3.68e-2 + 1e-3 + 4 x 1e-4) / 2 = 1.91e-2
    model = replace(_dense_model(), host_per_seq_s=1e-4, spec=SpecStep(k=3, tokens_per_step=2.0))
    assert model.step_time_s(4, 4, 8000, 8000) == pytest.approx(1.91e-2)


def test_an_overlap_scheduler_hides_the_host_time_behind_the_speculative_step() -> None:
    # the step overhead 1e-3 s is the host's fixed time; step = max(GPU, host) / E
    overlapped = replace(
        _dense_model(), overlap_schedule=True, host_fixed_s=1e-3,
        spec=SpecStep(k=3, tokens_per_step=2.0),
    )  # fmt: skip
    # host 1e-3 + 4 x 1e-4 = 1.4e-3 s < GPU 3.68e-2 s: 3.68e-2 / 2 = 1.84e-2
    small = replace(overlapped, host_per_seq_s=1e-4)
    assert small.step_time_s(4, 4, 8000, 8000) == pytest.approx(1.84e-2)
    # host 1e-3 + 4 x 1e-2 = 4.1e-2 s > GPU: 4.1e-2 / 2 = 2.05e-2
    large = replace(overlapped, host_per_seq_s=1e-2)
    assert large.step_time_s(4, 4, 8000, 8000) == pytest.approx(2.05e-2)
    assert large.decode_line(4, 8000).step_s(0) == large.step_time_s(4, 4, 8000, 8000)


def test_the_verification_reads_kv_through_the_decode_attention_curve() -> None:
    # 10 attention calls of 1e-5 s each, KV at half of the 1 TB/s peak; FLOPs 100x cheaper so
    # the pass is memory-bound. memory: 1e9 / 1e12 + 10 x 1e-5 + 1e5 x 8,000 / 5e11
    # = 1e-3 + 1e-4 + 1.6e-3 = 2.7e-3 s; compute: 2.1e9 x 16 / 1e14 + 1e5 x 32,000 / 1e14
    # = 3.68e-4 s. Speculative: (2.7e-3 + 1e-3) / 2 = 1.85e-3 s per token; a plain step reads
    # the same bytes and pays the same floor: 2.7e-3 + 1e-3 = 3.7e-3 s = 2 x 1.85e-3
    curve = OpCurve((1.0, 1000.0), (1e-5, 1e-5), (0.5, 0.5), "hand-made")
    plain = replace(_dense_model(), flops_per_s=1e14, attention_curve=curve, attention_calls=10)
    spec = replace(plain, spec=SpecStep(k=3, tokens_per_step=2.0))
    assert spec.step_time_s(4, 4, 8000, 8000) == pytest.approx(1.85e-3)
    assert plain.step_time_s(4, 4, 8000, 8000) == pytest.approx(3.7e-3)


def test_each_pass_prices_its_moe_layers_at_the_table_time_for_its_own_tokens() -> None:
    # A measured MoE table (perf/moe_tables.py) of 1e-4 s per layer at 4 tokens, 2e-4 s at 16;
    # the target has 10 MoE layers, the MTP draft 1; mtp:3 (q = 4), E = 2, 4 sequences, no
    # context, FLOPs negligible (1e16 FLOP/s), so every pass is its weights + MoE layers.
    # verification over 16 tokens: 1e9 / 1e12 + 10 x 2e-4 = 3e-3 s
    # draft extend over the 16 verified slots: 1e7 / 1e12 + 1 x 2e-4 = 2.1e-4 s
    # 2 draft decodes over 4 tokens: 1e7 / 1e12 + 1 x 1e-4 = 1.1e-4 s each
    # (3e-3 + 2.1e-4 + 2.2e-4 + 1e-3 step overhead) / 2 = 2.215e-3 s per token; plain decoding
    # over 4 tokens: 1e-3 + 10 x 1e-4 + 1e-3 = 3e-3 s
    table = MoETable((4.0, 16.0), (1e-4, 2e-4), "hand-made")
    plain = replace(
        _dense_model(), flops_per_s=1e16, expert_bytes=1.0, moe_layers=10, moe_table=table
    )
    draft = replace(plain, weight_bytes=1e7, flops_per_token=2e7, step_overhead_s=0.0, moe_layers=1)
    spec = replace(plain, spec=SpecStep(k=3, tokens_per_step=2.0, draft=draft))
    assert spec.step_time_s(4, 4, 0, 0) == pytest.approx(2.215e-3)
    assert plain.step_time_s(4, 4, 0, 0) == pytest.approx(3e-3)
