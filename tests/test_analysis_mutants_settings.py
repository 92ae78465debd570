"""Deployment settings, engine flags and serve commands at the edges a sweep of their modules'
mutants (`benchmarks/mutation.py`'s planting, against their fast tests) found untested. Every
expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.analysis.deployment_settings import settings_of
from capcliff.errors import InputError


def test_the_kernel_step_source_is_accepted_with_its_extra_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("capcliff.perf.measured_kernels.extra_installed", lambda: True)
    assert settings_of({"step_source": "kernels"}).step_source == "kernels"


def test_the_kernel_step_source_without_its_extra_is_one_line_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("capcliff.perf.measured_kernels.extra_installed", lambda: False)
    with pytest.raises(InputError, match=r"^--step-source: 'kernels' needs aiconfigurator-core"):
        settings_of({"step_source": "kernels"})


def test_the_roofline_step_source_needs_no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("capcliff.perf.measured_kernels.extra_installed", lambda: False)
    assert settings_of({"step_source": "roofline"}).step_source == "roofline"


def test_a_given_acceptance_is_kept_as_given_and_none_stays_none() -> None:
    # per-position rates 0.8, 0.6, 0.4 parse (perf/speculation.parse_acceptance) and are kept
    # as the user wrote them; left out, there is none (the method's published default applies)
    settings = settings_of({"speculative": "mtp:3", "spec_acceptance": "0.8,0.6,0.4"})
    assert settings.spec_acceptance == "0.8,0.6,0.4"
    assert settings_of({"speculative": "mtp:3"}).spec_acceptance is None


@pytest.mark.parametrize(
    ("moe", "dp", "attention_dp", "separate"),
    [
        (True, 2, False, True),  # a MoE model's two independent replicas: two servers
        (True, 1, False, False),  # one replica is one server
        (False, 2, False, False),  # a dense model's DP ranks are vLLM's own --data-parallel-size
        (True, 2, True, False),  # attention DP: one server running its ranks in lockstep
    ],
)
def test_only_a_moe_models_independent_replicas_are_separate_vllm_servers(
    moe: bool, dp: int, attention_dp: bool, separate: bool
) -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from capcliff.analysis.flags import vllm_separate_replicas

    dep = SimpleNamespace(
        moe=moe, layout=SimpleNamespace(dp=dp, attention_dp=attention_dp), vllm_v0=False,
        releases=(),
    )  # fmt: skip
    assert vllm_separate_replicas(cast(Any, dep)) is separate


def _flags_dep(layout: object, **changes: object) -> object:
    from capcliff.analysis.flags import Deployment

    base: dict[str, object] = dict(
        model="org/m", layout=layout, max_num_seqs=128, max_num_batched_tokens=8192,
        max_model_len=16384, gpu_memory_utilization=0.9, mem_fraction_static=0.85,
        kv_cache_dtype="auto", moe=False, mla=False,
    )  # fmt: skip
    return Deployment(**{**base, **changes})  # type: ignore[arg-type]


def _words(text: str) -> list[str]:
    import shlex

    return shlex.split(text.replace("\\\n", " "))


def test_a_vllm_line_says_every_setting_simulated() -> None:
    from capcliff.analysis.flags import vllm_command
    from capcliff.catalog.layout import Layout
    from capcliff.units import GIB

    dep = _flags_dep(
        Layout(dp=2, tp=2, pp=2), kv_cache_dtype="fp8", quantization="fp8",
        kv_cache_memory_bytes=20_000_000_000, prefix_caching=False, offload_cpu_bytes=96 * GIB,
        block_size=32, enforce_eager=True, all2all_backend="deepep_low_latency",
        speculative=("eagle", 3, None),
    )  # fmt: skip
    assert _words(vllm_command(dep)) == [  # type: ignore[arg-type]
        "vllm", "serve", "org/m", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
        "--data-parallel-size", "2", "--quantization", "fp8", "--max-num-seqs", "128",
        "--max-num-batched-tokens", "8192", "--gpu-memory-utilization", "0.9",
        "--max-model-len", "16384", "--kv-cache-dtype", "fp8",
        "--kv-cache-memory-bytes", "20000000000", "--no-enable-prefix-caching",
        "--kv-offloading-backend", "native", "--kv-offloading-size", "96", "--block-size", "32",
        "--enforce-eager", "--all2all-backend", "deepep_low_latency", "--speculative-config",
        '{"method": "eagle3", "num_speculative_tokens": 3, "model": "<EAGLE-3 draft checkpoint>"}',
    ]  # fmt: skip


def test_a_vllm_moe_line_spans_its_experts_and_leaves_unset_settings_to_the_engine() -> None:
    from capcliff.analysis.flags import vllm_command
    from capcliff.catalog.layout import Layout

    # one replica of TP 4 with its experts over the 4 ranks; caching on is said, SGLang's
    # DeepEP auto mode is not a vLLM --all2all-backend value
    dep = _flags_dep(Layout(tp=4, ep=4), moe=True, prefix_caching=True, all2all_backend="deepep")
    assert _words(vllm_command(dep)) == [  # type: ignore[arg-type]
        "vllm", "serve", "org/m", "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
        "--data-parallel-size", "1", "--enable-expert-parallel", "--max-num-seqs", "128",
        "--max-num-batched-tokens", "8192", "--gpu-memory-utilization", "0.9",
        "--max-model-len", "16384", "--kv-cache-dtype", "auto", "--enable-prefix-caching",
    ]  # fmt: skip


def test_an_sglang_attention_dp_line_counts_the_groups_ranks_and_its_total_cap() -> None:
    from capcliff.analysis.flags import sglang_command
    from capcliff.catalog.layout import Layout
    from capcliff.units import GB

    # dp 4 x tp 2 in lockstep (ep 8 > tp 2): --tp counts all 8 ranks, the cap is the group's
    # 4 x 128 = 512; 200 GB of host KV over a replica's 2 x 2 = 4 ranks is 50 GB per rank
    dep = _flags_dep(
        Layout(dp=4, tp=2, pp=2, ep=8), moe=True, kv_cache_dtype="fp8", quantization="fp8",
        prefix_caching=False, offload_cpu_bytes=200 * GB, offload_write_back=True, block_size=32,
        enforce_eager=True, all2all_backend="deepep_low_latency", speculative=("mtp", 3, None),
        spec_overlap=True,
    )  # fmt: skip
    assert _words(sglang_command(dep)) == [  # type: ignore[arg-type]
        "SGLANG_ENABLE_SPEC_V2=1", "python", "-m", "sglang.launch_server", "--model-path", "org/m",
        "--tp", "8", "--dp", "4", "--pp-size", "2", "--enable-dp-attention", "--ep-size", "8",
        "--mem-fraction-static", "0.85", "--max-running-requests", "512",
        "--context-length", "16384", "--chunked-prefill-size", "8192",
        "--kv-cache-dtype", "fp8_e4m3", "--quantization", "fp8", "--disable-radix-cache",
        "--enable-hierarchical-cache", "--hicache-size", "50", "--hicache-write-policy",
        "write_back", "--page-size", "32", "--disable-cuda-graph", "--moe-a2a-backend", "deepep",
        "--deepep-mode", "low_latency", "--speculative-algorithm", "NEXTN",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
    ]  # fmt: skip


def test_an_sglang_plain_dp_line_caps_each_replica() -> None:
    from capcliff.analysis.flags import sglang_command
    from capcliff.catalog.layout import Layout

    # two independent replicas of TP 2: --tp 2 --dp 2, each scheduler enforcing 128; without
    # the overlap variable's speculation there is no environment prefix
    dep = _flags_dep(Layout(dp=2, tp=2), spec_overlap=True)
    assert _words(sglang_command(dep)) == [  # type: ignore[arg-type]
        "python", "-m", "sglang.launch_server", "--model-path", "org/m", "--tp", "2", "--dp", "2",
        "--mem-fraction-static", "0.85", "--max-running-requests", "128",
        "--context-length", "16384", "--chunked-prefill-size", "8192",
    ]  # fmt: skip


def test_a_trtllm_line_is_one_replica_with_its_experts_and_the_kv_share() -> None:
    from capcliff.analysis.flags import trtllm_command
    from capcliff.catalog.layout import Layout

    dep = _flags_dep(Layout(tp=4, pp=2, ep=4), moe=True)
    assert _words(trtllm_command(dep, 0.85)) == [  # type: ignore[arg-type]
        "trtllm-serve", "org/m", "--backend", "pytorch", "--tp_size", "4", "--pp_size", "2",
        "--ep_size", "4", "--max_batch_size", "128", "--max_num_tokens", "8192",
        "--max_seq_len", "16384", "--kv_cache_free_gpu_memory_fraction", "0.85",
        "--enable_chunked_prefill",  # simulated chunking; TensorRT-LLM's default is off
    ]  # fmt: skip
    # a dense model's ep is not said
    assert "--ep_size" not in _words(trtllm_command(_flags_dep(Layout(tp=4, ep=4)), 0.85))  # type: ignore[arg-type]


def test_what_trtllm_serve_cannot_say_is_named_with_its_api_option() -> None:
    from capcliff.analysis.flags import unexpressed
    from capcliff.catalog.layout import Layout
    from capcliff.units import GIB

    # attention DP dp 2 x tp 4: 64 GiB of host KV per replica over its 4 GPUs is 16 GiB =
    # 17,179,869,184 bytes per GPU
    dep = _flags_dep(
        Layout(dp=2, tp=4, ep=8), moe=True, adp_balance=(50, 10), kv_cache_memory_bytes=10**10,
        prefix_caching=False, speculative=("mtp", 2, None), offload_cpu_bytes=64 * GIB,
    )  # fmt: skip
    said = unexpressed(dep, "trtllm")  # type: ignore[arg-type]
    assert said == [
        "trtllm-serve: the attention-DP balance is `attention_dp_config: {enable_balance: true, "
        "timeout_iters: 50, batching_wait_iters: 10}` in --extra_llm_api_options",
        "trtllm-serve: --kv-cache-memory has no flag; set kv_cache_config.max_tokens in "
        "--extra_llm_api_options to the KV tokens it holds",
        "trtllm-serve: prefix caching off is kv_cache_config.enable_block_reuse: false in "
        "--extra_llm_api_options",
        "trtllm-serve: speculative decoding is `speculative_config: {decoding_type: MTP, "
        "num_nextn_predict_layers: 2}` in --extra_llm_api_options",
        "trtllm-serve: the CPU offload tier is kv_cache_config.host_cache_size: 17179869184 "
        "(bytes per GPU) in --extra_llm_api_options",
    ]


def test_sglangs_whole_gb_per_rank_is_noted_where_it_misses_the_tier_simulated() -> None:
    from capcliff.analysis.flags import hicache_gb, unexpressed
    from capcliff.catalog.layout import Layout
    from capcliff.units import GB, GIB

    # 100 GiB over 4 ranks is 26.84 GB a rank, said as 27: 4 x 27 GB = 108 GB = 100.58 GiB
    dep = _flags_dep(Layout(tp=4), offload_cpu_bytes=100 * GIB)
    assert hicache_gb(dep) == 27  # type: ignore[arg-type]
    assert unexpressed(dep, "sglang") == [  # type: ignore[arg-type]
        "sglang: --hicache-size is whole GB per rank: 27 GB x 4 ranks = 100.58 GiB per replica "
        "against the 100.00 GiB simulated"
    ]
    # 200 GB over 4 ranks is 50 GB each exactly: nothing to note
    assert unexpressed(_flags_dep(Layout(tp=4), offload_cpu_bytes=200 * GB), "sglang") == []  # type: ignore[arg-type]


def test_sglang_speculation_flags_chain_k_drafts_and_ngram_takes_the_draft_count() -> None:
    from capcliff.analysis.flags import DRAFT_PLACEHOLDER, sglang_speculative_flags

    # a chain of K = 3 drafts verifies 3 + 1 = 4 tokens; NGRAM's 4 drafts are 5 tokens
    assert sglang_speculative_flags(("ngram", 4, None)) == [
        "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "5",
    ]  # fmt: skip
    assert sglang_speculative_flags(("eagle", 3, "org/draft")) == [
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "org/draft",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
    ]  # fmt: skip
    assert sglang_speculative_flags(("eagle", 2, None))[3] == DRAFT_PLACEHOLDER


def test_expert_parallel_is_said_only_for_a_moe_model_spread_over_ranks() -> None:
    from capcliff.analysis.flags import sglang_command, trtllm_command, vllm_command
    from capcliff.catalog.layout import Layout

    # a MoE model at ep 1 (experts TP-sharded) and a dense one at ep 4 name no expert parallelism
    for dep in (_flags_dep(Layout(tp=4), moe=True), _flags_dep(Layout(tp=4, ep=4))):
        assert "--enable-expert-parallel" not in _words(vllm_command(dep))  # type: ignore[arg-type]
        assert "--ep-size" not in _words(sglang_command(dep))  # type: ignore[arg-type]
        assert "--ep_size" not in _words(trtllm_command(dep, 0.9))  # type: ignore[arg-type]
    moe = _flags_dep(Layout(tp=2, ep=2), moe=True)
    assert "--enable-expert-parallel" in _words(vllm_command(moe))  # type: ignore[arg-type]
    assert _words(sglang_command(moe))[9:11] == ["--ep-size", "2"]  # type: ignore[arg-type]
    assert _words(trtllm_command(moe, 0.9))[8:10] == ["--ep_size", "2"]  # type: ignore[arg-type]


def test_a_moe_models_independent_replicas_print_one_vllm_server_each() -> None:
    from capcliff.analysis.flags import vllm_command
    from capcliff.catalog.layout import Layout

    # dp 2 x tp 2 of a MoE model without attention DP: the line is one replica, dp 1
    words = _words(vllm_command(_flags_dep(Layout(dp=2, tp=2), moe=True)))  # type: ignore[arg-type]
    assert words[7:9] == ["--data-parallel-size", "1"]
    # under attention DP the one server runs both ranks
    words = _words(vllm_command(_flags_dep(Layout(dp=2, tp=2, ep=4), moe=True)))  # type: ignore[arg-type]
    assert words[7:9] == ["--data-parallel-size", "2"]


def test_a_command_puts_one_option_per_continued_line_and_quotes_each_word() -> None:
    from capcliff.analysis.flags import command_text

    text = command_text(["vllm", "serve", "org/m", "--tp", "2", "--config", '{"a": 1}', "--eager"])
    assert text == "vllm serve org/m \\\n  --tp 2 \\\n  --config '{\"a\": 1}' \\\n  --eager"


def test_what_the_vllm_line_cannot_say_is_named_and_not_on_other_engines() -> None:
    from capcliff.analysis.flags import unexpressed
    from capcliff.catalog.layout import Layout

    dep = _flags_dep(Layout(tp=2), offload_write_back=True, all2all_backend="deepep")
    said = unexpressed(dep, "vllm")  # type: ignore[arg-type]
    assert len(said) == 2
    assert said[0].startswith("vllm: --offload-policy write-back was simulated")
    assert said[1] == "vllm: --all2all-backend deepep is SGLang's auto mode; vLLM names a mode"
    assert unexpressed(dep, "sglang") == []  # type: ignore[arg-type]
    assert unexpressed(_flags_dep(Layout(tp=2)), "vllm") == []  # type: ignore[arg-type]


def test_hicache_size_is_whole_gb_per_rank_and_at_least_one() -> None:
    from capcliff.analysis.flags import hicache_gb, unexpressed
    from capcliff.catalog.layout import Layout
    from capcliff.units import GB, GIB

    # one rank holds the whole tier: 10 GB; 0.3 GB rounds to 0 and is said as the least, 1 GB
    assert hicache_gb(_flags_dep(Layout(), offload_cpu_bytes=10 * GB)) == 10  # type: ignore[arg-type]
    assert hicache_gb(_flags_dep(Layout(), offload_cpu_bytes=3 * GB // 10)) == 1  # type: ignore[arg-type]
    # 100 GiB on one rank is 107.37 GB, said as 107: 107 GB = 99.65 GiB
    said = unexpressed(_flags_dep(Layout(), offload_cpu_bytes=100 * GIB), "sglang")  # type: ignore[arg-type]
    assert said == [
        "sglang: --hicache-size is whole GB per rank: 107 GB x 1 rank = 99.65 GiB per replica "
        "against the 100.00 GiB simulated"
    ]
