"""Speed of the simulator with prefix caching: a 5,000-request multi-turn sweep point, and how the
cost grows with events rather than tokens.

Run: python benchmarks/reuse_speed.py   (prints the figures of docs/performance.md's prefix
caching section; best of 3 runs in CPU seconds of this process (the wall clock of a shared
machine varies), simulation only: workload generation and start-up excluded)
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent))

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.sessions import SESSION_PRESETS, generate_sessions


def point(
    preset: str, n: int, users: int, *, kv: str | None, caching: bool, offload: str | None = None
) -> tuple[float, int, int, float]:
    """(best seconds of 3, events, tokens scheduled, hit rate) of one sweep point."""
    values = {"kv_cache_dtype": "fp8", "kv_cache_memory": kv, "offload": offload}
    dep = resolve(get_model("llama-3.3-70b-fp4"), get_hardware("b200"), settings_of(values))
    spec = replace(SESSION_PRESETS[preset], think_time_s=0.0)
    requests = generate_sessions(spec, n, np.random.default_rng(0), clients=users)
    layout = parse_layout("tp8")
    max_len = dep.context_length(requests)
    capacity, steps = replica_models(dep, dep.memory(layout, max_len))
    config = replace(dep.sim_config(max_len), prefix_caching=caching, max_num_seqs=users)
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        r = simulate(requests, steps, capacity, config)
        best = min(best, time.process_time() - start)
    return best, r.events, r.scheduled_tokens, r.prefix_cache_hit_rate or 0.0


def main() -> None:
    print("| point | caching | s | events | us/event | tokens scheduled | hit rate |")
    print("|---|---|---:|---:|---:|---:|---:|")
    cases = [
        ("multiturn-chat 5,000 req, 64 users, 8 GiB KV/GPU", "multiturn-chat", 5000, 64, "8GiB"),
        ("multiturn-chat 5,000 req, 64 users, 1 GiB KV/GPU (past the cliff)", "multiturn-chat",
         5000, 64, "1GiB"),
        ("multiturn-chat 10,000 req, 64 users, 8 GiB KV/GPU", "multiturn-chat", 10000, 64, "8GiB"),
        ("agentic 2,000 req, 8 users, 16 GiB KV/GPU", "agentic", 2000, 8, "16GiB"),
    ]  # fmt: skip
    for label, preset, n, users, kv in cases:
        for caching in (False, True):
            s, events, tokens, hit = point(preset, n, users, kv=kv, caching=caching)
            on = "on" if caching else "off"
            print(
                f"| {label} | {on} | {s:.2f} | {events:,} | {s / events * 1e6:.0f} | "
                f"{tokens:,} | {hit:.0%} |"
            )
    s, events, tokens, hit = point("multiturn-chat", 5000, 64, kv="1GiB", caching=True,
                                   offload="cpu:512GiB")  # fmt: skip
    print(
        f"| multiturn-chat 5,000 req, 64 users, 1 GiB KV/GPU + cpu:512GiB | on | {s:.2f} | "
        f"{events:,} | {s / events * 1e6:.0f} | {tokens:,} | {hit:.0%} |"
    )


if __name__ == "__main__":
    main()
