"""vLLM's CUDA-graph capture sizes by engine and release, worked by hand from vLLM's source.

V0 (0.6.x vllm/worker/model_runner.py `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in
range(1, 1025)]` with `_get_max_graph_batch_size`; 0.7 - 0.10 the V0 branch of
`VllmConfig._set_cudagraph_sizes`, vllm/config.py): the candidates up to the first one >= S.
V1 (0.10.x - 0.11.0, the V1 branch: `cuda_graph_sizes` defaults to [min(max_num_seqs * 2, 512)],
then `[1, 2, 4] + list(range(8, cuda_graph_sizes[0] + 1, 8))`, kept <= max_num_batched_tokens;
0.11.1 on, vllm/config/vllm.py: M = min(max_num_batched_tokens, min(2 x S, 512)), 1, 2, 4 up to
M, steps of 8 below 256 and of 16 from 256 up to M; 0.21.0 on, max_num_batched_tokens itself
when it is <= M). V1 subtracts the graphs from its KV budget from 0.20.0 on NVIDIA GPUs
(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1) and 0.26.0 on AMD ones.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageBudget, StageDemand
from capcliff.memory.engines import stage_budget
from capcliff.memory.overheads import (
    CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER,
    cudagraph_capture_sizes,
    vllm_graphs_in_budget,
)
from capcliff.units import GIB
from tests.conftest import arch_of

V0_073, V0_055, V1_0102 = (0, 7, 3), (0, 5, 5), (0, 10, 2)
# S = 300 by hand. V0 0.7.3: the candidates >= 300 start at 8 x 38 = 304, so 1, 2, 4 and 8 x 1 ..
# 8 x 38: 3 + 38 = 41 sizes. V0 0.5.5: the candidates end at 8 x 32 = 256 < 300, so all 35 of
# them. V1 0.10.2: min(2 x 300, 512) = 512, so 1, 2, 4 and 8 x 1 .. 8 x 64: 67 sizes.
EIGHTS_TO_304 = [8 * i for i in range(1, 39)]
EIGHTS_TO_256 = [8 * i for i in range(1, 33)]
EIGHTS_TO_512 = [8 * i for i in range(1, 65)]


def test_vllm_v0_0_7_captures_up_to_the_first_candidate_at_or_above_max_num_seqs() -> None:
    sizes = cudagraph_capture_sizes(300, v0=True, release=V0_073)
    assert sizes == [1, 2, 4, *EIGHTS_TO_304]
    assert len(sizes) == 41 and sizes[-1] == 304


def test_vllm_v0_before_0_6_0_captures_at_most_256() -> None:
    # 0.5.5's list ends at 256 (PR #7894 extended it to 8192 for 0.6.0): S = 300 captures all 35
    assert cudagraph_capture_sizes(300, v0=True, release=V0_055) == [1, 2, 4, *EIGHTS_TO_256]
    assert len(cudagraph_capture_sizes(300, v0=True, release=(0, 6, 0))) == 41


def test_vllm_v1_0_10_2_doubles_max_num_seqs_and_caps_at_512() -> None:
    assert cudagraph_capture_sizes(300, release=V1_0102) == [1, 2, 4, *EIGHTS_TO_512]
    # S = 100: 2 x 100 = 200 = 8 x 25, so 1, 2, 4 and 8 x 1 .. 8 x 25: 28 sizes
    sizes = cudagraph_capture_sizes(100, release=V1_0102)
    assert sizes == [1, 2, 4, *(8 * i for i in range(1, 26))]
    # 0.11.0 still builds the same list (its vllm/config/__init__.py)
    assert cudagraph_capture_sizes(300, release=(0, 11, 0)) == [1, 2, 4, *EIGHTS_TO_512]


def test_vllm_v0_edges_of_its_rule() -> None:
    # V0's default S = 256 is a candidate: 1, 2, 4, 8 .. 256 = 35 sizes in every release (V1
    # takes 67 at S = 256); S = 3 pads to 4 (`_get_graph_batch_size`); S = 1 captures one graph;
    # past 8 x 1024 = 8192 every candidate, 3 + 1024 = 1027
    for release in (V0_055, V0_073, None):
        assert cudagraph_capture_sizes(256, v0=True, release=release) == [1, 2, 4, *EIGHTS_TO_256]
    assert cudagraph_capture_sizes(3, v0=True) == [1, 2, 4]
    assert cudagraph_capture_sizes(1, v0=True) == [1]
    assert cudagraph_capture_sizes(8, v0=True) == [1, 2, 4, 8]
    assert cudagraph_capture_sizes(9, v0=True) == [1, 2, 4, 8, 16]
    many = cudagraph_capture_sizes(9000, v0=True)
    assert len(many) == 1027 and many[-1] == 8192


@given(st.integers(1, 10_000), st.sampled_from([V0_055, V0_073, None]))
def test_v0_captures_the_fewest_candidates_that_cover_max_num_seqs(
    max_num_seqs: int, release: tuple[int, int, int] | None
) -> None:
    # every batch of up to S sequences pads to a captured size (up to the list's end), and the
    # size below the largest would not cover S: V0 captures no more than it needs
    sizes = cudagraph_capture_sizes(max_num_seqs, v0=True, release=release)
    end = 256 if release == V0_055 else 8192
    assert sizes == sorted(set(sizes)) and sizes[-1] <= end
    assert sizes[-1] >= min(max_num_seqs, end)
    assert len(sizes) == 1 or sizes[-2] < max_num_seqs
    assert all(size in (1, 2, 4) or size % 8 == 0 for size in sizes)


def _v0_graphs(release: tuple[int, int, int] | None) -> int:
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0, total_memory_bytes=80 * GIB,
        weights_bytes=16 * GIB, kv_bytes_per_token=131_072, max_model_len=8192,
    )  # fmt: skip
    settings = BudgetSettings(engine=EngineName.VLLM_V0, max_num_seqs=300, engine_release=release)
    budget = stage_budget(demand, settings)
    assert "cudagraph" not in [t.name for t in budget.terms]  # V0's graphs are outside its budget
    return budget.term("cudagraph")


def test_the_v0_graph_term_counts_its_releases_sizes() -> None:
    # Llama-3.1-8B's 32 layers on one stage x the sizes above x row V04's pool per size and layer
    assert _v0_graphs(V0_073) == 41 * 32 * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER
    assert _v0_graphs(V0_055) == 35 * 32 * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER
    assert _v0_graphs(None) == _v0_graphs(V0_073)  # the latest V0 (0.10) keeps 0.6's list


def test_the_release_the_user_names_reaches_the_budget() -> None:
    settings = settings_of({"engine": "vllm-v0", "engine_version": "v0.5.5", "max_num_seqs": 300})
    deployment = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    assert deployment.budget.engine_release == V0_055
    assert (
        resolve(
            get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings_of({"engine": "vllm-v0"})
        ).budget.engine_release
        is None
    )


# --- vLLM V1 after 0.11.0 ---------------------------------------------------------------------

# 0.11.1 on, S >= 256 with max_num_batched_tokens >= 512: 1, 2, 4 (3), 8 .. 248 by 8 (31) and
# 256 .. 512 by 16 (17): 51 sizes
STEP16_TO_512 = [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]


def _logged_capture_sizes(fixture: str) -> list[int]:
    """The capture sizes a start-up log prints in its compilation config (the last list)."""
    text = (Path(__file__).parent / "fixtures" / "logs" / fixture).read_text(encoding="utf-8")
    found = re.findall(r"cudagraph_capture_sizes['\"]: ?\[([0-9, ]+)\]", text)
    return sorted(int(size) for size in found[-1].split(","))


def test_v1_lists_of_0_11_1_on_step_by_16_from_256() -> None:
    assert len(STEP16_TO_512) == 51
    for release in ((0, 11, 1), (0, 15, 0), (0, 19, 1), (0, 21, 0), None):
        assert cudagraph_capture_sizes(300, release=release) == STEP16_TO_512
    # 0.11.1 drops 1, 2 and 4 above the largest size: S = 1 gives largest 2, so [1, 2]
    assert cudagraph_capture_sizes(1, release=(0, 11, 1)) == [1, 2]
    assert cudagraph_capture_sizes(1, release=V1_0102) == [1, 2, 4]


def test_v1_list_matches_row_v35s_log() -> None:
    # Row V35 (vLLM 0.19.1, B200: max_num_seqs 1024 and max_num_batched_tokens 8192 by default;
    # "Profiling CUDA graph memory: FULL=51 (largest=512)") logs this very list; row V04 (0.10.2,
    # S 256, T 2048) logs the 67 of the older rule
    v35 = _logged_capture_sizes("vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt")
    assert v35 == STEP16_TO_512
    assert cudagraph_capture_sizes(1024, release=(0, 19, 1), max_num_batched_tokens=8192) == v35
    v04 = _logged_capture_sizes("vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt")
    assert cudagraph_capture_sizes(256, release=V1_0102, max_num_batched_tokens=2048) == v04


def test_v1_max_num_batched_tokens_bounds_the_list() -> None:
    # 0.10.2, S = 256, T = 100: the multiples of 8 up to 96 survive the filter: 3 + 12 = 15
    assert cudagraph_capture_sizes(256, release=V1_0102, max_num_batched_tokens=100) == [
        1, 2, 4, *range(8, 97, 8)
    ]  # fmt: skip
    # 0.19.1, S = 1024, T = 300: M = min(300, 512) = 300; 1, 2, 4, 8 .. 248 by 8, 256, 272, 288:
    # 37 sizes, 300 itself not captured
    below = [1, 2, 4, *range(8, 256, 8), 256, 272, 288]
    assert len(below) == 37
    assert cudagraph_capture_sizes(1024, release=(0, 19, 1), max_num_batched_tokens=300) == below
    # 0.21.0 (and the latest rule) add T = 300 <= M: 38 sizes
    for release in ((0, 21, 0), None):
        sizes = cudagraph_capture_sizes(1024, release=release, max_num_batched_tokens=300)
        assert sizes == [*below, 300]
    # T = 2048 > M = 512 is not added
    assert cudagraph_capture_sizes(256, max_num_batched_tokens=2048) == STEP16_TO_512


def test_graphs_in_the_budget_by_release_and_vendor() -> None:
    # NVIDIA: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" in 0.19.1, "1" in 0.20.0;
    # ROCm profiles no graphs before 0.26.0 (`is_cuda()` in 0.21 - 0.25.1, `is_cuda_alike()` in
    # 0.26.0). No release: 0.24.0.
    assert not vllm_graphs_in_budget((0, 19, 1))
    assert vllm_graphs_in_budget((0, 20, 0)) and vllm_graphs_in_budget(None)
    assert not vllm_graphs_in_budget((0, 25, 1), "AMD") and not vllm_graphs_in_budget(None, "AMD")
    assert vllm_graphs_in_budget((0, 26, 0), "AMD")


def _v1_budget(release: tuple[int, int, int] | None) -> StageBudget:
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0, total_memory_bytes=80 * GIB,
        weights_bytes=16 * GIB, kv_bytes_per_token=131_072, max_model_len=8192,
    )  # fmt: skip
    return stage_budget(demand, BudgetSettings(engine_release=release))


def test_v1_graphs_leave_the_kv_pool_from_0_20_and_are_counted_once() -> None:
    # 80 GiB: vLLM's defaults S = 1024, T = 8192, so 51 sizes; Llama-3.1-8B's 32 layers
    graphs = 51 * 32 * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER
    before, after = _v1_budget((0, 19, 1)), _v1_budget((0, 20, 0))
    assert [t.bytes for t in before.outside_terms if t.name == "cudagraph"] == [graphs]
    assert [t.bytes for t in after.terms if t.name == "cudagraph"] == [graphs]
    assert "cudagraph" not in [t.name for t in after.outside_terms]  # not a headroom term too
    assert before.kv_bytes - after.kv_bytes == graphs
    assert _v1_budget(None).kv_bytes == after.kv_bytes


def test_the_deployment_puts_graphs_in_the_budget_by_release_and_vendor() -> None:
    def in_budget(gpu: str, version: str | None) -> bool | None:
        settings = settings_of({"engine": "vllm", "engine_version": version})
        deployment = resolve(get_model("llama-3.1-8b"), get_hardware(gpu), settings)
        return deployment.budget.cudagraph_in_budget

    assert in_budget("h200-sxm", None) and in_budget("h200-sxm", "0.20.0")
    assert in_budget("h200-sxm", "0.19.1") is False
    assert in_budget("mi355x", None) is False and in_budget("mi355x", "0.26.0")


def test_memory_takes_the_release_the_user_names() -> None:
    from typer.testing import CliRunner

    from capcliff.cli.app import app
    from capcliff.cli.main import main

    def graph_row(*flags: str) -> str:
        args = ["memory", "llama-3.1-8b", "--gpu", "h200-sxm", "--layout", "tp1", *flags]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        return next(line for line in result.output.splitlines() if "cudagraph" in line)

    # 0.19.1 captures after the KV cache (a headroom row); 0.20.0 and the latest subtract it
    assert "outside: cudagraph" in graph_row("--engine-version", "0.19.1")
    assert "outside" not in graph_row("--engine-version", "0.20.0")
    assert "outside" not in graph_row()
    # a release before V1 existed is refused, as a simulation refuses it
    assert main(["memory", "llama-3.1-8b", "--engine-version", "0.5.0"]) == 2
