"""A fitting layout's replica as the simulator sees it: its KV capacity, its step-time model, the
profile label its predictions assume, and the analytic cliff of a workload on it."""

from __future__ import annotations

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.solver import analytic_cliff_percentile
from capcliff.memory.budget import EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.perf.communication import MoEExchange
from capcliff.perf.profiles import profile_label, step_profile
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity
from capcliff.sim.traffic.workload import Requests

CLIFF_PERCENTILE = 99.0


def replica_models(
    dep: Deployment, memory: LayoutMemory, step_terms: dict[str, float] | None = None
) -> tuple[KVCapacity, StepTimeModel]:
    """A fitting layout's KV capacity per replica and its step-time model under the budget's
    engine profile, with the deployment's step-time terms (BudgetSettings.step_time_terms) or
    `step_terms` in their place."""
    engine = memory.stages[0].engine if memory.stages else EngineName.VLLM
    terms = dict(dep.budget.step_time_terms) if step_terms is None else step_terms
    profile, fitted = step_profile(engine, terms, dep.settings.engine_version)
    # A DeepEP backend dispatches and combines; otherwise the layout's default exchange.
    deepep = dep.settings.all2all_backend is not AllToAllBackend.NONE
    steps = step_time_model(
        dep.model.arch, dep.hardware, memory.layout, scheme=dep.scheme, kv_dtype=dep.kv_dtype,
        profile=profile, fitted=fitted, exchange=MoEExchange.ALL_TO_ALL if deepep else None,
    )  # fmt: skip
    return dep.capacity(memory), steps


def step_label(dep: Deployment) -> str:
    """The step-time profile a deployment's predictions assume: engine, release, modeled or
    calibrated (`profiles.profile_label`)."""
    terms = dict(dep.budget.step_time_terms)
    return profile_label(dep.settings.engine, terms, dep.settings.engine_version)


def p99_analytic_cliff(requests: Requests, capacity: KVCapacity, dp: int) -> int:
    """Requests at their p99 peak KV that all replicas hold at once."""
    return analytic_cliff_percentile(
        requests,
        blocks_per_replica=capacity.blocks,
        block_size=capacity.block_size,
        percentile=CLIFF_PERCENTILE,
        dp=dp,
    )
