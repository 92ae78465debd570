"""Fixes for a layout that does not fit: the largest max_model_len, the utilisation, other layouts.

vLLM refuses to start when one request of `max_model_len` tokens does not fit in the KV cache
(`check_enough_kv_cache_memory` in vllm/v1/core/kv_cache_utils.py), and suggests the largest length
that does (`estimate_max_model_len`, a binary search over the length). capcliff predicts both.
"""

from __future__ import annotations

import math

from capcliff.memory.layout_memory import LayoutMemory
from capcliff.units import round_up

UTILIZATION_STEP = 0.01  # suggested utilisations are rounded up to the next hundredth


def largest_max_model_len(mem: LayoutMemory) -> int:
    """Longest request one replica's KV cache holds: whole blocks on the tightest stage.

    For sliding-window models the per-token cost is the average at the report's max_model_len, which
    falls as requests grow, so this figure is a lower bound for them.
    """
    if not mem.stages or any(s.requested_bytes > s.total_memory_bytes for s in mem.stages):
        return 0  # the engine asks for more than the device (a --kv-cache-memory too large)
    return mem.blocks_per_replica * mem.stages[0].block_size


def utilization_needed(mem: LayoutMemory, max_model_len: int) -> float | None:
    """Smallest gpu_memory_utilization (to 0.01) at which one `max_model_len` request fits."""
    needed = 0.0
    for stage in mem.stages:
        request = round_up(max_model_len, stage.block_size) * stage.kv_bytes_per_token
        fixed = stage.weights_bytes + stage.reserves_bytes + request
        needed = max(needed, fixed / stage.total_memory_bytes)
    rounded = math.ceil(needed / UTILIZATION_STEP - 1e-9) * UTILIZATION_STEP
    return round(rounded, 2) if rounded <= 1.0 else None
