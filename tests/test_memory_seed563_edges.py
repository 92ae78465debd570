"""Edges the memory mutation sample of seed 563 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 563). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.draft import SpecMethod, draft_model
from capcliff.memory.overheads import nvls_buffer_bytes, nvls_channels
from capcliff.memory.report import build_memory_report
from capcliff.memory.weights import WeightScheme
from capcliff.units import GIB, KVDType


def test_nvswitch_without_nvlink_sharp_has_no_nvls_channels() -> None:
    # NCCL's NVLS (src/transport/nvls.cc) is built on cuMulticastCreate, which needs a device
    # with CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (NVLink SHARP: Hopper on NVLink 4 switches and
    # later): an A100 HGX (NVLink 3 via NVSwitch) has switches but no NVLS, so no channels and
    # no buffers at TP8. (seed 563's default of 1 channel: 8 x 1 x 2 x 8 x 128 KiB = 16 MiB.)
    a100 = get_hardware("h100-sxm").model_copy(update={"scaleup_fabric": "NVLink 3 via NVSwitch"})
    assert nvls_channels(a100) == 0
    assert nvls_buffer_bytes(8, nvls_channels(a100)) == 0


@pytest.mark.parametrize("method", [SpecMethod.EAGLE, SpecMethod.MTP])
def test_a_draft_has_no_mtp_layers_of_its_own(method: SpecMethod) -> None:
    # DeepSeek-R1's config.json: num_nextn_predict_layers 1. Its draft (the MTP module, or an
    # EAGLE-3 head) is one decoder layer and carries no further MTP module: 0, a valid count
    # (the catalog reads num_nextn_predict_layers with minimum 0). (seed 563's EAGLE draft: -1.)
    draft = draft_model(get_model("deepseek-r1").arch, method)
    assert draft is not None
    assert (draft.arch.num_layers, draft.arch.num_mtp_layers) == (1, 0)


@pytest.mark.parametrize(
    ("engine", "max_model_len", "needed"),
    [
        # vLLM, 1,000,000 tokens do not fit at 0.9 (tests/test_fit.py): weights 16,060,522,496 +
        # RoPE 33,554,432 + reserves 1,610,612,736 + 1,000,000 x 131,072 = 148,776,689,664 B
        # over 150,754,820,096 B = 0.9869 -> 0.99
        (EngineName.VLLM, 1_000_000, 0.99),
        (EngineName.VLLM, 8192, None),  # it fits: nothing to raise
        # SGLang sizes its pool by mem_fraction_static, not gpu_memory_utilization: its KV holds
        # under 150.75 GB x 0.907 - 16.1 GB of weights = 120.6 GB, 0.92 M tokens of 131,072 B
        # (H200's 143,771 MiB: (143,771 - 13,440) / 143,771 = 0.907), so 1 M do not fit, and no
        # utilization is named
        (EngineName.SGLANG, 1_000_000, None),
    ],
    ids=["vllm-short", "vllm-fits", "sglang"],
)
def test_the_report_names_a_utilization_only_for_vllm_layouts_that_do_not_fit(
    engine: EngineName, max_model_len: int, needed: float | None
) -> None:
    model = get_model("llama-3.1-8b")
    settings = BudgetSettings(
        engine=engine,
        enforce_eager=True,
        term_overrides={"activation_peak": GIB, "non_torch": GIB // 2},
    )
    report = build_memory_report(
        model, get_hardware("h200-sxm"), gpus=1, layouts=[Layout()],
        scheme=WeightScheme.as_shipped(model.arch), kv_dtype=KVDType.BF16,
        max_model_len=max_model_len, settings=settings,
    )  # fmt: skip
    (result,) = report.layouts
    assert result.fits is (max_model_len == 8192)
    assert result.utilization_needed == needed
