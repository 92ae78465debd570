"""One answer per deployment: `plan`, `sweep` and `check` on the same inputs, and `plan` over seeds.

For each scenario (dense and MoE, online and batch) this runs `capcliff plan` with seeds 0-4 and
prints the recommended layout and cap per seed (or that the options tie); then, for seed 0's
recommendation, `capcliff sweep` of that layout at that cap (and, online, at the sustained rate)
on two seeds, and `capcliff check` of a spec asserting the plan's figures, and prints the figures
side by side. Asserts nothing (the tests assert the rules); prints Markdown for docs/serving.md.

Run: python benchmarks/agreement.py [scenario-name ...]   (all five take several minutes)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SEEDS = (0, 1, 2, 3, 4)
SCENARIOS: dict[str, dict[str, Any]] = {
    "llama-70b-fp8-h100-chat": {
        "model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 8,
        "args": ["--weight-dtype", "fp8", "--isl", "2048", "--osl", "300", "--rate", "15",
                 "--slo-ttft", "1.5", "--slo-tpot", "0.06"],
        "online": True,
    },
    "qwen32b-reasoning-default": {
        "model": "deepseek-r1-distill-qwen-32b", "gpu": "h200-sxm", "gpus": 8,
        "args": [], "online": True,
    },
    "llama-8b-h200-online-slo": {
        "model": "llama-3.1-8b", "gpu": "h200-sxm", "gpus": 1,
        "args": ["--isl", "1024", "--osl", "256", "--rate", "5", "--slo-ttft", "5",
                 "--slo-tpot", "0.012"],
        "online": True,
    },
    "qwen3-30b-moe-batch": {
        "model": "qwen3-30b-a3b", "gpu": "h200-sxm", "gpus": 8,
        "args": ["--isl", "1000", "--osl", "2000", "--arrival", "batch", "--num-requests", "2000"],
        "online": False,
    },
    "deepseek-r1-4-nodes": {
        "model": "deepseek-r1", "gpu": "h200-sxm", "gpus": 32,
        "args": ["--isl", "8192", "--osl", "1024", "--rate", "8", "--slo-ttft", "3",
                 "--slo-tpot", "0.06"],
        "online": True,
    },
}  # fmt: skip


def _capcliff(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "capcliff", *args, "--format", "json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode not in (0, 1):
        raise RuntimeError(f"capcliff {' '.join(args)}: {out.stderr.strip()}")
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def _plan(s: dict[str, Any], seed: int) -> dict[str, Any]:
    return _capcliff(
        "plan", s["model"], "--gpu", s["gpu"], "--gpus", str(s["gpus"]), *s["args"],
        "--seed", str(seed),
    )  # fmt: skip


def _row(plan: dict[str, Any]) -> dict[str, Any] | None:
    rec = plan.get("recommended")
    if not rec:
        return None
    row: dict[str, Any] = next(r for r in plan["layouts"] if r["name"] == rec["layout"])
    return row


def _workload_args(s: dict[str, Any]) -> list[str]:
    """The plan's workload flags without the SLO and load ones (sweep gets its own)."""
    skip = {"--rate", "--slo-ttft", "--slo-tpot"}
    out: list[str] = []
    args = s["args"]
    i = 0
    while i < len(args):
        if args[i] in skip:
            i += 2
            continue
        out.append(args[i])
        i += 1
    if "--num-requests" not in out:
        out += ["--num-requests", "2000"]
    if "--isl" not in out and "--workload" not in out:
        out += ["--workload", "reasoning"]  # plan's default workload
    return out


def _sweep(s: dict[str, Any], layout: str, cap: int, rate: float | None, seed: int) -> Any:
    load = ["--rate", f"{rate:.6g}"] if rate else []
    return _capcliff(
        "sweep", s["model"], "--gpu", s["gpu"], "--gpus", str(s["gpus"]), "--layout", layout,
        *_workload_args(s), *load, "--concurrency", str(cap), "--seed", str(seed),
    )["series"][0]["points"][0]  # fmt: skip


def _seed_line(name: str, plans: list[dict[str, Any]]) -> str:
    picks = []
    for seed, plan in zip(SEEDS, plans, strict=True):
        rec = plan.get("recommended") or {}
        tie = f" (ties {'/'.join(rec['tie'])})" if rec.get("tie") else ""
        picks.append(f"{seed}: {rec.get('layout', '-')} cap {rec.get('max_num_seqs', '-')}{tie}")
    layouts = {(p.get("recommended") or {}).get("layout") for p in plans}
    caps = [(p.get("recommended") or {}).get("max_num_seqs") or 0 for p in plans]
    spread = (max(caps) - min(caps)) / max(1, min(caps)) if all(caps) else float("nan")
    same = "same layout" if len(layouts) == 1 else f"{len(layouts)} layouts"
    return f"| {name} | {'; '.join(picks)} | {same}, caps within {spread:.0%} |"


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    print("| scenario | plan, seeds 0-4 (layout, max_num_seqs per replica) | verdict |")
    print("|---|---|---|")
    agreement: list[str] = []
    for name in names:
        s = SCENARIOS[name]
        start = time.perf_counter()
        plans = [_plan(s, seed) for seed in SEEDS]
        print(_seed_line(name, plans) + f" <!-- {time.perf_counter() - start:.0f} s -->")
        row = _row(plans[0])
        if row is None:
            agreement.append(f"| {name} | no recommendation | - | - |")
            continue
        rec = plans[0]["recommended"]
        per_replica = rec["max_num_seqs"]
        cap = per_replica * rec["dp"]
        if s["online"]:
            c = row["capacity"]
            rate = c["sustained_rps"]  # the layout's, every replica together
            # without an SLO the plan's latencies are those at the headroom below its rate
            no_slo = plans[0].get("slo_ttft_s") is None and plans[0].get("slo_tpot_s") is None
            at = rate * (1 - plans[0]["headroom"]) if no_slo else rate
            plan_fig = f"{rate:.3g} req/s, TPOT p99 {c['tpot_p99_s'] * 1e3:.1f} ms" + (
                f" at {at:.3g} req/s (the headroom below it)" if no_slo else ""
            )
            points = [_sweep(s, rec["layout"], cap, at, seed)["steady"] for seed in (0, 1)]
            sweep_fig = "; ".join(
                f"TPOT p99 {p['tpot_p99_s'] * 1e3:.1f} ms, {p['throughput_rps']:.3g} req/s"
                for p in points
            )
            verdict = _check(s, rec["layout"], cap, rate)
        else:
            sweet = row["sweet_spot"]
            plan_fig = (
                f"{sweet['output_throughput_tok_s']:,.0f} tok/s, "
                f"makespan {sweet['makespan_s']:,.0f} s"
            )
            points = [_sweep(s, rec["layout"], cap, None, seed) for seed in (0, 1)]
            sweep_fig = "; ".join(
                f"{p['output_throughput_tok_s']:,.0f} tok/s, makespan {p['makespan_s']:,.0f} s"
                for p in points
            )
            verdict = "-"
        agreement.append(
            f"| {name} | {rec['layout']} cap {per_replica} | {plan_fig} | {sweep_fig} | {verdict} |"
        )
    print()
    print("| scenario | recommended | plan | sweep, seeds 0 and 1 | check (plan's SLO) |")
    print("|---|---|---|---|---|")
    print("\n".join(agreement))


def _check(s: dict[str, Any], layout: str, cap: int, rate: float) -> str:
    """`capcliff check` of the plan's SLO at its layout, cap and rate: pass or fail."""
    args = s["args"]
    slo = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--slo")}
    if not slo:
        return "- (no SLO to check)"
    isl = args[args.index("--isl") + 1] if "--isl" in args else None
    osl = args[args.index("--osl") + 1] if "--osl" in args else None
    weight = f'weight_dtype = "{args[args.index("--weight-dtype") + 1]}"\n' if (
        "--weight-dtype" in args) else ""  # fmt: skip
    lengths = f"isl = {isl}\nosl = {osl}\n" if isl else 'preset = "reasoning"\n'
    spec = (
        f'[[scenario]]\nname = "agreement"\nmodel = "{s["model"]}"\ngpu = "{s["gpu"]}"\n'
        f'gpus = {s["gpus"]}\nlayout = "{layout}"\n{weight}[scenario.workload]\n{lengths}'
        f'arrival = "poisson"\nrate = {rate:.6g}\nconcurrency = {cap}\n'
        f"num_requests = {max(2000, 2 * cap)}\n[scenario.expect]\n"
        f"ttft_p99_max_s = {slo['--slo-ttft']}\ntpot_p99_max_s = {slo['--slo-tpot']}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agreement.toml"
        path.write_text(spec)
        out = subprocess.run(
            [sys.executable, "-m", "capcliff", "check", str(path)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    said = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return "pass" if out.returncode == 0 else f"fail ({said[-1] if said else out.returncode})"


if __name__ == "__main__":
    main()
