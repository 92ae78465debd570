"""Edges the memory mutation sample of seed 613 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 613). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.units import KVDType
from tests.conftest import arch_of


def _llama8b_on_h200(settings: BudgetSettings) -> LayoutMemory:
    arch = arch_of("llama-3.1-8b")
    return layout_memory(
        arch, get_hardware("h200-sxm"), Layout(), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, max_model_len=8192, settings=settings,
    )  # fmt: skip


def test_vllm_v0_samples_256_sequences_in_its_profile_run() -> None:
    # vLLM V0's EngineArgs.max_num_seqs defaults to 256 (vllm/engine/arg_utils.py, 0.6.x), and
    # at 8,192 tokens of context V0 does not chunk prefill (that starts above 32K), so its profile
    # pass runs T = max(8192, 2048) = 8,192 tokens. Llama-3.1-8B's config.json: hidden 4,096, 32
    # heads and 8 KV heads of 128, intermediate 14,336, vocab 128,256. Forward: 8,192 x ((32 +
    # 2 x 8) x 128 + 3 x 14,336 + 4,096) x 2 B = 8,192 x 53,248 x 2 = 872,415,232 B; sampler:
    # min(256, 8,192) x 128,256 x 4 B = 131,334,144 B. (seed 613's 255 sequences: 513,024 B less.)
    mem = _llama8b_on_h200(BudgetSettings(engine=EngineName.VLLM_V0))
    assert mem.stages[0].term("activation_peak") == 872_415_232 + 131_334_144


@pytest.mark.parametrize(("utilization", "warns"), [(1.0, True), (0.99, False)])
def test_a_budget_of_the_whole_device_leaves_no_room_for_the_cuda_context(
    utilization: float, warns: bool
) -> None:
    # vLLM asks for int(total x utilisation); the CUDA context (0.86 GiB = 923,417,969 B) lives
    # outside that. At 1.0 the budget is the whole H200 (143,771 MiB = 150,754,820,096 B), not
    # past it, so the fit reason is silent and the warning must say 0 B is left. At 0.99,
    # 150,754,820,096 - 149,247,271,895 = 1,507,548,201 B are left, more than the context.
    # (seed 613's requested >= total read the whole-device budget as past the device: no warning.)
    settings = BudgetSettings(gpu_memory_utilization=utilization, enforce_eager=True)
    mem = _llama8b_on_h200(settings)
    assert mem.fits
    warning = (
        "cuda_context need 923.4 MB outside the budget but only 0 B is left there: lower the "
        "memory fraction or use --enforce-eager"
    )
    assert mem.warnings.count(warning) == warns
    assert any("outside the budget" in w for w in mem.warnings) is warns


def test_sglang_weights_past_its_fraction_leave_zero_blocks_not_minus_one() -> None:
    # SGLang's pool: (total - context) x mem_fraction_static - weights. At 0.1 on an H200:
    # (150,754,820,096 - 923,417,969) x 0.1 = 14,983,140,212 B, below Llama-3.1-8B's 16.06 GB of
    # bf16 weights, so the pool is negative: no token fits, 0 blocks and a capacity of 0 tokens.
    # (seed 613's max(-1, kv): -1 // 131,072 B per token = -1 token, -1 block.)
    mem = _llama8b_on_h200(BudgetSettings(engine=EngineName.SGLANG, mem_fraction_static=0.1))
    (stage,) = mem.stages
    assert stage.kv_bytes < 0
    assert (stage.blocks, mem.kv_capacity_tokens_per_replica) == (0, 0)
    assert not mem.fits
