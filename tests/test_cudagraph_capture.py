"""vLLM's CUDA-graph capture sizes by engine and release, worked by hand from vLLM's source.

V0 (0.6.x vllm/worker/model_runner.py `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in
range(1, 1025)]` with `_get_max_graph_batch_size`; 0.7 - 0.10 the V0 branch of
`VllmConfig._set_cudagraph_sizes`, vllm/config.py): the candidates up to the first one >= S.
V1 (0.10.x, the V1 branch: `cuda_graph_sizes` defaults to [min(max_num_seqs * 2, 512)], then
`[1, 2, 4] + list(range(8, cuda_graph_sizes[0] + 1, 8))`).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageDemand
from capcliff.memory.engines import stage_budget
from capcliff.memory.overheads import CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER, cudagraph_capture_sizes
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
    assert cudagraph_capture_sizes(300) == [1, 2, 4, *EIGHTS_TO_512]
    # S = 100: 2 x 100 = 200 = 8 x 25, so 1, 2, 4 and 8 x 1 .. 8 x 25: 28 sizes
    assert cudagraph_capture_sizes(100) == [1, 2, 4, *(8 * i for i in range(1, 26))]


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
