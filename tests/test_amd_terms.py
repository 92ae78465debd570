"""Per-vendor AMD terms: the measured-HBM factor, the RCCL all-reduce curve, HIP graph replay's
kernel floor, catalog validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from capcliff.catalog.catalogs import get_hardware, load_toml
from capcliff.catalog.layout import parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.allreduce_curves import allreduce_s, rccl_allreduce_curve
from capcliff.perf.efficiency import REFERENCE_HBM_FRACTION, hbm_factor, profile_efficiency
from capcliff.perf.profiles import (
    KERNEL_FLOOR_S,
    curves_carry_launch,
    engine_profile,
    hip_kernel_floor_s,
)
from tests.conftest import arch_of

HARDWARE = Path(__file__).resolve().parents[1] / "hardware"


def test_mi300x_factor_by_hand() -> None:
    # MI300X: 4.29 of 5.3 TB/s = 0.80943; H200: 4.32 of 4.8 = 0.9; factor 0.80943 / 0.9 = 0.89937.
    assert hbm_factor(get_hardware("mi300x")) == pytest.approx(0.89937, abs=1e-4)


def test_reference_fraction_matches_h200_catalog() -> None:
    h200 = get_hardware("h200-sxm")
    assert h200.hbm_achievable_fraction == pytest.approx(REFERENCE_HBM_FRACTION)
    assert hbm_factor(h200) == pytest.approx(1.0)


def test_gpu_without_measurement_keeps_factor_one() -> None:
    assert hbm_factor(get_hardware("b200")) == 1.0


def test_rccl_curve_at_table_points_equals_table() -> None:
    curve = rccl_allreduce_curve(tp=8)
    # rccl-tests 8 x MI300X: 1 KiB 13.67 us, 256 KiB 17.46 us, 1 MiB 28.39 us, 4 MiB 52.96 us.
    for message, us in ((1_024, 13.67), (262_144, 17.46), (1_048_576, 28.39), (4_194_304, 52.96)):
        assert allreduce_s(curve, message, 1e11) == pytest.approx(us * 1e-6)
    # Halfway between 1 MiB (28.39 us) and 2 MiB (36.68 us): (28.39 + 36.68) / 2 = 32.535 us.
    assert allreduce_s(curve, 1_572_864, 1e11) == pytest.approx(32.535e-6)


def test_rccl_curve_only_where_measured() -> None:
    assert rccl_allreduce_curve(tp=4) == ()


def test_hip_kernel_floor_by_hand() -> None:
    # GraphBench, straight chain synced: (12,614.591 - 1,605.067) us / (8,192 - 1,024) nodes =
    # 1.53593 us per node against CUDA's 0.58 (ocannl#488): 1 + 1.53593 - 0.58 = 1.95593 us.
    assert hip_kernel_floor_s(KERNEL_FLOOR_S) == pytest.approx(1.95593e-6, rel=1e-5)


def test_aiter_curves_time_kernels_without_their_launch() -> None:
    assert not curves_carry_launch("mi325x", "sglang")  # aiter's device times
    assert not curves_carry_launch("mi300x", "sglang")  # MI325X's, borrowed
    assert curves_carry_launch("h200-sxm", "sglang")  # aiconfigurator's, per call
    assert not curves_carry_launch("mi325x", None)


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x", "mi355x"])
def test_every_r1_kernel_on_amd_takes_the_hip_floor(gpu: str) -> None:
    # R1 at TP 8 under SGLang: 61 layers x 33 kernels, none excused by the aiter-priced GEMM and
    # MoE curves, x 1.95593 us = 3.93729 ms (H200: 61 x 22 x 1 us, tests/test_op_curves.py);
    # aiter's MLA decode floor off (tests/test_aiter_mla_decode.py)
    arch = arch_of("deepseek-r1")
    profile = engine_profile(EngineName.SGLANG).with_overrides({"aiter_mla_decode_floor_s": 0.0})
    eff = profile_efficiency(
        arch, get_hardware(gpu), parse_layout("tp8"), profile,
        scheme=WeightScheme.as_shipped(arch),
    )  # fmt: skip
    assert eff.gemm_curve is not None
    assert eff.step_overhead_s == pytest.approx(61 * 33 * 1.95593e-6, rel=1e-5)


@pytest.mark.parametrize("value", [-1.0, 0.0, 5.4])
def test_catalog_rejects_bad_achievable_bandwidth(value: float) -> None:
    raw = load_toml(HARDWARE / "mi300x.toml")
    raw["hbm_achievable_tb_s"] = value
    with pytest.raises(ValidationError) as err:
        HardwareSpec.model_validate(raw)
    assert "hbm_achievable_tb_s" in str(err.value)


@pytest.mark.parametrize("value", ["-1.0", "5.4"])
def test_catalog_file_error_is_one_line(tmp_path: Path, value: str) -> None:
    from capcliff.catalog.catalogs import load_entry
    from capcliff.errors import CatalogError

    text = (HARDWARE / "mi300x.toml").read_text()
    bad = tmp_path / "mi300x.toml"
    bad.write_text(text.replace("hbm_achievable_tb_s = 4.29", f"hbm_achievable_tb_s = {value}"))
    with pytest.raises(CatalogError) as err:
        load_entry(bad, HardwareSpec)
    message = str(err.value)
    assert "\n" not in message and "hbm_achievable_tb_s" in message
