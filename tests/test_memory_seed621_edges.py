"""Edges the memory mutation sample of seed 621 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 621). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.memory.engines import sglang_mem_fraction_static
from capcliff.units import MIB


@pytest.mark.parametrize(("total_mib", "fraction"), [(61_400, 0.888), (61_439, 0.889)])
def test_sglangs_10_gib_floor_starts_above_60_gib(total_mib: int, fraction: float) -> None:
    # server_args.py: `if gpu_mem > 60 * 1024: reserved_mem = max(reserved_mem, 10 * 1024)`
    # (gpu_mem in MiB). 61,400 and 61,439 MiB are under 60 GiB = 61,440 MiB, so no floor, and
    # their tier (gpu_mem < 60 GiB) is chunk 4,096 with graphs to 32 at TP 1:
    #   reserved = 512 + 1.5 x 4,096 + 2 x 32 + 1 x 1 / 8 x 1,024 = 512 + 6,144 + 64 + 128 = 6,848
    #   (61,400 - 6,848) / 61,400 = 54,552 / 61,400 = 0.888469 -> 0.888
    #   (61,439 - 6,848) / 61,439 = 54,591 / 61,439 = 0.888540 -> 0.889
    # (Seed 621's floor above 60 x 1,023 = 61,380 MiB reserved 10,240 on both:
    #  51,160 / 61,400 = 0.833 and 51,199 / 61,439 = 0.833.) SGLang 0.5.9: from 0.5.10 piecewise
    # graphs add 8 MiB per size up to the chunk (test below).
    assert sglang_mem_fraction_static(total_mib * MIB, tp=1, pp=1, release=(0, 5, 9)) == fraction


@pytest.mark.parametrize("total_mib", [61_400, 61_439])
def test_sglang_0_5_10_piecewise_reserve_under_the_floor(total_mib: int) -> None:
    # 0.5.10: piecewise sizes up to the 4,096-token chunk: 8 (4-32 by 4) + 14 (48-256 by 16) +
    # 8 (288-512 by 32) + 8 (576-1,024 by 64) + 12 (1,280-4,096 by 256) = 50, x 8 MiB = 400;
    # reserved 6,848 + 400 = 7,248, still no floor: 54,152 / 61,400 = 0.88195 and
    # 54,191 / 61,439 = 0.88203, both 0.882
    assert sglang_mem_fraction_static(total_mib * MIB, tp=1, pp=1, release=(0, 5, 10)) == 0.882
