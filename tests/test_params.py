"""Parameter counts against published figures and hand-computed breakdowns."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import model_catalog
from capcliff.memory.params import Component, param_count
from tests.conftest import arch_of

CARDS = model_catalog()
PUBLISHED = sorted(
    mid
    for mid, card in CARDS.items()
    if card.published_params is not None and not card.published_params.counts_vision_tower
)


def _tolerance(published: int, rounded_to: int) -> float:
    # 1 % of the published figure, plus half its rounding unit ("32.5B" means 32.45-32.55B).
    return 0.01 * published + rounded_to / 2


@pytest.mark.parametrize("model_id", PUBLISHED)
def test_total_params_within_1_percent_of_published(model_id: str) -> None:
    pub = CARDS[model_id].published_params
    assert pub is not None
    total = param_count(arch_of(model_id)).total
    assert abs(total - pub.total) <= _tolerance(pub.total, pub.rounded_to)


@pytest.mark.parametrize(
    "model_id",
    [m for m in PUBLISHED if CARDS[m].published_params.active is not None],  # type: ignore[union-attr]
)
def test_active_params_within_1_percent_of_published(model_id: str) -> None:
    pub = CARDS[model_id].published_params
    assert pub is not None and pub.active is not None
    arch = arch_of(model_id)
    active = param_count(arch).active
    if not pub.active_counts_input_embedding:
        active -= arch.vocab_size * arch.hidden_size
    assert abs(active - pub.active) <= _tolerance(pub.active, pub.rounded_to)


def test_gemma_text_model_plus_siglip_tower_matches_the_published_total() -> None:
    # The published 27,432,062,576 includes the SigLIP-400M vision tower and the projector, which
    # capcliff does not model. Worked out from the SigLIP config (width 1152, MLP 4304, 27 layers,
    # patch 14, 4096 positions): per layer 4*(1152^2+1152) + (1152*4304+4304) + (4304*1152+1152)
    # + 2*2*1152 = 15,239,504; * 27 = 411,466,608; + patch 3*14*14*1152+1152 = 678,528;
    # + positions 4096*1152 = 4,718,592; + post-norm 2,304; + projector 1152*5376 + 1152 =
    # 6,194,304.
    vision = 411_466_608 + 678_528 + 4_718_592 + 2_304 + 6_194_304
    pub = CARDS["gemma-3-27b"].published_params
    assert pub is not None
    text = param_count(arch_of("gemma-3-27b")).total
    assert text + vision == pytest.approx(pub.total, rel=0.01)


def test_llama_8b_breakdown_by_component() -> None:
    # hidden 4096, 32 layers, 32 heads, 8 kv heads, head_dim 128, MLP 14336, vocab 128256, untied.
    counts = param_count(arch_of("llama-3.1-8b")).by_component
    assert counts[Component.EMBEDDING] == 128_256 * 4096
    assert counts[Component.LM_HEAD] == 128_256 * 4096
    # q and o: 4096*4096 each; k and v: 4096*1024 each.
    assert counts[Component.ATTENTION] == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
    assert counts[Component.MLP] == 32 * 3 * 4096 * 14336
    assert counts[Component.NORMS] == 32 * 2 * 4096 + 4096


def test_tied_embeddings_are_counted_once() -> None:
    counts = param_count(arch_of("gemma-3-27b")).by_component
    assert counts[Component.LM_HEAD] == 0
    assert counts[Component.EMBEDDING] == 262_208 * 5376


def test_deepseek_r1_experts_router_and_shared_experts() -> None:
    # 58 MoE layers (61 - 3 dense). Routed: 256 experts * 3 * 7168 * 2048; shared: 1 expert of the
    # same width; router: 7168 * 256 weights + 256 correction biases.
    counts = param_count(arch_of("deepseek-r1")).by_component
    assert counts[Component.EXPERTS] == 58 * 256 * 3 * 7168 * 2048
    assert counts[Component.SHARED_EXPERTS] == 58 * 3 * 7168 * 2048
    assert counts[Component.ROUTER] == 58 * (7168 * 256 + 256)
    assert counts[Component.MLP] == 3 * 3 * 7168 * 18432


def test_active_params_count_top_k_of_the_routed_experts() -> None:
    # mixtral: 8 experts, top-2; routed experts are 32 * 8 * 3 * 4096 * 14336 elements.
    result = param_count(arch_of("mixtral-8x7b"))
    routed = 32 * 8 * 3 * 4096 * 14336
    assert result.total - result.active == routed * 6 // 8


def test_dense_models_have_active_equal_total() -> None:
    result = param_count(arch_of("qwen3-32b"))
    assert result.active == result.total
