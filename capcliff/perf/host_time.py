"""Host (CPU) time of one engine step that grows with the sequences it schedules, and how it
meets the GPU's time.

host = fixed + per_seq x scheduled sequences                      (seconds per step)
step = GPU + host            (serial: the engine schedules, prepares inputs and processes the
                              previous step's outputs between two forward passes)
step = max(GPU, host)        (overlapped: an overlap / async scheduler does that work for step
                              N + 1 while the GPU runs step N)

One host per replica: TP and PP ranks share their replica's scheduler, each DP replica (and each
attention-DP rank, which runs a scheduler of its own) has its own, so the simulator applies the
host time per replica step. The fixed part is each profile's `host_overhead_s`; the per-sequence
part is `host_per_seq_s` (perf/profiles.py), from the measurements below.
"""

from __future__ import annotations

# vLLM V1 without async scheduling, measured: GPUStack's performance lab ran the same deployment
# twice, gpt-oss-20b on one H100 SXM, vLLM 0.11.0, 1000 chat requests of 128 input and 4 output
# tokens sent at once, the second time with `--async-scheduling` (benchmarks/data/
# public_serving_rows.csv P216, P217; github.com/gpustack/gpustack docs/performance-lab/
# gpt-oss-20b/h100.md @1f37f1b8). Async scheduling moves no GPU work, it overlaps the engine
# core's host work with the forward pass, so the TPOT it removes, 178.91 - 75.14 = 103.77 ms, is
# host time per step that the serial engine did not hide. At most 1000 requests were running, so
# per running request it is at least 103.77 us: a lower bound, measured on a burst in which every
# request is new (admission, prefix-block hashing and the finish of each request fall in the
# same steps), not on steady decoding. Where that work sits in the source: EngineCore.step()
# (vllm/v1/engine/core.py) runs scheduler.schedule(), execute_model() and
# scheduler.update_from_output() one after another, and the Scheduler (vllm/v1/core/sched/
# scheduler.py) loops over every running request in both.
VLLM_V1_HOST_PER_SEQ_S = (178.91 - 75.14) * 1e-3 / 1000
VLLM_V1_HOST_PER_SEQ_SOURCE = (
    "GPUStack P216/P217 (gpt-oss-20b, 1 x H100, vLLM 0.11.0, 1000 x 128/4 at once): "
    "--async-scheduling cut TPOT 178.91 -> 75.14 ms, >= 103.77 us per running request per step "
    "(lower bound: <= 1000 running; a burst of new requests)"
)


def host_step_s(*, fixed_s: float, per_seq_s: float, seqs: float) -> float:
    """Host seconds of one step that schedules `seqs` sequences: fixed_s + per_seq_s x seqs."""
    return fixed_s + per_seq_s * seqs


def step_with_host_s(gpu_s: float, host_s: float, *, overlapped: bool) -> float:
    """Seconds of a step whose GPU work takes `gpu_s` and whose host work takes `host_s`:
    max(gpu_s, host_s) under an overlap scheduler, else gpu_s + host_s."""
    return max(gpu_s, host_s) if overlapped else gpu_s + host_s
