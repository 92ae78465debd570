"""The cheapest cluster that meets the SLOs at a rate, disaggregated or not, on any of the GPU types
given (`plan --disagg` with `--rate` and `--slo-ttft`/`--slo-tpot`, without `--gpus`/`--nodes`).

The options (`disagg_options`), for each GPU type of `--gpu a,b,...`:
- aggregated: `plan`'s best layout of n GPUs of one type, for every n from 1 up to a node and
  every whole number of nodes up to `MAX_NODES`, where some layout holds the model;
- disaggregated: the splits of those GPU counts, each pool on any of the types.
Each option's $ per hour is known before it is simulated: its GPUs of each type x that type's
$/GPU-hour (--price-gpu-hour, else the hardware file's).

The walk visits the options in order of $ per hour, all options of one price together, and stops
after the first price at which an option meets the SLOs (TTFT p99 and TPOT p99 within them, the
queue bounded, in the steady state at the rate). Why it can stop: every option not visited costs
more per hour (the lower bound on its cost is its cost, known in advance), and at one offered
rate every option that meets serves the same tokens (rate x mean output tokens), so it also
costs more per million output tokens. The answer is therefore the cheapest option of the whole
set, whatever the order the walk visits it in, and the same as simulating every option. At the
stopping price the one that meets wins; when several do, the fewer $ per million output tokens,
then aggregated (one pool, no KV transfers), then the most room under the SLOs.

Splits skipped: the prefill pool is simulated before, and apart from, the decode pool (round
robin by arrival), so a split whose prefill pool falls behind the rate
(`disagg_online.prefill_falls_behind`) fails whatever its decode pool, and so does every split
with as few instances of that prefill type and layout (each instance then gets more of the
rate). The walk skips those without simulating them and counts them.

For the comparison, the walk then goes on over the other kind's options alone, up to
`COMPARE_FACTOR` (2) times the answer's price, until one meets: the output names the cheapest
deployment of each kind that meets and what the dearer one costs more, or says that nothing of
the other kind meets up to that price (and shows the closest, the most output tokens/s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.compare import (
    AggregatedSummary,
    aggregated_at,
    offered_tokens_per_s,
)
from capcliff.analysis.disagg.fleet_reasons import (
    COMPARE_FACTOR,
    Found,
    OptionTried,
    Spent,
    aggregated_row,
    cheapest_reasons,
    split_row,
)
from capcliff.analysis.disagg.online import (
    OnlineSample,
    prefill_falls_behind,
    serves,
    slo_share,
)
from capcliff.analysis.disagg.options import (
    Option,
    PoolChoices,
    cluster_options,
    type_prices,
    walk_by_price,
)
from capcliff.analysis.disagg.plan import (
    DisaggPlanReport,
    Evaluated,
    chosen_split,
    rank_splits,
    split_plan_report,
)
from capcliff.analysis.disagg.pools import DisaggSpec
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.parallel import parallel_map
from capcliff.analysis.plan.inputs import PlanInputs, resolve_inputs
from capcliff.analysis.plan.types import Objective
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.errors import InputError

SCHEMA_VERSION = 2
SEARCH_RULE = (
    "options in order of $ per hour, each price's options together; stop after the first price "
    "where one meets the SLOs: every option not simulated costs more per hour and, serving the "
    "same offered tokens, more per million tokens"
)


class CheapestReport(BaseModel):
    """Everything `plan --disagg --rate R --slo-...` prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    model: str
    hardware: list[str]  # the GPU types searched (--gpu)
    rate_per_s: float
    usd_per_gpu_hour: dict[str, float]  # per GPU type
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    search: str  # the search rule and why it could stop
    options: int  # options in the search space
    skipped: int  # splits not simulated: a prefill pool as large was seen falling behind
    tried: list[OptionTried]  # in the order simulated (cheapest first)
    choice: str | None  # "disaggregated", "aggregated", or None when nothing meets the SLOs
    gpus: int | None
    usd_per_hour: float | None
    reasons: list[str]
    plan: DisaggPlanReport | None  # the best split found (None: no split fits any budget)
    aggregated: AggregatedSummary | None  # the best aggregated deployment found


@dataclass
class _Walk:
    """What the walk has simulated: each price's best split (its price's candidates, the chosen
    one and why, whether it meets) and each aggregated deployment."""

    splits: list[tuple[list[Evaluated], tuple[Evaluated, list[str]], bool]] = field(
        default_factory=list
    )
    aggregated: list[tuple[AggregatedSummary, bool]] = field(default_factory=list)
    # (prefill GPU type, layout) -> the most instances of it seen falling behind the rate
    behind: dict[tuple[str, str], int] = field(default_factory=dict)
    skipped: int = 0  # splits not simulated: their prefill pool falls behind (`behind`)

    def prefill_key(self, spec: DisaggSpec, home: str) -> tuple[str, str]:
        """The prefill pool's GPU type and layout."""
        return spec.prefill_gpu or home, spec.prefill.name

    def hopeless(self, option: Option, home: str) -> bool:
        """Whether a split's prefill pool has as few instances of a prefill type and layout as
        one seen falling behind (`prefill_falls_behind`): it cannot meet any SLO."""
        spec = option.spec
        if spec is None:
            return False
        return spec.prefill_instances <= self.behind.get(self.prefill_key(spec, home), 0)

    def best_split(self) -> tuple[list[Evaluated], tuple[Evaluated, list[str]], bool] | None:
        """The split that meets (the cheapest), else the one with the most output tokens/s."""
        if not self.splits:
            return None
        return max(self.splits, key=lambda s: (s[2], _tok_s(s[1][0])))

    def best_aggregated(self) -> tuple[AggregatedSummary | None, bool]:
        """The cheapest aggregated deployment that meets (then fewer $ per million tokens), else
        the one with the most output tokens/s."""
        if not self.aggregated:
            return None, False
        agg, ok = max(
            self.aggregated,
            key=lambda a: (
                (a[1], -a[0].usd_per_hour, -_usd_mtok(a[0]))
                if a[1]
                else (False, a[0].output_throughput_tok_s, -a[0].usd_per_hour)
            ),
        )
        return agg, ok


def _tok_s(ev: Evaluated) -> float:
    assert ev.state is not None
    return ev.state.output_tok_s


def _usd_mtok(agg: AggregatedSummary) -> float:
    value = agg.usd_per_million_output_tokens
    return float("inf") if value is None else value


@dataclass(frozen=True)
class _Context:
    """The fixed inputs of one walk."""

    dep: Deployment
    choices: PoolChoices
    workload: WorkloadChoice
    inputs: PlanInputs
    slo: Slo
    seed: int
    prices: dict[str, float]
    usd_per_gpu_hour: dict[str, float]
    progress: Callable[[], None] | None


Simulated = AggregatedSummary | None | list[Evaluated]


def simulate_option(ctx: _Context, option: Option) -> Simulated:
    """One option simulated: a split at each decode cap on the first sample (`rank_splits`), or
    `plan`'s best aggregated layout of its GPUs in its steady state (`aggregated_at`)."""
    if option.spec is not None:
        sample = OnlineSample.of(ctx.workload, ctx.seed)
        return rank_splits(ctx.dep, [option.spec], ctx.inputs, Objective.GOODPUT, ctx.slo,
                           sample, ctx.prices, ctx.progress)  # fmt: skip
    return aggregated_at(ctx.choices.on(option.hardware), gpus=option.gpus,
                         workload=ctx.workload, objective=Objective.GOODPUT.value, slo=ctx.slo,
                         seed=ctx.seed, price=ctx.usd_per_gpu_hour[option.hardware],
                         progress=ctx.progress, grow_behind=False)  # fmt: skip


def _simulate_level(ctx: _Context, level: list[Option], jobs: int) -> list[Simulated]:
    """Every option of one price, over up to `jobs` worker processes (`parallel_map`: each
    simulation is deterministic, so the results are a serial run's)."""
    if jobs <= 1 or len(level) < 2:
        return [simulate_option(ctx, o) for o in level]
    out = parallel_map(partial(simulate_option, replace(ctx, progress=None)), level, jobs)
    if (tick := ctx.progress) is not None:
        for _ in level:
            tick()
    return out


def _visit(ctx: _Context, level: list[Option], walk: _Walk, jobs: int) -> list[OptionTried]:
    """Simulate the options of one price and record them: each aggregated one, and the splits'
    best (ranked on the first sample; grown when it serves the rate there)."""
    home = ctx.dep.hardware.id
    kept = [o for o in level if not walk.hopeless(o, home)]
    walk.skipped += len(level) - len(kept)
    rows, evaluated = [], []
    for option, found in zip(kept, _simulate_level(ctx, kept, jobs), strict=True):
        if isinstance(found, list):
            evaluated += found
            continue
        rows.append(aggregated_row(option, found, ctx.slo))
        if found is not None:
            walk.aggregated.append((found, rows[-1].meets))
    for ev in evaluated:
        if prefill_falls_behind(ev.result):
            key = walk.prefill_key(ev.spec, home)
            walk.behind[key] = max(walk.behind.get(key, 0), ev.spec.prefill_instances)
    if evaluated:
        chosen, ok = _grown_best(ctx, evaluated)
        best = chosen[0]
        walk.splits.append((evaluated, chosen, ok))
        offered = offered_tokens_per_s(ctx.workload)
        rows.append(split_row(level, evaluated, best, ok, home, offered))
    return rows


GROW_NEAR = 2.0  # a first sample within twice the SLO's limits may yet meet them once grown


def _grown_best(
    ctx: _Context, evaluated: list[Evaluated]
) -> tuple[tuple[Evaluated, list[str]], bool]:
    """The best split of one price, grown until it settles when it serves the rate on the first
    sample or misses it by less than `GROW_NEAR` x a limit (a first sample's p99 and queue are
    noisy), and whether it serves it grown. When growing shows it does not, the next split that
    served on the first sample is grown in turn."""
    sample = OnlineSample.of(ctx.workload, ctx.seed)
    left = list(evaluated)
    while True:
        first = max(left, key=lambda ev: ev.key)
        assert first.state is not None
        near = bool(first.key[0]) or slo_share(first.state, ctx.slo) <= GROW_NEAR
        chosen = chosen_split(ctx.dep, left, sample, ctx.slo, grow_failing=near)
        best = chosen[0]
        assert best.state is not None
        ok = serves(best.state, ctx.slo)
        left = [ev for ev in left if (ev.spec, ev.cap) != (best.spec, best.cap)]
        if ok or not best.key[0] or not any(ev.key[0] for ev in left):
            return chosen, ok


def cheapest_cluster(
    dep: Deployment,
    *,
    workload: WorkloadChoice,
    slo: Slo,
    seed: int,
    prices: dict[str, float] | None = None,
    progress: Callable[[], None] | None = None,
    types: tuple[str, ...] = (),
    jobs: int = 1,
) -> CheapestReport:
    """The cheapest cluster per hour (then per million output tokens) on which a split or an
    aggregated layout meets `slo` at the offered rate, each pool on any of `dep`'s GPU type and
    `types`, at the hardware files' $/GPU-hour or `prices`' (the walk: this module's doc); each
    price's options simulated over up to `jobs` worker processes."""
    if workload.rate_per_s is None:
        raise InputError("rate: the cheapest cluster needs --rate (requests/s) and an SLO")
    prices = prices or {}
    types = tuple(dict.fromkeys((dep.hardware.id, *types)))
    usd = type_prices(dep, types, prices)
    inputs = resolve_inputs(dep, workload, seed=seed)
    choices = PoolChoices(dep, inputs.max_model_len, inputs.config.max_num_batched_tokens)
    dep = choices.on(dep.hardware.id)  # memory verdicts memoised for the whole walk
    ctx = _Context(dep, choices, workload, inputs, slo, seed, prices, usd, progress)
    options = cluster_options(choices, types, usd)
    walk, tried = _Walk(), list[OptionTried]()

    def visit(level: list[Option]) -> bool:
        rows = _visit(ctx, level, walk, jobs)
        tried.extend(rows)
        return any(t.meets for t in rows)

    stop = walk_by_price(options, visit)
    if stop is not None:
        tried += _other_kind(ctx, options, walk, stop, jobs)
    return _report(ctx, types, options, tried, walk, stop)


def _other_kind(
    ctx: _Context, options: list[Option], walk: _Walk, stop: float, jobs: int
) -> list[OptionTried]:
    """After the answer at `stop` $/hour: the other kind's options alone, cheapest first, up to
    `COMPARE_FACTOR` x `stop`, until one meets (nothing when both kinds met at `stop`)."""
    split_ok = any(ok for *_, ok in walk.splits)
    agg_ok = any(ok for _, ok in walk.aggregated)
    if split_ok == agg_ok:
        return []
    other = "aggregated" if split_ok else "disaggregated"
    bound = round(stop * COMPARE_FACTOR, 6)
    rest = [o for o in options if o.kind == other and stop < o.price_level <= bound]
    rows: list[OptionTried] = []

    def visit(level: list[Option]) -> bool:
        found = [r.model_copy(update={"compared_only": True}) for r in _visit(ctx, level, walk,
                                                                            jobs)]  # fmt: skip
        rows.extend(found)
        return any(r.meets for r in found)

    walk_by_price(rest, visit)
    return rows


def _report(
    ctx: _Context, types: tuple[str, ...], options: list[Option], tried: list[OptionTried],
    walk: _Walk, stop: float | None,
) -> CheapestReport:  # fmt: skip
    slo, workload = ctx.slo, ctx.workload
    assert workload.rate_per_s is not None
    plan = None
    agg, agg_ok = walk.best_aggregated()
    split = walk.best_split()
    if split is not None:
        evaluated, chosen, _ = split
        plan = split_plan_report(
            ctx.dep, gpus=chosen[0].spec.gpus, workload=workload, inputs=ctx.inputs,
            goal=Objective.GOODPUT, slo=slo, seed=ctx.seed, evaluated=evaluated, chosen=chosen,
            agg=agg, prices=ctx.prices,
        )  # fmt: skip
    split_ok = split is not None and split[2]
    choice, gpus = _winner(plan, (split_ok, agg, agg_ok), stop)
    offered = offered_tokens_per_s(workload) or 0.0
    spent = Spent(options, tried, stop, workload.rate_per_s, offered, list(ctx.usd_per_gpu_hour),
                  walk.skipped)  # fmt: skip
    return CheapestReport(
        schema_version=SCHEMA_VERSION, model=ctx.dep.model.id, hardware=list(types),
        rate_per_s=workload.rate_per_s, usd_per_gpu_hour=ctx.usd_per_gpu_hour,
        slo_ttft_s=_limit(slo.ttft_s), slo_tpot_s=_limit(slo.tpot_s), search=SEARCH_RULE,
        options=len(options), skipped=walk.skipped, tried=tried, choice=choice, gpus=gpus,
        usd_per_hour=stop if choice else None,
        reasons=cheapest_reasons(spent, plan, (split_ok, agg, agg_ok)),
        plan=plan, aggregated=agg,
    )  # fmt: skip


def _winner(
    plan: DisaggPlanReport | None, found: Found, stop: float | None
) -> tuple[str | None, int | None]:
    """(kind, GPUs) of the answer: at the stopping price, the one that meets; when both kinds
    do, `plan`'s verdict (`winner_by_cost`: fewer $ per million tokens, else aggregated)."""
    split_ok, agg, agg_ok = found
    if stop is None:
        return None, None
    if plan is not None and split_ok and (not agg_ok or plan.winner == "disaggregated"):
        return "disaggregated", plan.disaggregated.gpus
    assert agg is not None
    return "aggregated", agg.gpus


def _limit(value: float) -> float | None:
    return None if value == float("inf") else value
