"""The disaggregated deployments `plan --disagg` considers for a GPU count, on one or several GPU
types, and what each costs per hour before it is simulated.

For a budget of GPUs and the GPU types given (`--gpu a,b,...`), each pool may run on any type:
- instance width: per pool and GPU type, the fewest GPUs (a power of two up to a node) on which
  some layout fits;
- decode layout: of that width's fitting layouts, the one with the most KV in all (the decode
  pool holds the KV);
- prefill layouts: the one with the most prompt tokens/s per instance and the one with the
  shortest prefill of one prompt (the TTFT floor), each from one full chunk
  (`max_num_batched_tokens`) through the step-time model;
- splits: x prefill instances and as many decode instances as the rest of the budget holds
  (at most `MAX_SPLITS` values of x, spread geometrically).
A split's $ per hour is its prefill GPUs x the prefill type's $/GPU-hour + its decode GPUs x the
decode type's, known before any simulation. `cluster_options` lists every option of the cheapest
cluster's search space (splits and aggregated GPU counts on every type) cheapest first, and
`walk_by_price` visits them a price at a time (`disagg_fleet` says why it may stop).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from itertools import groupby

import numpy as np

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.pools import DisaggSpec, pool_deployment, pool_plan
from capcliff.analysis.plan.fleet import price_of
from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory

MAX_SPLITS = 6
MAX_NODES = 8  # the largest cluster `plan --disagg` considers, in nodes of its GPU type


class NoSplitError(InputError):
    """No prefill and decode instance of the model fit the GPUs given: the question a split
    answers has none, while an aggregated layout of the same GPUs may still serve."""


def _fitting(dep: Deployment, gpus: int, length: int) -> list[LayoutMemory]:
    mems = [dep.memory(lay, length) for lay in enumerate_layouts(gpus, arch=dep.model.arch)]
    return [m for m in mems if m.fits and m.layout.pp == 1]


def narrowest(dep: Deployment, most: int, length: int) -> tuple[int, list[LayoutMemory]]:
    """(instance width, its fitting layouts) on `dep`'s GPU type: the narrowest power of two up
    to `most` GPUs and a node; (0, []) when none fits."""
    width = 1
    while width <= min(most, dep.hardware.gpus_per_node):
        if mems := _fitting(dep, width, length):
            return width, mems
        width *= 2
    return 0, []


def instance_layouts(dep: Deployment, budget: int, length: int) -> tuple[int, list[LayoutMemory]]:
    """(instance width, its fitting layouts): the narrowest power of two up to a node and half
    the budget; refuses a budget that cannot hold a prefill and a decode instance."""
    if budget < 2:
        raise InputError(
            f"gpus: a split needs at least 2 GPUs (a prefill and a decode instance), got {budget}"
        )
    width, mems = narrowest(dep, budget // 2, length)
    if not width:
        raise NoSplitError(
            f"disagg: no layout of up to {min(budget // 2, dep.hardware.gpus_per_node)} GPUs "
            f"fits this model, so {budget} GPUs cannot hold a prefill and a decode instance"
        )
    return width, mems


def _prefill_step_s(dep: Deployment, memory: LayoutMemory, chunk: int) -> float:
    """Seconds of one full chunk of one prompt on one replica of the layout."""
    plan = pool_plan(dep, memory.layout, 1, memory.max_model_len, role="prefill")
    return plan.pool.model.step_time_s(chunk, 1, chunk, chunk * (chunk + 1) // 2)


def prefill_layouts(dep: Deployment, mems: list[LayoutMemory], chunk: int) -> list[Layout]:
    """The layout with the most prompt tokens/s per instance (dp replicas in parallel) and the
    one with the shortest prefill of a prompt (the TTFT floor), the same layout when they agree."""
    step = {m.layout: _prefill_step_s(dep, m, chunk) for m in mems}
    # ties (the step model prices a lone chunk the same with experts whole or split in width)
    # go to expert parallelism, as SGLang's large-scale PD deployments run prefill (DeepEP)
    fastest = max(step, key=lambda lay: (lay.dp * chunk / step[lay], lay.ep, -lay.tp))
    shortest = min(step, key=lambda lay: (step[lay], lay.tp, -lay.ep))
    return [fastest] if fastest == shortest else [fastest, shortest]


def splits(instances: int) -> list[int]:
    """Prefill instance counts to try (1 .. instances - 1, at most MAX_SPLITS of them)."""
    if instances - 1 <= MAX_SPLITS:
        return list(range(1, instances))
    grid = np.geomspace(1, instances - 1, MAX_SPLITS)
    return sorted({int(x + 0.5) for x in grid})


@dataclass(frozen=True)
class _Memoised(Deployment):
    """A `Deployment` that computes each memory verdict once (the walk asks for the same
    layouts of the same GPU type again and again). `dataclasses.replace` gives a fresh memo."""

    memo: dict[tuple[Layout, int], LayoutMemory] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def memory(self, layout: Layout, max_model_len: int) -> LayoutMemory:
        """`Deployment.memory`, memoised per (layout, max_model_len)."""
        key = (layout, max_model_len)
        if (found := self.memo.get(key)) is None:
            found = self.memo[key] = super().memory(layout, max_model_len)
        return found


def memoised(dep: Deployment) -> Deployment:
    """`dep` with its memory verdicts memoised."""
    if isinstance(dep, _Memoised):
        return dep
    return _Memoised(**{f.name: getattr(dep, f.name) for f in fields(Deployment)})


@dataclass
class PoolChoices:
    """Per GPU type, memoised: its deployment, instance width and layouts of each pool role."""

    dep: Deployment
    length: int  # max_model_len, tokens
    chunk: int  # max_num_batched_tokens of one prefill step
    _deps: dict[str, Deployment] = field(default_factory=dict)
    _widths: dict[tuple[str, int], tuple[int, list[LayoutMemory]]] = field(default_factory=dict)
    _prefills: dict[tuple[str, int], list[Layout]] = field(default_factory=dict)

    def on(self, gpu: str) -> Deployment:
        """The deployment on GPU type `gpu` (its memory verdicts memoised)."""
        if gpu not in self._deps:
            self._deps[gpu] = memoised(pool_deployment(self.dep, gpu))
        return self._deps[gpu]

    def width(self, gpu: str, most: int) -> tuple[int, list[LayoutMemory]]:
        """`narrowest` on `gpu` within `most` GPUs (each width's fitting layouts memoised)."""
        dep = self.on(gpu)
        width = 1
        while width <= min(most, dep.hardware.gpus_per_node):
            if (gpu, width) not in self._widths:
                self._widths[gpu, width] = (width, _fitting(dep, width, self.length))
            if mems := self._widths[gpu, width][1]:
                return width, mems
            width *= 2
        return 0, []

    def decode(self, gpu: str, most: int) -> tuple[int, Layout | None]:
        """(width, layout) of a decode instance on `gpu`: the most KV in all."""
        width, mems = self.width(gpu, most)
        if not width:
            return 0, None
        best = max(mems, key=lambda m: (m.kv_capacity_tokens_total, -m.layout.tp))
        return width, best.layout

    def prefill(self, gpu: str, most: int) -> tuple[int, list[Layout]]:
        """(width, layouts) of a prefill instance on `gpu` (`prefill_layouts`)."""
        width, mems = self.width(gpu, most)
        if not width:
            return 0, []
        if (gpu, width) not in self._prefills:
            self._prefills[gpu, width] = prefill_layouts(self.on(gpu), mems, self.chunk)
        return width, self._prefills[gpu, width]


def split_candidates(choices: PoolChoices, budget: int, types: tuple[str, ...]) -> list[DisaggSpec]:
    """Splits of at most `budget` GPUs with each pool on any of `types` (the first is --gpu,
    named without `@` in the notation)."""
    home = choices.dep.hardware.id
    out: list[DisaggSpec] = []
    for d in types:
        width_d, decode = choices.decode(d, budget // 2)
        if decode is None:
            continue
        for p in types:
            width_p, prefills = choices.prefill(p, budget - width_d)
            if not width_p:
                continue
            for x in splits((budget - width_d) // width_p + 1):
                y = (budget - x * width_p) // width_d
                if y < 1:
                    continue
                out.extend(
                    DisaggSpec(pre, x, decode, y, prefill_gpu=None if p == home else p,
                               decode_gpu=None if d == home else d)
                    for pre in prefills
                )  # fmt: skip
    return out


def type_prices(
    dep: Deployment, types: tuple[str, ...], prices: dict[str, float]
) -> dict[str, float]:
    """$ per GPU-hour of each GPU type (`fleet.price_of`: --price-gpu-hour, else the hardware
    file's; one line naming a type without a price)."""
    return {
        g: price_of(dep.hardware if g == dep.hardware.id else get_hardware(g), prices)
        for g in types
    }


def split_usd_per_hour(spec: DisaggSpec, home: str, usd_per_gpu_hour: dict[str, float]) -> float:
    """$ per hour of `spec`: each pool's GPUs at its GPU type's $/GPU-hour (`home`: the type of
    a pool named without `@`)."""
    pre = usd_per_gpu_hour[spec.prefill_gpu or home]
    dec = usd_per_gpu_hour[spec.decode_gpu or home]
    return spec.prefill_gpus * pre + spec.decode_gpus * dec


def gpu_types(spec: DisaggSpec, home: str) -> str:
    """The GPU types a split runs on: one id, or `prefill-type+decode-type`."""
    pre, dec = spec.prefill_gpu or home, spec.decode_gpu or home
    return pre if pre == dec else f"{pre}+{dec}"


def aggregated_fits(dep: Deployment, gpus: int, length: int) -> bool:
    """Whether some layout of `gpus` GPUs holds the model (pipeline stages allowed)."""
    return any(dep.memory(lay, length).fits for lay in enumerate_layouts(gpus, arch=dep.model.arch))


def gpu_counts(gpus_per_node: int, nodes: int) -> list[int]:
    """GPU counts a cluster may have: every count up to a node, then every whole number of nodes
    up to `nodes`."""
    return [*range(1, gpus_per_node), *(gpus_per_node * n for n in range(1, nodes + 1))]


@dataclass(frozen=True)
class Option:
    """One cluster before simulation: a split, or `plan` on `gpus` GPUs of one type."""

    usd_per_hour: float
    kind: str
    gpus: int
    hardware: str
    spec: DisaggSpec | None = None  # a split; None for an aggregated option

    @property
    def price_level(self) -> float:
        """$ per hour rounded to a millionth of a dollar (options of one price together)."""
        return round(self.usd_per_hour, 6)


def cluster_options(
    choices: PoolChoices, types: tuple[str, ...], usd_per_gpu_hour: dict[str, float],
    nodes: int = MAX_NODES,
) -> list[Option]:  # fmt: skip
    """Every option of the search space, cheapest first (aggregated before disaggregated at
    one price, then fewer GPUs)."""
    home = choices.dep.hardware.id
    out: list[Option] = []
    seen: set[str] = set()
    counts = sorted({n for g in types for n in gpu_counts(choices.on(g).hardware.gpus_per_node,
                                                         nodes)})  # fmt: skip
    for n in counts:
        for g in types:
            dep = choices.on(g)
            if n in gpu_counts(dep.hardware.gpus_per_node, nodes) and aggregated_fits(
                dep, n, choices.length
            ):
                out.append(Option(n * usd_per_gpu_hour[g], "aggregated", n, g))
        for spec in split_candidates(choices, n, types) if n >= 2 else []:
            if spec.name not in seen:
                seen.add(spec.name)
                cost = split_usd_per_hour(spec, home, usd_per_gpu_hour)
                out.append(Option(cost, "disaggregated", spec.gpus, gpu_types(spec, home), spec))
    return sorted(out, key=lambda o: (o.price_level, o.kind != "aggregated", o.gpus))


def walk_by_price(options: list[Option], visit: Callable[[list[Option]], bool]) -> float | None:
    """The first price (of `options`, cheapest first) at which `visit` of that price's options
    finds one that meets; None when none does. Options above that price are never visited."""
    for price, group in groupby(options, key=lambda o: o.price_level):
        if visit(list(group)):
            return float(price)
    return None
