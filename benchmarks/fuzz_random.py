"""Random combinations of plausible option values through the CLI (issue 23): crashes only.

    PYTHONPATH=. python benchmarks/fuzz_random.py [--seed 0] [--cases 300] [--jobs 2]

The campaigns in `fuzz_surfaces.py` try each bad value on its own, or hand-picked pairs and
triples. Here each case draws a command (`plan` twice as often as `sweep` and `memory`), a catalog
model and one to four options, each with a value from `VALUES`: values a user could type, most
valid alone, many contradicting each other. Nothing is known about whether a combination is
valid, so only what no input may cause is counted (`fuzz_harness`: a traceback, a hang past the
harness's limits, an answer printing a nan or inf percentage, a lost file); a refusal and an
answer are both fine. Prints the table of classes, each finding with its command line, how many
cases were answered (exit 0) and the fields refusals named most. Asserts nothing: the fixes'
regressions are in tests/.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_harness import Case, Outcome, report, run_all

# Values per option (None: a switch). Not every option of every command: those that take a
# file are the file campaigns' (`fuzz_cases*.py`).
VALUES: dict[str, list[str | None]] = {
    "--gpu": ["h100-sxm", "h200-sxm", "b200", "mi300x", "mi355x", "gb200", "b300",
              "h100-sxm,mi300x", "h200-sxm,b200"],
    "--gpus": ["1", "2", "3", "4", "6", "8", "16"],
    "--nodes": ["1", "2"],
    "--layout": ["tp8", "dp2-tp4", "tp4", "tp2", "tp1", "pp2", "dp8", "tp4-pp2", "dpa8",
                 "tp8-ep8", "dp4-tp2-ep8", "tp2-pp4"],
    "--isl": ["1", "100", "4000", "32000", "200000"],
    "--osl": ["1", "2", "500", "12000", "lognormal:4000:20000", "lognormal:800:3000:5000"],
    "--workload": ["reasoning", "chat", "chat-short", "multiturn-chat", "agentic"],
    "--random-range-ratio": ["0.01", "0.5", "1"],
    "--think-time": ["0", "0.5", "60"],
    "--turns": ["1", "3", "40"],
    "--context": ["0", "2000", "100000"],
    "--num-requests": ["1", "10", "60"],
    "--arrival": ["batch", "poisson", "clients"],
    "--rate": ["0.01", "1", "50", "5000"],
    "--clients": ["1", "16", "500"],
    "--slo-ttft": ["0.001", "0.5", "2", "600"],
    "--slo-tpot": ["0.001", "0.03", "10"],
    "--objective": ["makespan", "goodput", "cost"],
    "--headroom": ["0", "0.5", "0.99"],
    "--price-gpu-hour": ["0.01", "2.5", "3,4"],
    "--jobs": ["1", "2"],
    "--seed": ["0", "7", "4294967295"],
    "--format": ["table", "json", "markdown"],
    "--engine": ["vllm", "vllm-v0", "sglang", "trtllm"],
    "--weight-dtype": ["bf16", "fp16", "fp8", "int4", "mxfp4", "nvfp4"],
    "--kv-cache-dtype": ["bf16", "fp8", "auto", "fp16"],
    "--max-model-len": ["1", "2048", "32K", "131072"],
    "--allow-long-max-model-len": [None],
    "--gpu-memory-utilization": ["0.05", "0.5", "0.95", "1"],
    "--gpu-total-memory": ["10GiB", "80GiB", "139.81GiB"],
    "--kv-cache-memory": ["2GiB", "21.43GiB", "500GiB"],
    "--max-num-seqs": ["1", "64", "1024"],
    "--max-num-batched-tokens": ["16", "2048", "65536"],
    "--enable-chunked-prefill": [None],
    "--no-enable-chunked-prefill": [None],
    "--block-size": ["1", "16", "64", "256"],
    "--enforce-eager": [None],
    "--mem-fraction-static": ["0.3", "0.88"],
    "--free-gpu-memory-fraction": ["0.1", "0.9"],
    "--all2all-backend": ["none", "deepep", "deepep_low_latency", "deepep_high_throughput"],
    "--engine-version": ["0.4.3", "0.5.0", "0.10.1", "0.11.0", "1.0.0"],
    "--policy": ["fcfs", "kv-aware", "vllm", "sglang"],
    "--preemption": ["recompute", "swap"],
    "--swap-space": ["4GiB", "64GiB"],
    "--routing": ["round-robin", "least-loaded"],
    "--prefix-caching": ["on", "off"],
    "--offload": ["cpu:512GiB", "cpu:16GiB,nvme:4TiB", "nvme:1TiB"],
    "--offload-policy": ["write-through", "write-back"],
    "--request-overhead-ms": ["0", "5", "1000"],
    "--kv-transfer-overhead-ms": ["0", "1", "500"],
    "--speculative": ["mtp:1", "mtp:3", "eagle:3", "ngram:4", "eagle3:2", "nextn"],
    "--spec-acceptance": ["0.8,0.6,0.4", "0.9", "1,1,1"],
    "--spec-accept-length": ["1", "2.5", "4"],
    "--spec-overlap": [None],
    "--no-spec-overlap": [None],
    "--disagg": [None],
    "--concurrency": ["1", "8,64,512", "1,2,4,8,16,32"],
    "--attention-dp-balance": [None],
    "--fp8-gemm-backend": ["cutlass", "deepgemm"],
    "--moe-backend": ["triton", "cutlass", "deepgemm", "flashinfer"],
    "--overlap-schedule": [None],
    "--no-overlap-schedule": [None],
    "--scheduler-recv-interval": ["1", "10"],
    "--step-source": ["roofline", "measured"],
    "--serve-local-path": [None],
}  # fmt: skip
MODELS = ["llama-3.1-8b", "qwen3-32b", "deepseek-r1", "gpt-oss-120b", "qwen3-30b-a3b",
          "mixtral-8x7b", "gemma-3-27b", "llama-3.1-405b", "qwen3-235b-a22b-fp8",
          "deepseek-r1-0528-fp4"]  # fmt: skip
COMMANDS = ["plan", "plan", "sweep", "memory"]


def command_options() -> dict[str, set[str]]:
    """Every option name (both spellings of a switch) of each command."""
    import typer

    import capcliff.cli.main  # noqa: F401  (registers the commands on the app)
    from capcliff.cli.app import app

    group = typer.main.get_command(app)
    commands = getattr(group, "commands", {})
    return {
        name: {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        for name, command in commands.items()
    }


def cases(seed: int, count: int) -> list[Case]:
    """`count` random command lines (a small sample per simulation, one worker)."""
    rng = random.Random(seed)
    options = command_options()
    out = []
    for i in range(count):
        command = rng.choice(COMMANDS)
        names = [k for k in VALUES if k in options[command]]
        argv = [command, rng.choice(MODELS)]
        picked = rng.sample(names, rng.randint(1, 4))
        if command != "memory" and "--num-requests" not in picked:
            argv += ["--num-requests", "40"]
        if command == "plan" and "--jobs" not in picked:
            argv += ["--jobs", "1"]
        for name in picked:
            value = rng.choice(VALUES[name])
            argv += [name] if value is None else [name, value]
        out.append(Case(f"random{seed}", str(i), argv, invalid=None))
    return out


def summary(outcomes: list[Outcome]) -> None:
    """Each finding's command line; answers and the fields refusals named most."""
    for o in outcomes:
        if o.kind != "ok":
            print(f"{o.kind}: capcliff {' '.join(o.case.argv)}")
    answered = sum(o.code == 0 for o in outcomes)
    fields = collections.Counter(
        o.stderr.split(":")[1].strip() for o in outcomes if o.code == 2 and ":" in o.stderr
    )
    print(f"answered (exit 0): {answered} of {len(outcomes)}")
    print("refused, by field:", ", ".join(f"{f} {n}" for f, n in fields.most_common(10)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    outcomes = run_all(cases(args.seed, args.cases), jobs=args.jobs)
    report(outcomes, show=0)
    summary(outcomes)


if __name__ == "__main__":
    main()
