"""The event loop's cost per event on the runs a command simulates: prints figures, asserts nothing.

`record` runs a `capcliff` command (in this process, `--jobs 1` advised) and pickles the inputs of
every replica it builds (`ReplicaSim`: requests, step-time model, KV capacity, settings, policy)
and how many finished requests each was run to; `replay` builds the same replicas again from the
current source and runs each that far, printing the CPU seconds, the events (the recorder's
samples: an exact step, or a run of decode steps) and a digest of every result's timings and
samples, which a change to the loop must leave alone. Under valgrind's callgrind the replay gives
an instruction count that does not move with the machine's load (`--every 8`: one run in eight).

Run: CAPCLIFF_SIM_CORE=python PYTHONPATH=. python benchmarks/loop_replay.py record runs.pkl \\
         plan llama-3.1-70b --rate 20 ... --jobs 1
     ... python benchmarks/loop_replay.py replay runs.pkl [--every N]
"""

from __future__ import annotations

import atexit
import hashlib
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from capcliff.sim.loop import replica


def record(out: Path, argv: list[str]) -> None:
    """Run `capcliff argv`, then pickle [(constructor arguments, requests finished)] to `out`."""
    cls = replica.ReplicaSim
    runs: list[list[Any]] = []
    init, run_until = cls.__init__, cls.run_until

    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.recorded = [(args, kwargs), 0]
        runs.append(self.recorded)

    def recording_run_until(self: Any, done: int) -> None:
        self.recorded[1] = max(self.recorded[1], done)
        run_until(self, done)

    cls.__init__, cls.run_until = recording_init, recording_run_until  # type: ignore[method-assign]
    atexit.register(lambda: out.write_bytes(pickle.dumps(runs)))
    from capcliff.cli.main import main

    sys.argv = ["capcliff", *argv]
    main()


def replay(path: Path, every: int) -> None:
    """Run every `every`-th recorded replica again; print CPU seconds, events and a digest."""
    runs = pickle.loads(path.read_bytes())[::every]
    digest, events, steps, requests = hashlib.sha256(), 0, 0, 0
    start = time.process_time()
    for (args, kwargs), done in runs:
        sim = replica.ReplicaSim(*args, **kwargs)
        sim.run_until(done)
        r = sim.result()
        events, steps, requests = events + r.events, steps + r.steps, requests + len(args[0])
        for values in (r.first_token_s, r.finish_s, r.series_s, r.series_used_blocks):
            digest.update(values.tobytes())
        for values in (r.series_running, r.series_waiting, r.series_hbm_utilization):
            digest.update(values.tobytes())
        digest.update(repr((r.busy_s, r.used_block_seconds, r.peak_used_blocks)).encode())
        digest.update(repr((r.blocked_s, r.first_saturation, r.first_preemption)).encode())
    cpu_s = time.process_time() - start
    print(f"runs {len(runs)}  requests {requests:,}  events {events:,}  steps {steps:,}")
    print(f"cpu {cpu_s:.2f} s  {cpu_s / max(events, 1) * 1e6:.2f} us/event")
    print(f"digest {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record(Path(sys.argv[2]), sys.argv[3:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "replay":
        n = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--every" else 1
        replay(Path(sys.argv[2]), n)
    else:
        sys.exit(__doc__)
