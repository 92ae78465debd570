"""SGLang's own CUDA-graph batch sizes and vLLM V1's FlashInfer sampler, worked by hand from the
engines' released source (docs/validation.md, "CUDA-graph memory and the profile run's
sampler by the engines' own rules").

SGLang (python/sglang/srt/server_args.py `_generate_cuda_graph_batch_sizes`, 0.5.3 to 0.5.12):
`[1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16) + range(512, max_bs + 1, 32)`, kept
<= cuda_graph_max_bs, and from 0.5.10.post1 cuda_graph_max_bs itself appended when missing;
0.4.3.post2 (model_executor/cuda_graph_runner.py): `[1, 2, 4] + [i * 8 for i in range(1, 21)]`
kept <= cuda_graph_max_bs. Either is then bounded by the request pool, whose size is added when
the list reaches past it.

vLLM V1 up to 0.11.0 samples with FlashInfer wherever it is installed
(vllm/v1/sample/ops/topk_topp_sampler.py); FlashInfer 0.3.1's
`top_k_top_p_sampling_from_logits` holds a masked fp32 copy and its fp32 softmax next to the
sampler's bf16 logits and their fp32 copy: 2 + 4 + 4 + 4 = 14 B per logit.
"""

from __future__ import annotations

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageDemand
from capcliff.memory.engines import stage_budget
from capcliff.memory.overheads import (
    CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER,
    sglang_capture_sizes,
    v1_activation_peak_bytes,
)
from capcliff.units import GIB
from tests.conftest import arch_of

SGLANG_0_5_12, SGLANG_0_5_9, SGLANG_0_4_3 = (0, 5, 12), (0, 5, 9), (0, 4, 3)


def test_sglang_0_5_lists_by_cuda_graph_max_bs() -> None:
    # max_bs 256 (an H100 or H200 below TP 4): 1, 2, 4, 8, 12 and 16, 24, ..., 256 (31 sizes).
    sizes = sglang_capture_sizes(256, max_running_requests=4096, release=SGLANG_0_5_12)
    assert sizes == [1, 2, 4, 8, 12, *range(16, 257, 8)]
    assert len(sizes) == 36
    # max_bs 512 (TP 4 and more, or a B200): 36 + 272, 288, ..., 496 (15) + 512 = 52 sizes.
    assert len(sglang_capture_sizes(512, max_running_requests=4096)) == 36 + 15 + 1
    # max_bs 24 (a 24 GB card below TP 4): 1, 2, 4, 8, 12, 16, 24.
    assert sglang_capture_sizes(24, max_running_requests=4096) == [1, 2, 4, 8, 12, 16, 24]


def test_sglang_0_5_10_on_captures_cuda_graph_max_bs_itself() -> None:
    # 300 is off the 16-steps from 272 (272, 288, 304): 0.5.12 appends it, 0.5.9 does not.
    latest = sglang_capture_sizes(300, max_running_requests=4096, release=SGLANG_0_5_12)
    older = sglang_capture_sizes(300, max_running_requests=4096, release=SGLANG_0_5_9)
    assert latest[-3:] == [272, 288, 300]
    assert older[-2:] == [272, 288]


def test_sglang_0_4_3_list_and_its_small_pool() -> None:
    # max_bs 80 (0.4.3's < 25 GB tier at TP 4): 1, 2, 4 and 8, 16, ..., 80: 13 sizes.
    assert sglang_capture_sizes(80, max_running_requests=4096, release=SGLANG_0_4_3) == [
        1, 2, 4, *range(8, 81, 8),
    ]  # fmt: skip
    # a pool of 50 requests: sizes above it go, 49 and 50 come in (0.4.3.post2 adds size - 1)
    assert sglang_capture_sizes(80, max_running_requests=50, release=SGLANG_0_4_3) == [
        1, 2, 4, 8, 16, 24, 32, 40, 48, 49, 50,
    ]  # fmt: skip
    # 0.5.x adds the pool size alone
    assert sglang_capture_sizes(80, max_running_requests=50)[-2:] == [48, 50]


def _sglang_graphs(total_gib: int, tp: int, release: tuple[int, int, int] | None) -> int:
    demand = StageDemand(
        arch=arch_of("qwen3-32b"), layout=Layout(tp=tp), stage=0,
        total_memory_bytes=total_gib * GIB, weights_bytes=16 * GIB, kv_bytes_per_token=262_144,
        max_model_len=8192,
    )  # fmt: skip
    settings = BudgetSettings(engine=EngineName.SGLANG, engine_release=release)
    budget = stage_budget(demand, settings)
    assert "cudagraph" not in [t.name for t in budget.terms]  # outside SGLang's static pool
    return budget.term("cudagraph")


def test_sglangs_graph_term_counts_its_own_list() -> None:
    # Qwen3-32B's 64 layers x 0.56 MiB per size and layer (row V04). 80 GiB is SGLang's 60-90
    # GiB tier (cuda_graph_max_bs 256 below TP 4, 512 from TP 4): 36 and 52 sizes, where vLLM
    # 0.10.2's list counted 67; a 24 GiB card at TP 4 (max_bs 80) under 0.4.3: 13 sizes.
    per_size = 64 * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER
    assert _sglang_graphs(80, 1, None) == 36 * per_size
    assert _sglang_graphs(80, 4, SGLANG_0_5_12) == 52 * per_size
    assert _sglang_graphs(24, 4, SGLANG_0_4_3) == 13 * per_size


def test_flashinfer_sampler_peak_of_qwen3_32b_on_an_h100() -> None:
    # vLLM 0.11.0 on an H100 (>= 70 GiB: S = 1024, T = 8192), vocab 151,936, hidden 5,120.
    # FlashInfer: 1024 x 151,936 x 14 B = 2,178,154,496 B + 8192 x 5120 x 2 B = 83,886,080 B of
    # hidden states = 2,262,040,576 B (2.107 GiB), above the 8192-token forward pass (1.41 GiB);
    # PyTorch's sort: 1024 x 151,936 x 38 B = 5,912,133,632 B + the same hidden states.
    arch, layout = arch_of("qwen3-32b"), Layout()
    flashinfer = v1_activation_peak_bytes(
        arch, layout, max_num_batched_tokens=8192, max_num_seqs=1024, flashinfer_sampler=True
    )
    native = v1_activation_peak_bytes(arch, layout, max_num_batched_tokens=8192, max_num_seqs=1024)
    assert flashinfer == 2_262_040_576
    assert native == 5_912_133_632 + 83_886_080
    # the KV pool grows by the difference, 1024 x 151,936 x 24 B = 3,733,979,136 B (3.48 GiB):
    # 151,936 x 24 / 256 = 14,244 tokens of 256 KiB
    assert native - flashinfer == 3_733_979_136
    assert (native - flashinfer) // (256 * 1024) == 14_244


def test_flashinfer_sampler_is_a_vllm_v1_setting() -> None:
    dep = resolve(
        get_model("qwen3-32b"),
        get_hardware("h100-sxm"),
        settings_of(
            {"engine_version": "0.11.0", "flashinfer_sampler": True, "max_model_len": 8192}
        ),
    )
    assert dep.budget.flashinfer_sampler is True
