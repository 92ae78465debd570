"""Engine lines for an older release (`--engine-version`) name only the flags, option values and
YAML keys that release parses; what they must leave out is said in one line (`line_gaps`).

Every boundary below was read from the releases' own parsers (PyPI wheels): vLLM
vllm/engine/arg_utils.py, vllm/config.py (0.8.x) or vllm/config/*.py and vllm/envs.py; SGLang
python/sglang/srt/server_args.py and environ.py; TensorRT-LLM tensorrt_llm/llmapi/llm_args.py
(its docs' _modules pages for 1.0.0, 1.1.0 and 1.2.0).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from test_analysis_edges import _deployment
from typer.testing import CliRunner

from capcliff.analysis.flags import (
    Deployment,
    flag_warnings,
    sglang_command,
    trtllm_speculative_config,
    vllm_command,
)
from capcliff.analysis.line_gaps import line_gaps
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.layout import Layout
from capcliff.cli.app import app
from capcliff.units import GIB


def _dep(layout: Layout | None = None, *, moe: bool = False, **kw: object) -> Deployment:
    return _deployment(layout or Layout(tp=1), moe=moe, mla=False, model="org/model", **kw)


def _vllm(dep: Deployment, release: tuple[int, int, int] | None) -> list[str]:
    dep = dep if release is None else replace(dep, releases=(("vllm", release),))
    return shlex.split(vllm_command(dep))


def _sglang(dep: Deployment, release: tuple[int, int, int] | None) -> list[str]:
    dep = dep if release is None else replace(dep, releases=(("sglang", release),))
    return shlex.split(sglang_command(dep))


def _gaps(dep: Deployment, engine: str, release: tuple[int, int, int]) -> list[str]:
    return line_gaps(replace(dep, releases=((engine, release),)), engine)


# --- vLLM -----------------------------------------------------------------------------------


def test_v0_line_selects_v0_and_runs_no_data_parallel_flag() -> None:
    # V0's arg_utils.py (0.6.6, 0.7.3) has no --data-parallel-size; vllm/envs.py from 0.8.0
    # defaults VLLM_USE_V1 to "1", so a V0 line must set VLLM_USE_V1=0 (ignored by 0.6 - 0.7).
    dep = _dep(Layout(dp=2), vllm_v0=True)
    words = shlex.split(vllm_command(dep))
    assert words[:3] == ["VLLM_USE_V1=0", "vllm", "serve"]
    assert "--data-parallel-size" not in words
    # one replica's line, the other run beside it (flags.flag_warnings: vllm_separate_replicas)
    said = line_gaps(dep, "vllm") + flag_warnings(
        dep, sweet_spot=1, one_request_fits=True, graphs_fit=True
    )
    assert any("run 2 of them" in line for line in said)


def test_v1_on_0_7_is_opt_in() -> None:
    # vLLM 0.7.x ran V1 only under VLLM_USE_V1=1 (v0.7.0 release notes, "V1 alpha").
    assert _vllm(_dep(), (0, 7, 3))[0] == "VLLM_USE_V1=1"
    assert _vllm(_dep(), (0, 8, 0))[:2] == ["vllm", "serve"]


def test_data_parallel_flag_from_0_8_3() -> None:
    # arg_utils.py: --data-parallel-size is absent from 0.8.2 and present in 0.8.3.
    dep = _dep(Layout(dp=4))
    assert "--data-parallel-size" not in _vllm(dep, (0, 8, 2))
    words = _vllm(dep, (0, 8, 3))
    assert words[words.index("--data-parallel-size") + 1] == "4"
    # the line is one replica, run 4 times (flags.flag_warnings: vllm_separate_replicas)
    old = replace(dep, releases=(("vllm", (0, 8, 2)),))
    said = flag_warnings(old, sweet_spot=1, one_request_fits=True, graphs_fit=True)
    assert any("takes no --data-parallel-size" in s and "0.8.3" in s for s in said)


def test_expert_parallel_from_0_8_0() -> None:
    # arg_utils.py: --enable-expert-parallel is absent from 0.7.3, present in 0.8.0.
    dep = _dep(Layout(tp=8, ep=8), moe=True)
    assert "--enable-expert-parallel" not in _vllm(dep, (0, 7, 3))
    assert "--enable-expert-parallel" in _vllm(dep, (0, 8, 0))
    assert any("--enable-expert-parallel" in s for s in _gaps(dep, "vllm", (0, 7, 3)))


def test_kv_cache_memory_bytes_from_0_10_2() -> None:
    # arg_utils.py: --kv-cache-memory-bytes is absent from 0.10.1.1, present in 0.10.2.
    dep = _dep(kv_cache_memory_bytes=20 * GIB)
    assert "--kv-cache-memory-bytes" not in _vllm(dep, (0, 10, 1))
    words = _vllm(dep, (0, 10, 2))
    assert words[words.index("--kv-cache-memory-bytes") + 1] == str(20 * 1024**3)


def test_kv_offloading_flags_from_0_11_1() -> None:
    # arg_utils.py: --kv-offloading-backend/--kv-offloading-size absent from 0.11.0, in 0.11.1.
    dep = _dep(offload_cpu_bytes=64 * GIB)
    assert "--kv-offloading-backend" not in _vllm(dep, (0, 11, 0))
    assert "--kv-offloading-backend" in _vllm(dep, (0, 11, 1))
    assert any("--kv-offloading-backend came in 0.11.1" in s
               for s in _gaps(dep, "vllm", (0, 11, 0)))  # fmt: skip


def test_deepep_all_to_all_by_release() -> None:
    # envs.py: VLLM_ALL2ALL_BACKEND names deepep_low_latency from 0.9.1 (0.9.0: naive, pplx);
    # arg_utils.py --all2all-backend from 0.11.1.
    dep = _dep(Layout(dp=8, ep=8), moe=True, all2all_backend="deepep_low_latency")
    assert not any(w.startswith("VLLM_ALL2ALL_BACKEND") for w in _vllm(dep, (0, 9, 0)))
    assert _vllm(dep, (0, 10, 2))[0] == "VLLM_ALL2ALL_BACKEND=deepep_low_latency"
    latest = _vllm(dep, (0, 11, 1))
    assert latest[latest.index("--all2all-backend") + 1] == "deepep_low_latency"
    assert not any(w.startswith("VLLM_ALL2ALL_BACKEND") for w in latest)


def test_mtp_names_no_method_before_0_11() -> None:
    # config/speculative.py: SpeculativeMethod gains "mtp" in 0.11.0; 0.10.2's pydantic Literal
    # lacks it, and 0.8.5 - 0.10.2 take the draft from the model's own layers when no method is
    # named (`if self.model is None and self.num_speculative_tokens is not None`).
    dep = _dep(speculative=("mtp", 1, None))
    old = _vllm(dep, (0, 10, 2))
    assert old[old.index("--speculative-config") + 1] == '{"num_speculative_tokens": 1}'
    new = _vllm(dep, (0, 11, 0))
    assert new[new.index("--speculative-config") + 1] == (
        '{"method": "mtp", "num_speculative_tokens": 1}'
    )


def test_speculative_config_from_0_8_2_and_eagle3_from_0_8_5() -> None:
    # arg_utils.py: --speculative-config from 0.8.2 (0.8.1 takes --speculative-model);
    # config.py handles the "eagle3" method from 0.8.5 (not mentioned in 0.8.4).
    ngram = _dep(speculative=("ngram", 3, None))
    assert "--speculative-config" not in _vllm(ngram, (0, 8, 1))
    assert "--speculative-config" in _vllm(ngram, (0, 8, 2))
    eagle = _dep(speculative=("eagle", 3, "org/draft"))
    assert "--speculative-config" not in _vllm(eagle, (0, 8, 4))
    assert "--speculative-config" in _vllm(eagle, (0, 8, 5))
    assert any("eagle3 method came in 0.8.5" in s for s in _gaps(eagle, "vllm", (0, 8, 4)))


def test_block_size_within_the_release_choices() -> None:
    # V0's arg_utils.py: choices=[8, 16, 32, 64, 128]; config/cache.py BlockSize adds 1 in V1
    # and 256 in 0.14.0; a later release takes any positive int.
    assert "--block-size" not in _vllm(_dep(block_size=256), (0, 13, 0))
    assert "--block-size" in _vllm(_dep(block_size=256), (0, 14, 0))
    assert "--block-size" not in shlex.split(vllm_command(_dep(block_size=1, vllm_v0=True)))
    assert "--block-size" in _vllm(_dep(block_size=48), None)


def test_latest_vllm_line_keeps_every_flag() -> None:
    dep = _dep(
        Layout(dp=8, ep=8), moe=True, all2all_backend="deepep_low_latency",
        kv_cache_memory_bytes=GIB, offload_cpu_bytes=GIB, speculative=("mtp", 1, None),
    )  # fmt: skip
    words = _vllm(dep, None)
    flags = ("--data-parallel-size", "--enable-expert-parallel", "--kv-cache-memory-bytes",
             "--kv-offloading-backend", "--all2all-backend", "--speculative-config")  # fmt: skip
    assert all(flag in words for flag in flags)
    assert line_gaps(dep, "vllm") == []


# --- SGLang ---------------------------------------------------------------------------------


def test_fp8_kv_is_e5m2_before_0_4_2() -> None:
    # server_args.py --kv-cache-dtype choices: ["auto", "fp8_e5m2"] in 0.4.0 - 0.4.1,
    # fp8_e4m3 added in 0.4.2 (both store one byte a value).
    dep = _dep(kv_cache_dtype="fp8")
    old = _sglang(dep, (0, 4, 1))
    assert old[old.index("--kv-cache-dtype") + 1] == "fp8_e5m2"
    new = _sglang(dep, (0, 4, 2))
    assert new[new.index("--kv-cache-dtype") + 1] == "fp8_e4m3"


def test_expert_parallel_needs_enable_ep_moe_before_0_4_10() -> None:
    # 0.4.9 layers/moe/ep_moe/layer.py get_moe_impl_class returns EPMoE only if enable_ep_moe,
    # and server_args.py sets ep_size = tp_size under it; 0.4.10 picks EPMoE by the EP size.
    full = _dep(Layout(tp=8, ep=8), moe=True)
    assert "--enable-ep-moe" in _sglang(full, (0, 4, 9))
    assert "--enable-ep-moe" not in _sglang(full, (0, 4, 10))
    assert "--ep-size" in _sglang(full, (0, 4, 10))
    part = _dep(Layout(tp=8, ep=4), moe=True)
    assert "--ep-size" not in _sglang(part, (0, 4, 9))
    assert any("--ep-size 4 within --tp 8" in s for s in _gaps(part, "sglang", (0, 4, 9)))


def test_deepep_switch_by_release() -> None:
    # server_args.py: --enable-deepep-moe with --deepep-mode from 0.4.5; --moe-a2a-backend from
    # 0.4.10.
    dep = _dep(Layout(dp=8, ep=8), moe=True, all2all_backend="deepep_low_latency")
    assert "--deepep-mode" not in _sglang(dep, (0, 4, 4))
    mid = _sglang(dep, (0, 4, 9))
    assert "--enable-deepep-moe" in mid and "--moe-a2a-backend" not in mid
    assert mid[mid.index("--deepep-mode") + 1] == "low_latency"
    new = _sglang(dep, (0, 4, 10))
    assert new[new.index("--moe-a2a-backend") + 1] == "deepep"


def test_hicache_size_from_0_4_6_and_pp_size_from_0_4_7() -> None:
    # server_args.py: --hicache-size/--hicache-write-policy first in 0.4.6; --pp-size first in
    # 0.4.6.post5 (absent from 0.4.6).
    dep = _dep(Layout(tp=2, pp=2), offload_cpu_bytes=64 * GIB)
    old = _sglang(dep, (0, 4, 5))
    assert "--hicache-size" not in old and "--enable-hierarchical-cache" not in old
    assert "--hicache-size" in _sglang(dep, (0, 4, 6))
    assert "--pp-size" not in _sglang(dep, (0, 4, 6))
    assert "--pp-size" in _sglang(dep, (0, 4, 7))


def test_speculative_algorithms_by_release() -> None:
    # --speculative-algorithm choices: NGRAM from 0.5.3 (0.5.2: EAGLE, EAGLE3, NEXTN,
    # STANDALONE); NEXTN without a draft path from 0.4.6.postN (server_args.py defaults
    # speculative_draft_model_path to model_path there).
    ngram = _dep(speculative=("ngram", 3, None))
    assert "--speculative-algorithm" not in _sglang(ngram, (0, 5, 2))
    assert "NGRAM" in _sglang(ngram, (0, 5, 3))
    mtp = _dep(speculative=("mtp", 1, None))
    assert "--speculative-algorithm" not in _sglang(mtp, (0, 4, 6))
    assert "NEXTN" in _sglang(mtp, (0, 4, 7))


def test_spec_v2_variable_from_0_5_5() -> None:
    # environ.py declares SGLANG_ENABLE_SPEC_V2 first in 0.5.5 (absent from 0.5.4).
    dep = _dep(speculative=("eagle", 3, "org/draft"), spec_overlap=True)
    assert _sglang(dep, (0, 5, 4))[0] == "python"
    assert _sglang(dep, (0, 5, 5))[0] == "SGLANG_ENABLE_SPEC_V2=1"
    assert any("SGLANG_ENABLE_SPEC_V2 came in 0.5.5" in s
               for s in _gaps(dep, "sglang", (0, 5, 4)))  # fmt: skip


def test_bf16_kv_from_0_5_4() -> None:
    # --kv-cache-dtype choices gain "bf16" in 0.5.4; before it the 16-bit cache cannot be named.
    dep = _dep(kv_auto_checkpoint=frozenset({"sglang"}))
    assert "--kv-cache-dtype" not in _sglang(dep, (0, 5, 3))
    new = _sglang(dep, (0, 5, 4))
    assert new[new.index("--kv-cache-dtype") + 1] == "bf16"
    assert any("twice the tokens" in s for s in _gaps(dep, "sglang", (0, 5, 3)))


# --- TensorRT-LLM ---------------------------------------------------------------------------


def test_trtllm_eagle3_before_its_own_decoding_type() -> None:
    # llm_args.py DecodingBaseConfig.from_dict of 1.0.0 - 1.2.0 maps "Eagle" (no "Eagle3");
    # 1.0 - 1.1 name the draft speculative_model_dir (1.2 keeps it as an alias).
    spec = ("eagle", 3, "org/draft")
    assert trtllm_speculative_config(spec, (1, 2, 0)) == (
        "speculative_config: {decoding_type: Eagle, max_draft_len: 3, "
        "speculative_model_dir: org/draft}"
    )
    assert trtllm_speculative_config(spec) == (
        "speculative_config: {decoding_type: Eagle3, max_draft_len: 3, "
        "speculative_model: org/draft}"
    )


# --- plan ------------------------------------------------------------------------------------


def test_plan_writes_the_planned_engines_line_for_its_release() -> None:
    # --engine sglang --engine-version 0.4.1: --page-size (0.4.4) is left out and said; the
    # vllm line, for its latest release, keeps --block-size.
    out = CliRunner().invoke(app, [
        "plan", "llama-3.1-8b", "--gpus", "1", "--engine", "sglang", "--engine-version", "0.4.1",
        "--block-size", "32", "--isl", "256", "--osl", "32", "--arrival", "batch",
        "--num-requests", "8",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    sglang = out.output[out.output.index("sglang.launch_server") :]
    assert "--page-size" not in sglang.split("warning:")[0]
    assert "sglang 0.4.1: --page-size came in 0.4.4" in out.output
    assert "--block-size 32" in out.output


# --- the lines read back ----------------------------------------------------------------------


def test_older_lines_read_back_into_the_settings_they_carry() -> None:
    # Each older release's spelling reads as what it runs: SGLang 0.4.x's --enable-ep-moe and
    # --enable-deepep-moe set ep_size = tp_size (server_args.py 0.4.6, 0.4.9); vLLM 0.9.1 -
    # 0.11.0's VLLM_ALL2ALL_BACKEND names the kernels; vLLM 0.8.x - 0.10.x take a
    # --speculative-config with neither method nor model as the model's MTP layers.
    sglang = _dep(Layout(dp=8, ep=8), moe=True, all2all_backend="deepep_low_latency")
    line = sglang_command(replace(sglang, releases=(("sglang", (0, 4, 9)),)))
    read = parse_serve_command(line, release="0.4.9")
    assert read.layout == Layout(dp=8, ep=8)
    assert read.settings["all2all_backend"] == "deepep_low_latency" and read.unmodelled == ()
    vllm = _dep(Layout(dp=8, ep=8), moe=True, all2all_backend="deepep_high_throughput",
                speculative=("mtp", 2, None))  # fmt: skip
    line = vllm_command(replace(vllm, releases=(("vllm", (0, 10, 2)),)))
    read = parse_serve_command(line, release="0.10.2")
    assert read.settings["all2all_backend"] == "deepep_high_throughput"
    assert read.settings["speculative"] == "mtp:2" and read.unmodelled == ()


def test_a_config_without_method_is_not_mtp_on_0_11() -> None:
    # config/speculative.py 0.11.0: no method and no model raises ("num_speculative_tokens was
    # provided but without speculative model"), so it is not read as MTP there.
    line = """vllm serve org/m --speculative-config '{"num_speculative_tokens": 1}'"""
    assert "speculative" not in parse_serve_command(line, release="0.11.0").settings


def test_every_boundary_the_code_names_is_in_the_table() -> None:
    # A key the lines look up (`takes`/`first`) that data/flag_releases.toml lacks would fail
    # only on the path that asks for it.
    import re
    from pathlib import Path

    from capcliff.analysis.flag_releases import _table

    table = _table()
    root = Path(__file__).resolve().parents[1] / "capcliff" / "analysis"
    keys = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        keys |= set(re.findall(r'(?:takes\([^,]+|first\()\s*"(\w+)", "([^"]+)"', text))
    assert keys and all(what in table[engine] for engine, what in keys)
    assert table["vllm"]["--data-parallel-size"] == (0, 8, 3)


def test_v0_line_carries_the_chunked_prefill_simulated() -> None:
    # --enable-chunked-prefill was dropped from V0 lines: V0 chunks only past 32K tokens
    # (arg_utils.py 0.6.6), and unchunked it refuses max_num_batched_tokens 2048 below a
    # max_model_len of 5120 (config.py 0.6.6 SchedulerConfig._verify_args: "is smaller than
    # max_model_len"). StoreBoolean takes `=False` to 0.8.4; 0.8.5 has --no-enable-chunked-prefill.
    on = _dep(vllm_v0=True, enable_chunked_prefill=True)
    assert "--enable-chunked-prefill" in shlex.split(vllm_command(on))
    off = _dep(vllm_v0=True, enable_chunked_prefill=False)
    assert "--enable-chunked-prefill=False" in _vllm(off, (0, 8, 4))
    assert "--no-enable-chunked-prefill" in _vllm(off, (0, 8, 5))
    assert "chunked" not in vllm_command(_dep(vllm_v0=True))
    read = parse_serve_command(vllm_command(replace(off, releases=(("vllm", (0, 7, 3)),))))
    assert read.settings["enable_chunked_prefill"] is False
    assert (
        "enable_chunked_prefill"
        not in parse_serve_command("vllm serve org/m --enable-chunked-prefill").settings
    )  # V1 always chunks
