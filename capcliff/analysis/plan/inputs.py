"""The fixed inputs of a plan (requests, context length, simulator settings), resolved once."""

from __future__ import annotations

from dataclasses import dataclass

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads, reference_workloads
from capcliff.sim.config import SimConfig
from capcliff.sim.traffic.workload import Requests


@dataclass(frozen=True)
class PlanInputs:
    """The fixed inputs of a plan, resolved once."""

    requests: Requests
    workload_label: str
    max_model_len: int
    config: SimConfig
    # the fixed reference sample of the same workload (`workloads.reference_workloads`): what
    # the analytic p99 cliff comes from, whatever the seed and number of requests
    reference: Requests


def resolve_inputs(dep: Deployment, workload: WorkloadChoice, *, seed: int) -> PlanInputs:
    """Requests, context length and simulator settings of a plan."""
    label, series = plan_workloads(workload, seed)
    requests = series[0][1]
    length = dep.context_length(requests, bound=workload.longest_request_bound)
    reference = reference_workloads(workload)[0][1]
    return PlanInputs(requests, label, length, dep.sim_config(length), reference)
