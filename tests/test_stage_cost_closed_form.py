"""`stage_cost` sums one layer of each kind times its count (`stage_group_counts`); the reference
here adds every group of every layer one by one, in exact fractions."""

from __future__ import annotations

from fractions import Fraction

import pytest

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.catalogs import model_catalog
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.memory.params import Component, Storage
from capcliff.memory.weights import WeightScheme, elements_per_rank, stage_param_groups
from capcliff.perf.stage_cost import StageCost, stage_cost
from capcliff.units import WeightDType
from tests.conftest import arch_of


def _group_by_group(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> StageCost:
    """Every group of the stage in turn: dense reads and elements, routed experts apart, the
    lm_head (or a tied embedding) apart, an untied embedding not read at all."""
    read = expert = dense = experts_el = head = excluded = Fraction(0)
    quantised = scheme.quantization.linear if scheme.quantization else None
    tied = arch.tie_word_embeddings and layout.pp == 1
    for group in stage_param_groups(arch, layout, stage):
        elements = elements_per_rank(group, layout)
        size = elements * scheme.bytes_per_element(group)
        if group.component is Component.EMBEDDING and not tied:
            continue
        if group.component in (Component.LM_HEAD, Component.EMBEDDING):
            head, read = head + elements, read + size
        elif group.component is Component.EXPERTS:
            expert, experts_el = expert + size, experts_el + elements
        else:
            read, dense = read + size, dense + elements
            # a linear the checkpoint quantises others of, held in another (the native) format
            if group.storage is Storage.LINEAR and quantised not in (None, scheme.format_of(group)):
                excluded += size
    return StageCost(read, expert, dense, experts_el, head, excluded)


@pytest.mark.parametrize("model_id", sorted(model_catalog()))
def test_stage_cost_equals_the_group_by_group_sum(model_id: str) -> None:
    # Uneven PP splits put a different mix of dense and MoE layers on each stage; the casts give
    # layers whose formats differ from the shipped ones; pp1 ties a tied lm_head to the embedding.
    arch = arch_of(model_id)
    schemes = [WeightScheme.as_shipped(arch), WeightScheme.quantised(arch, WeightDType.FP8)]
    for scheme in schemes:
        for name in ("tp1", "tp8", "pp3", "tp2-pp4", "tp4-ep4", "dpa4-tp2"):
            layout = parse_layout(name)
            for stage in range(layout.pp):
                expected = _group_by_group(arch, layout, scheme, stage)
                assert stage_cost(arch, layout, scheme, stage) == expected, (name, stage)
