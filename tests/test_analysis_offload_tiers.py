"""`analysis.offload.offload_tiers` at its edges: sizes per replica split over its GPUs, the host
and NVMe limits at exactly their size, bandwidths and latencies per GPU. Every expected value is
worked out by hand in the test's comment (the seed-51 mutation sample found the host link's
latency, us x 1e-6, replaceable by us / 1e-6 without a failing test)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.offload import offload_tiers
from capcliff.errors import InputError

GB = 10**9


def _hardware(**changes: Any) -> Any:
    spec = {
        "id": "fake",
        "host_dram_bytes_per_gpu": 100 * GB,
        "host_link_bw_gb_s_bidir": 128.0,  # one direction: 64 GB/s
        "host_link_latency_us": 5.0,
        "nvme_read_gb_s_per_node": 28.0,
        "nvme_write_gb_s_per_node": 14.0,
        "nvme_bytes_per_gpu": 400 * GB,
        "nvme_latency_us": 100.0,
        "gpus_per_node": 8,
    }
    return SimpleNamespace(**(spec | changes))


def _tiers(sizes: dict[str, int], hardware: Any = None, kv: int = 100_000) -> Any:
    return offload_tiers(
        sizes, hardware or _hardware(), gpus_per_replica=2, kv_bytes_per_token_per_gpu=kv
    )


def test_each_tier_per_gpu() -> None:
    cpu, nvme = _tiers({"cpu": 64 * GB, "nvme": 800 * GB})
    # cpu: 64 GB over 2 GPUs = 32 GB each, / 100,000 B per token = 320,000 tokens; the host
    # link one way, 128 / 2 = 64 GB/s, both directions; 5 us = 5e-6 s a transfer
    assert (cpu.name, cpu.tokens) == ("cpu", 320_000)
    assert cpu.read_bytes_per_s == cpu.write_bytes_per_s == 64 * GB
    assert cpu.latency_s == pytest.approx(5e-6)
    # nvme: 400 GB each = 4,000,000 tokens; the node's 28 and 14 GB/s shared by its 8 GPUs:
    # 3.5 and 1.75 GB/s; 100 us = 1e-4 s
    assert (nvme.name, nvme.tokens) == ("nvme", 4_000_000)
    assert nvme.read_bytes_per_s == pytest.approx(3.5 * GB)
    assert nvme.write_bytes_per_s == pytest.approx(1.75 * GB)
    assert nvme.latency_s == pytest.approx(1e-4)


def test_tokens_round_down_and_an_unknown_latency_is_zero() -> None:
    hardware = _hardware(host_link_latency_us=None, nvme_latency_us=None)
    cpu, nvme = _tiers({"cpu": 2 * GB, "nvme": 2 * GB}, hardware, kv=300_000)
    # 1 GB per GPU / 300,000 B = 3,333.3 -> 3,333 tokens
    assert cpu.tokens == nvme.tokens == 3_333
    assert cpu.latency_s == nvme.latency_s == 0.0


def test_a_model_without_kv_bytes_has_no_tiers() -> None:
    assert _tiers({"cpu": 64 * GB}, kv=0) == ()


def test_a_tier_may_fill_its_share_exactly_but_not_more() -> None:
    # 200 GB over 2 GPUs = 100 GB each: exactly the host DRAM per GPU, accepted
    (cpu,) = _tiers({"cpu": 200 * GB})
    assert cpu.tokens == 1_000_000
    with pytest.raises(InputError, match="offload cpu: 201 GB per replica is more than the host"):
        _tiers({"cpu": 201 * GB})
    # 800 GB = 400 GB each: exactly the NVMe share, accepted; a GB more is not
    (nvme,) = _tiers({"nvme": 800 * GB})
    assert nvme.tokens == 4_000_000
    with pytest.raises(InputError, match=r"offload nvme: 802 GB .* NVMe share .* \(800 GB\)"):
        _tiers({"nvme": 802 * GB})


def test_nvme_needs_the_catalogs_figures() -> None:
    for missing in ("nvme_read_gb_s_per_node", "nvme_write_gb_s_per_node", "nvme_bytes_per_gpu"):
        with pytest.raises(InputError, match="offload nvme: fake has no NVMe figures"):
            _tiers({"nvme": 10 * GB}, _hardware(**{missing: None}))


def test_one_byte_of_kv_per_token_still_gets_tiers() -> None:
    (cpu,) = _tiers({"cpu": 64 * GB}, kv=1)
    assert cpu.tokens == 32 * GB  # 32 GB per GPU, a token a byte


def test_parse_offload_reads_each_tier_once_fastest_first() -> None:
    from capcliff.analysis.offload import parse_offload

    gib = 1024**3
    # given in any order, returned cpu first; 1 GiB exactly is the least a tier takes
    assert list(parse_offload("nvme:4GiB, cpu:1GiB").items()) == [("cpu", gib), ("nvme", 4 * gib)]
    assert parse_offload("nvme:2GiB") == {"nvme": 2 * gib}
    with pytest.raises(InputError, match="under the 1 GiB a tier needs"):
        parse_offload(f"cpu:{gib - 1}")  # a byte short of 1 GiB
    for bad in ("cpu", "gpu:1GiB", "cpu:1GiB,cpu:2GiB", "cpu=1GiB"):
        with pytest.raises(InputError, match="offload: cannot read"):
            parse_offload(bad)
