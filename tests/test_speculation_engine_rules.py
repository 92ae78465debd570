"""Speculative decoding as the engines run it: the draft's extend pass over the verified slots
(SGLang eagle_worker.py, TensorRT-LLM MTPEagleWorker), SGLang's cap on running requests (in
sweeps too) and the host time of SGLang's non-overlapped speculative worker."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.perf.step_time import SpecStep, StepTimeModel
from tests.test_speculation import _dense_model


def _target() -> StepTimeModel:
    """Dense, one GPU, round numbers (tests/test_speculation.py): 1 GB of weights at 1 TB/s,
    2 GFLOP per token, 0.1 GFLOP of lm_head per logit row, at 1 TFLOP/s; 1 ms step overhead."""
    return _dense_model()


def _draft() -> StepTimeModel:
    """A draft a hundredth of the target: 10 MB, 20 MFLOP per token, 0.1 GFLOP per logit row
    (the shared lm_head), no KV of its own, no step overhead of its own."""
    return replace(
        _target(), weight_bytes=1e7, flops_per_token=2e7, kv_bytes_per_token=0.0,
        attention_flops_per_pair=0.0, step_overhead_s=0.0,
    )  # fmt: skip


def test_the_draft_extends_over_the_verified_slots_then_decodes_k_minus_one_tokens() -> None:
    # K = 2, E = 2 tokens per step, 4 sequences with no context (attention and KV drop out).
    # Compute-bound throughout, so each pass's FLOPs add:
    # verification, q = 3 tokens each with logits: (2e9 + 1e8) x 12 = 2.52e10 FLOP
    # draft extend over the 12 slots, logits for 4:  2e7 x 12 + 1e8 x 4 = 6.4e8 FLOP
    # one draft decode pass of 4 tokens:             (2e7 + 1e8) x 4   = 4.8e8 FLOP
    # sum 2.632e10 FLOP at 1e12 FLOP/s = 2.632e-2 s (> 1e-3 + 1e-5 + 1e-5 s of weights), plus
    # the target's 1e-3 s overhead: 2.732e-2 s per speculative step, / E = 1.366e-2 s per token.
    model = replace(_target(), spec=SpecStep(k=2, tokens_per_step=2.0, draft=_draft()))
    assert model.step_time_s(4, 4, 0, 0) == pytest.approx(1.366e-2)


def test_k_single_token_draft_passes_would_cost_less_than_the_extend() -> None:
    # the previous pricing (K = 2 draft passes of one token each): 2 x 4.8e8 = 9.6e8 FLOP, where
    # the extend and one pass take 6.4e8 + 4.8e8 = 1.12e9: the extend's 8 extra token slots
    # (8 x 2e7 = 1.6e8 FLOP) are the difference.
    model = replace(_target(), spec=SpecStep(k=2, tokens_per_step=2.0, draft=_draft()))
    single_passes = (2.52e10 + 9.6e8) / 1e12 + 1e-3
    assert model.step_time_s(4, 4, 0, 0) * 2.0 - single_passes == pytest.approx(1.6e8 / 1e12)


def _deployment(engine: str, **settings: object):  # type: ignore[no-untyped-def]
    return resolve(
        get_model("deepseek-r1"), get_hardware("h200-sxm"),
        DeploymentSettings(engine=engine, **settings),
    )  # fmt: skip


def test_sglang_caps_running_requests_at_48_with_speculation() -> None:
    # server_args.py _handle_speculative_decoding: "Max running requests is reset to 48 for
    # speculative decoding" when --max-running-requests is not given
    dep = _deployment("sglang", speculative="mtp:2")
    assert dep.settings.engine is EngineName.SGLANG
    assert dep.sim_config(4096).max_num_seqs == 48


def test_a_given_max_running_requests_overrides_sglangs_speculative_cap() -> None:
    dep = _deployment("sglang", speculative="mtp:2", max_num_seqs=512)
    assert dep.sim_config(4096).max_num_seqs == 512


def test_without_speculation_sglang_keeps_its_pool_default() -> None:
    plain = _deployment("sglang").sim_config(4096).max_num_seqs
    assert plain != 48
    assert plain == _deployment("sglang", max_num_seqs=None).sim_config(4096).max_num_seqs


def test_trtllm_keeps_its_batch_cap_with_speculation() -> None:
    # TensorRT-LLM's max_concurrency (above which it stops speculating) defaults to None
    plain = _deployment("trtllm").sim_config(4096).max_num_seqs
    assert _deployment("trtllm", speculative="mtp:3").sim_config(4096).max_num_seqs == plain


def test_a_sweep_point_above_sglangs_speculative_cap_runs_48_requests() -> None:
    # 64 clients on one replica: min(64, 48) = 48 running, the other 16 wait
    config = _deployment("sglang", speculative="mtp:2").sim_config(4096)
    assert config_at(config, 64, 1).max_num_seqs == 48


def test_a_sweep_point_below_sglangs_speculative_cap_runs_every_client() -> None:
    config = _deployment("sglang", speculative="mtp:2").sim_config(4096)
    assert config_at(config, 32, 1).max_num_seqs == 32


def test_sglangs_speculative_cap_holds_per_replica() -> None:
    # 128 clients over 2 replicas: ceil(128 / 2) = 64 per replica, capped at 48
    config = _deployment("sglang", speculative="mtp:2").sim_config(4096)
    assert config_at(config, 128, 2).max_num_seqs == 48


def test_a_given_max_running_requests_lifts_the_cap_in_sweeps() -> None:
    config = _deployment("sglang", speculative="mtp:2", max_num_seqs=512).sim_config(4096)
    assert config_at(config, 64, 1).max_num_seqs == 64


def test_without_speculation_a_sweep_point_runs_every_client() -> None:
    assert config_at(_deployment("sglang").sim_config(4096), 64, 1).max_num_seqs == 64


# SGLang without SGLANG_ENABLE_SPEC_V2: no overlap scheduler with EAGLE/MTP, 1.1 ms of host time
# per step (sgl-project/sglang PR #11398: 2.99 / 246.80 tok/s = 12.115 ms per step without
# overlap, 3.01 / 273.43 = 11.008 ms with it; 1.107 ms)
V1_HOST_S = 1.1e-3


def test_sglang_speculation_without_spec_v2_exposes_host_time() -> None:
    assert _deployment("sglang", speculative="mtp:2").speculative_host_s == V1_HOST_S
    assert _deployment("sglang", speculative="mtp:2", spec_overlap=False).speculative_host_s == (
        V1_HOST_S
    )


def test_sglang_speculation_with_spec_v2_hides_host_time() -> None:
    assert _deployment("sglang", speculative="mtp:2", spec_overlap=True).speculative_host_s == 0


def test_sglang_ngram_runs_without_the_overlap_scheduler() -> None:
    # server_args.py: NGRAM sets disable_overlap_schedule = True whatever SGLANG_ENABLE_SPEC_V2
    dep = resolve(
        get_model("llama-3.1-8b"), get_hardware("h200-sxm"),
        DeploymentSettings(engine="sglang", speculative="ngram:4", spec_accept_length=2.0),
    )  # fmt: skip
    assert dep.speculative_host_s == V1_HOST_S


def test_other_engines_and_plain_decoding_expose_no_speculative_host_time() -> None:
    assert _deployment("trtllm", speculative="mtp:2").speculative_host_s == 0
    assert _deployment("sglang").speculative_host_s == 0


def test_spec_overlap_is_an_sglang_setting() -> None:
    with pytest.raises(InputError, match="spec_overlap: SGLang's SGLANG_ENABLE_SPEC_V2"):
        _deployment("trtllm", speculative="mtp:2", spec_overlap=True)


def test_spec_overlap_needs_speculation() -> None:
    with pytest.raises(InputError, match="spec_overlap: needs --speculative"):
        _deployment("sglang", spec_overlap=True)


def _steps(**settings: object) -> StepTimeModel:
    dep = _deployment("sglang", speculative="mtp:2", **settings)
    return replica_models(dep, dep.memory(Layout(tp=8), 4096))[1]


def test_the_host_time_is_paid_once_per_speculative_step() -> None:
    # mtp:2 default acceptance: E = 1 + 0.75 + 0.75 x 0.645 = 2.23375 tokens per step, so a
    # decode step (priced per generated token) gains 1.1e-3 / 2.23375 = 4.9245e-4 s
    without, overlapped = _steps(spec_overlap=False), _steps(spec_overlap=True)
    gain = without.step_time_s(64, 64, 64_000, 64_000) - overlapped.step_time_s(
        64, 64, 64_000, 64_000
    )
    assert gain == pytest.approx(1.1e-3 / 2.23375)


def test_a_step_with_a_prefill_pays_the_whole_host_time() -> None:
    # a step carrying a prefill chunk is not speculated: the host time is added once, whole
    without, overlapped = _steps(spec_overlap=False), _steps(spec_overlap=True)
    gain = without.step_time_s(1_024, 1, 0, 524_800) - overlapped.step_time_s(1_024, 1, 0, 524_800)
    assert gain == pytest.approx(1.1e-3)
