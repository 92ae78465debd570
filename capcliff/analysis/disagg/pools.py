"""A disaggregated deployment (`--disagg 1p:tp8,3d:dp8-ep8`) -> the two-pool simulator's inputs.

`xp:LAYOUT` is x prefill instances, each in LAYOUT; `yd:LAYOUT` is y decode instances. A part may
name its own GPU, `1p:tp8@h100-sxm` (the other pool runs on --gpu): the pool's memory, step
times and price are that GPU's. Instances
are placed on consecutive GPUs, prefill first, so an instance of a node's width sits on one node.
Pools on different GPU types sit on different nodes: every transfer then crosses the scale-out
network at the slower of the two NICs, with the longer of the two latencies.
Each instance has `layout.dp` simulated replicas (attention-DP ranks step in lockstep). The KV a
request moves is its prompt's whole-model KV (`kv_bytes_for_context`, one copy: MLA's latent is
sent once, not once per TP rank). The fabric comes from the hardware file: NVLink one-way per GPU
= scaleup_bw_gb_s_bidir / 2, RDMA = scaleout_bw_gb_s_per_gpu, latencies as given there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.analysis.setting_refusals import refuse_total_memory_across_gpus
from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import MAX_GPUS, Layout, parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import CapcliffError, InputError
from capcliff.memory.kv import kv_bytes_for_context
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.disagg.closed_loop import Round, simulate_clients
from capcliff.sim.disagg.kv_transfer import DEFAULT_TRANSFER_OVERHEAD_S, Fabric, Path
from capcliff.sim.disagg.pools import DisaggResult, Pool, run_pool, simulate_disaggregated
from capcliff.sim.disagg.resume import ResumedRounds
from capcliff.sim.traffic.workload import Requests
from capcliff.units import GB

FloatArray = npt.NDArray[np.float64]
US = 1e-6
MS = 1e-3
# ASCII digits, at most 9: an Arabic-Indic digit one (U+0661) read as 1, 5,000 digits crashed int()
_PART_RE = re.compile(r"^([0-9]{1,9})([pd]):([^@]+)(?:@(.+))?$")
_HELP = (
    "write e.g. 1p:tp8,3d:dp8-ep8 (prefill instances p and decode instances d, each a layout, "
    "optionally on its own GPU: 1p:tp8@h100-sxm)"
)


@dataclass(frozen=True)
class DisaggSpec:
    """x prefill instances of one layout and y decode instances of another."""

    prefill: Layout
    prefill_instances: int
    decode: Layout
    decode_instances: int
    prefill_gpu: str | None = None  # a hardware id; None: the deployment's (--gpu)
    decode_gpu: str | None = None

    @property
    def prefill_gpus(self) -> int:
        """GPUs of the prefill pool."""
        return self.prefill.gpus * self.prefill_instances

    @property
    def decode_gpus(self) -> int:
        """GPUs of the decode pool."""
        return self.decode.gpus * self.decode_instances

    @property
    def gpus(self) -> int:
        """GPUs of both pools."""
        return self.prefill_gpus + self.decode_gpus

    @property
    def name(self) -> str:
        """The notation, e.g. `1p:tp8,3d:dp8-ep8`."""
        pre = f"@{self.prefill_gpu}" if self.prefill_gpu else ""
        dec = f"@{self.decode_gpu}" if self.decode_gpu else ""
        return (
            f"{self.prefill_instances}p:{self.prefill.name}{pre},"
            f"{self.decode_instances}d:{self.decode.name}{dec}"
        )


def parse_disagg(text: str) -> DisaggSpec:
    """Read `1p:tp8,3d:dp8-ep8` (one prefill part and one decode part, in either order)."""
    parts: dict[str, tuple[int, Layout, str | None]] = {}
    for raw in text.strip().lower().split(","):
        match = _PART_RE.match(raw.strip())
        if match is None or match.group(2) in parts or int(match.group(1)) < 1:
            raise InputError(f"disagg: cannot read {text!r:.60}; {_HELP}")
        try:
            layout = parse_layout(match.group(3))
        except InputError:
            raise InputError(
                f"disagg: cannot read layout {match.group(3)!r:.60}; {_HELP}"
            ) from None
        gpu = match.group(4)
        if gpu is not None:
            _check_gpu(gpu)
        parts[match.group(2)] = (int(match.group(1)), layout, gpu)
    if set(parts) != {"p", "d"}:
        raise InputError(f"disagg: {text!r} needs one prefill part and one decode part; {_HELP}")
    (np_, pre, pre_gpu), (nd, dec, dec_gpu) = parts["p"], parts["d"]
    gpus = np_ * pre.gpus + nd * dec.gpus
    if gpus > MAX_GPUS:
        raise InputError(
            f"disagg: {text!r} spans {gpus:,} GPUs ({np_:,} prefill and {nd:,} decode "
            f"replicas), past the {MAX_GPUS:,} one deployment may span; give fewer replicas"
        )
    return DisaggSpec(pre, np_, dec, nd, prefill_gpu=pre_gpu, decode_gpu=dec_gpu)


def check_adp_balance(dep: Deployment, spec: DisaggSpec) -> None:
    """TensorRT-LLM's attention-DP balance is refused for named pools that have no attention DP
    (as for a named aggregated layout): it would be dropped unsaid."""
    if dep.adp_balance is None or spec.prefill.attention_dp or spec.decode.attention_dp:
        return
    raise InputError(
        f"attention_dp_balance: neither pool of {spec.name} has attention DP; it balances "
        "attention-DP ranks (a pool such as 1d:dpa8 or 1d:dp8-ep8), or leave it off"
    )


def _check_gpu(gpu: str) -> None:
    try:
        get_hardware(gpu)
    except CapcliffError as err:
        raise InputError(f"disagg: {err}") from None


def pool_deployment(dep: Deployment, gpu: str | None) -> Deployment:
    """`dep` as a pool's worker on another GPU type (the same model and settings; `dep`'s own
    for None or its GPU): its budget marked PD disaggregation, which SGLang's default
    mem_fraction_static reads (engines.sglang_piecewise_allowed)."""
    if gpu is not None and gpu != dep.hardware.id:
        refuse_total_memory_across_gpus(dep.settings, [dep.hardware.id, gpu])
        dep = dep.on(get_hardware(gpu))
    return replace(dep, budget=replace(dep.budget, pd_disaggregation=True))


def check_pool_calibration(dep: Deployment, spec: DisaggSpec) -> Deployment:
    """`dep` once its calibration is checked against each pool's layout and GPU type: a file
    fitted on another layout is refused (forced: said) as for a named aggregated layout, never
    applied to a pool unsaid (`sweep --disagg 1p:tp2,1d:tp2` applied a tp1 file silently)."""
    if dep.settings.calibration is None:
        return dep
    pools = ((spec.prefill, spec.prefill_gpu), (spec.decode, spec.decode_gpu))
    checked = [
        dep.on(dep.hardware if gpu is None else get_hardware(gpu), layout=layout.name)
        for layout, gpu in pools
    ]
    return dep.with_warnings_of(checked)


def fabric_between(
    prefill: HardwareSpec, decode: HardwareSpec, *, overhead_ms: float | None = None
) -> Fabric:
    """`fabric_of` for pools on one GPU type; for two types (on different nodes), the scale-out
    network only, at the slower NIC per GPU and the longer latency (modeled: the transfer runs
    at the pace of its slower end)."""
    if prefill.id == decode.id:
        return fabric_of(prefill, overhead_ms=overhead_ms)
    sender, receiver = (fabric_of(h, overhead_ms=overhead_ms) for h in (prefill, decode))
    ends = (sender.scaleout, receiver.scaleout)
    names = sorted({e.name for e in ends})
    path = Path(
        " -> ".join(names),
        min(e.bytes_per_s_per_gpu for e in ends),
        max(e.latency_s for e in ends),
    )
    return replace(sender, scaleup=path, scaleout=path)


def fabric_of(hardware: HardwareSpec, *, overhead_ms: float | None = None) -> Fabric:
    """NVLink inside the scale-up domain, RDMA between domains, from the hardware file; the
    per-transfer overhead given, else `DEFAULT_TRANSFER_OVERHEAD_S`."""
    if hardware.scaleout_bw_gb_s_per_gpu is None:
        raise InputError(f"hardware: {hardware.id} has no scaleout_bw_gb_s_per_gpu for KV transfer")
    scaleup = Path(
        hardware.scaleup_fabric,
        hardware.scaleup_bw_gb_s_bidir / 2 * GB,
        (hardware.scaleup_latency_us or 0.0) * US,
    )
    scaleout = Path(
        hardware.scaleout_fabric or "RDMA",
        hardware.scaleout_bw_gb_s_per_gpu * GB,
        (hardware.scaleout_latency_us or 0.0) * US,
    )
    overhead_s = DEFAULT_TRANSFER_OVERHEAD_S if overhead_ms is None else overhead_ms * MS
    return Fabric(scaleup, scaleout, domain_gpus=hardware.scaleup_domain_gpus,
                  overhead_s=overhead_s)  # fmt: skip


def kv_bytes_of_prompts(dep: Deployment, prompts: npt.NDArray[np.int64]) -> FloatArray:
    """Whole-model KV bytes of a prompt of each length in `prompts` (tokens), one copy."""
    per_prompt = [
        kv_bytes_for_context(dep.model.arch, prompt, kv_dtype=dep.kv_dtype)
        for prompt in prompts.tolist()
    ]
    return np.array(per_prompt, dtype=np.float64)


@dataclass(frozen=True)
class PoolPlan:
    """One pool resolved: memory verdict of its layout and the simulator's pool."""

    memory: LayoutMemory
    pool: Pool
    hardware: HardwareSpec  # the GPU type the pool runs on


def pool_plan(
    dep: Deployment, layout: Layout, instances: int, max_model_len: int, *, role: str
) -> PoolPlan:
    """A pool of `instances` x `layout`; refuses a layout that does not fit."""
    memory = dep.memory(layout, max_model_len)
    if not memory.fits:
        raise InputError(f"disagg: the {role} layout {layout.name}: {memory.reason}")
    capacity, steps = replica_models(dep, memory)
    ranks = layout.dp if layout.attention_dp else 1
    pool = Pool(
        model=steps,
        capacity=capacity,
        config=dep.sim_config(max_model_len),
        replicas=instances * layout.dp,
        gpus_per_replica=layout.gpus_per_replica,
        lockstep_ranks=ranks,
    )
    return PoolPlan(memory, pool, dep.hardware)


def pools_of(dep: Deployment, spec: DisaggSpec, max_model_len: int) -> tuple[PoolPlan, PoolPlan]:
    """(prefill, decode) pools of `spec`, each on its GPU type."""
    pre = pool_plan(pool_deployment(dep, spec.prefill_gpu), spec.prefill,
                    spec.prefill_instances, max_model_len, role="prefill")  # fmt: skip
    dec = pool_plan(pool_deployment(dep, spec.decode_gpu), spec.decode, spec.decode_instances,
                    max_model_len, role="decode")  # fmt: skip
    return pre, dec


def run_disagg(
    dep: Deployment,
    pools: tuple[PoolPlan, PoolPlan],
    requests: Requests,
    *,
    concurrency: int | None = None,
    points: int = 512,
    observe: Callable[[DisaggResult], None] | None = None,
    resume: bool = True,
) -> DisaggResult:
    """Simulate `requests` on the pools; `concurrency` caps running requests in the decode pool
    (split over its replicas, as `sweep` caps an aggregated deployment). `observe` is given
    every two-pool run simulated (closed-loop clients: every round of the fixed point, each
    resumed from the round before unless `resume` is False: the same runs, from t = 0)."""
    pre, dec = pools
    decode = dec.pool
    if concurrency is not None:
        decode = replace(decode, config=config_at(decode.config, concurrency, decode.replicas))
    # a prompt's KV bytes by its length: the closed loop simulates subsets of the requests
    prompts = np.unique(requests.input_tokens)
    per_prompt = kv_bytes_of_prompts(dep, prompts)
    fabric = fabric_between(pre.hardware, dec.hardware,
                            overhead_ms=dep.settings.kv_transfer_overhead_ms)  # fmt: skip

    rounds = ResumedRounds(requests) if requests.closed_loop and resume else None

    def simulate(timed: Requests, rnd: Round | None = None) -> DisaggResult:
        kv_bytes = per_prompt[np.searchsorted(prompts, timed.input_tokens)]
        runner = run_pool if rounds is None or rnd is None else rounds.runner(rnd)
        result = simulate_disaggregated(
            timed, kv_bytes, prefill=pre.pool, decode=decode, fabric=fabric, points=points,
            pool_runner=runner,
        )  # fmt: skip
        if observe is not None:
            observe(result)
        return result

    return simulate_clients(requests, simulate) if requests.closed_loop else simulate(requests)


def cap_never_binds(
    decode: Pool, concurrency: int, most_held: int, other: int | None = None
) -> bool:
    """Whether `decode` capped at `concurrency` (`config_at`) runs exactly as capped at `other`
    (None: uncapped, the engine's default seats), given runs at `concurrency` in which no
    replica held more than `most_held` requests (`most_held`): a cap changes only the seats
    (max_num_seqs) where it leaves the token budget as it was, and every use of them compares
    them with running or decoding requests, which never reached either (so each comparison
    comes out the same); the step guard that divides by them passed with the fewer."""
    capped = config_at(decode.config, concurrency, decode.replicas)
    to = decode.config if other is None else config_at(decode.config, other, decode.replicas)
    same_otherwise = replace(capped, max_num_seqs=to.max_num_seqs) == to
    return same_otherwise and most_held < min(capped.max_num_seqs, to.max_num_seqs)


def note_most_held(held: list[int], run: DisaggResult) -> None:
    """Append the most requests any decode replica of `run` held at once (an `observe` of
    `run_disagg`, with `held` bound)."""
    held.append(run.decode_most_held)
