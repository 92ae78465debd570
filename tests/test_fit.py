"""Fixes for a layout that fails vLLM's one-request check, worked out by hand."""

from __future__ import annotations

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.fit import largest_max_model_len, utilization_needed
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.units import GIB, KVDType
from tests.conftest import arch_of


def _llama_8b(max_model_len: int) -> LayoutMemory:
    arch = arch_of("llama-3.1-8b")
    return layout_memory(
        arch,
        get_hardware("h200-sxm"),
        Layout(),
        scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16,
        max_model_len=max_model_len,
        settings=BudgetSettings(
            enforce_eager=True, term_overrides={"activation_peak": GIB, "non_torch": GIB // 2}
        ),
    )


def test_one_million_tokens_do_not_fit_at_0_9() -> None:
    mem = _llama_8b(1_000_000)
    assert not mem.fits
    assert "max_model_len=1000000" in mem.reason


def test_largest_max_model_len_is_the_replica_capacity() -> None:
    # 56,254 blocks of 16 tokens (see test_memory): 900,064 tokens.
    assert largest_max_model_len(_llama_8b(1_000_000)) == 900_064


def test_utilization_that_would_fit_one_million_tokens() -> None:
    # weights 16,060,522,496 + RoPE cache 33,554,432 + reserves 1,610,612,736
    # + 1,000,000 * 131,072 = 148,776,689,664 B over 150,754,820,096 B = 0.9869 -> 0.99.
    assert utilization_needed(_llama_8b(1_000_000), 1_000_000) == 0.99


def test_no_utilization_fits_two_million_tokens() -> None:
    # 2,000,000 * 131,072 = 262 GB of KV alone exceeds the 150.8 GB GPU.
    assert utilization_needed(_llama_8b(2_000_000), 2_000_000) is None


def test_a_max_model_len_of_exactly_the_replica_capacity_fits() -> None:
    # 56,254 blocks x 16 tokens = 900,064 tokens: a request of exactly that many fits ...
    assert _llama_8b(900_064).fits


def test_one_token_past_the_replica_capacity_does_not_fit() -> None:
    # ... and one more token needs a 56,255th block.
    mem = _llama_8b(900_065)
    assert not mem.fits
    assert "max_model_len=900065" in mem.reason


def test_the_fullest_pipeline_stage_sets_the_weights_per_gpu() -> None:
    # 32 layers over PP3 -> 11/11/10. Stage 0 holds the embedding (128,256 x 4,096 = 525 M
    # parameters) and 11 layers of 218.1 M; stage 2 holds 10 layers, the final norm and an equally
    # large lm_head; stage 1 only 11 layers. Stage 0 is the fullest and binds.
    arch = arch_of("llama-3.1-8b")
    mem = layout_memory(
        arch, get_hardware("h200-sxm"), Layout(pp=3), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, max_model_len=8192, settings=BudgetSettings(),
    )  # fmt: skip
    first, middle, last = (s.weights_bytes for s in mem.stages)
    assert first > last > middle
    assert mem.weights_bytes_per_gpu == first
