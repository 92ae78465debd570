"""Random combinations of plausible option values through the CLI (issue 23).

    PYTHONPATH=. python benchmarks/fuzz_random.py [--seed 0] [--cases 300] [--jobs 2]
        [--mode random|valid]

The campaigns in `fuzz_surfaces.py` try each bad value on its own, or hand-picked pairs and
triples. Here each case draws a command (`plan` twice as often as `sweep` and `memory`, and
`calibrate` and `check`), a model (a catalog id, or a Hugging Face folder or config.json written
from a model card) and one to four options, each with a value from `VALUES`: values a user could
type, most valid alone, many contradicting each other, and real files (`FILES`: the start-up logs,
bench CSVs, traces and check specs of tests/fixtures, calibration files `capcliff calibrate`
wrote from them, --serve-command lines of the engines' docs, output paths old and new).

`--mode random` draws every option from every value; nothing is known about whether a
combination is valid, so only what no input may cause is counted (`fuzz_harness`: a traceback, a
hang past the harness's limits, an answer printing a nan or inf percentage, a lost file).
`--mode valid` draws an engine first and then only options and values that engine (and the model
and GPU count drawn) accepts alone (`valid_case`), so that most cases are answered: answers are
where nonsense hides, so every answer (exit 0) is also read (`answer_problems`): a negative
throughput, latency, byte or token figure, a nan or inf figure, latency percentiles out of
order (p50 > p90 > p99), a tie said to be "within B%" of layouts whose rates lie further apart,
p99s followed by the explanation of a 95 % interval that none of them prints (seed 55),
a recommended layout that is not among the evaluated ones, or recommended at another cap than
its row was ranked at (seed 46), is counted as `nonsense`. A valid
JSON sweep also runs again at another --seed (a "~seed" twin, beside the --cases drawn): the
figures of the deployment and the workload's distribution (`SEED_FREE`: the analytic p99 cliff,
KV blocks, max_model_len) must not move with it; a JSON sweep of a session preset runs again at
--think-time 0 (a "~load" twin: the same figures, those of the workload's lengths, may not move
with the users' think time); a JSON plan of closed-loop users of given lengths runs again with
each user thinking 10 s (a "~think" twin: its fleet may not be priced at more requests/s than
clients / 10, nor at a rate not below its case's); a JSON plan that recommends nothing and
names a flag of its own that "meets it" (FP8 weights or an FP8 KV cache) runs again with that
flag (a "~fix" twin, drawn from the answers after the cases ran: with it, some layout must be
recommended; the fix was read from one user's 30 requests, seed 40); a JSON plan where nothing
fits and a fix names a weight or KV dtype that fits runs again with it (a "~fit" twin: with it,
some layout must fit); neither twin may be served with weights its own answer says the engines
cannot load from the checkpoint (FP8 weights of an NVFP4 checkpoint, seed 56). Prints the table of
classes, each finding with its command line, how many cases were answered and the fields
refusals named most; `--dump` writes every case's answer (JSON lines) for reading by hand.
Asserts nothing: the fixes' regressions are in tests/.
"""

from __future__ import annotations

import argparse
import collections
import itertools
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
                 "tp8-ep8", "dp4-tp2-ep8", "tp2-pp4", "tp1,tp2,tp4", "dp2-tp4,tp8", "all",
                 "dpa4-tp2", "dpa8-ep8", "tp4,dp2-tp2"],
    "--isl": ["1", "100", "4000", "32000", "200000"],
    "--osl": ["1", "2", "500", "12000", "lognormal:4000:20000", "lognormal:800:3000:5000"],
    "--workload": ["reasoning", "chat", "chat-short", "multiturn-chat", "agentic",
                   "{d}/trace.jsonl", "{d}/checks/traces/short.jsonl", "{d}/missing.jsonl",
                   "{d}/logs/vllm_v1_v16_llama31_8b_eager.txt"],
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
    "--offload": ["cpu:512GiB", "cpu:16GiB,nvme:4TiB", "nvme:1TiB", "cpu:1GiB", "cpu:64GiB",
                  "cpu:0GiB", "cpu:2TiB,nvme:16TiB"],
    "--offload-policy": ["write-through", "write-back"],
    "--request-overhead-ms": ["0", "5", "1000"],
    "--kv-transfer-overhead-ms": ["0", "1", "500"],
    "--speculative": ["mtp:1", "mtp:3", "eagle:3", "ngram:4", "eagle3:2", "nextn"],
    "--spec-acceptance": ["0.8,0.6,0.4", "0.9", "1,1,1", "0.7,0.5", "0", "0.9,0.8,0.7,0.6,0.5"],
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
    "--calibration": ["{d}/cal/vllm_llama8b.toml", "{d}/cal/vllm_qwen235b.toml",
                      "{d}/cal/vllm_dsr1fp4.toml", "{d}/cal/trtllm_llama8b.toml",
                      "{d}/cal/sglang_qwen32b.toml", "{d}/cal/sglang_dsr1_bench.toml",
                      "{d}/trace.jsonl", "{d}/missing.toml"],
    "--serve-command": [],  # SERVE_COMMANDS
    "--plot": ["{d}/out/plot.png", "{d}/out/plot.svg", "{d}/trace.jsonl", "{d}/plot.pdf",
               "{d}/cal/vllm_llama8b.toml"],
    "--force": [None],
    "--model": ["llama-3.1-8b", "qwen3-32b", "deepseek-r1", "{d}/hf/llama-3.1-8b",
                "{d}/hf/qwen3-30b-a3b/config.json", "gpt-oss-120b"],
    "--output": ["{d}/out/new.toml", "{d}/cal/vllm_llama8b.toml", "{d}/logs/log.txt"],
    "--junit": ["{d}/out/j.xml", "{d}/checks/pass.toml"],
    "--markdown": ["{d}/out/m.md", "{d}/out"],
    "--baseline": ["{d}/base.json", "{d}/missing.json", "{d}/trace.jsonl"],
    "--write-baseline": ["{d}/out/b.json", "{d}/base.json"],
}  # fmt: skip
# per command where an option means something else there
COMMAND_VALUES: dict[str, dict[str, list[str | None]]] = {
    "sweep": {"--disagg": ["1p:tp4,1d:tp4", "1p:tp8,3d:dp8-ep8", "2p:tp2,1d:tp4", "1p:tp1,1d:tp1",
                           "1p:tp4", "0p:tp4,1d:tp4", "1p:tp4,1d:tp4,1d:tp2", "1d:tp8"]},
    "calibrate": {"--layout": ["tp1", "tp4", "tp8", "tp4-ep4"],
                  "--speculative": ["mtp:1", "mtp:3", "eagle:3", "ngram:4"]},
}  # fmt: skip
SERVE_COMMANDS = [
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --max-num-seqs 128",
    "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 --pipeline-parallel-size 2",
    "vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 8 --enable-expert-parallel",
    "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 4 --max-model-len 32K --kv-cache-dtype fp8",
    "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.8 --enable-prefix-caching",
    "vllm serve openai/gpt-oss-120b --tensor-parallel-size 2 --async-scheduling",
    "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
    "--enable-dp-attention",
    "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2 --mem-fraction-static 0.85",
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --max-running-requests 64",
    "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch --tp_size 2 --pp_size 1 "
    "--max_batch_size 64",
    "trtllm-serve openai/gpt-oss-120b --tp_size 4 --ep_size 4 --kv_cache_free_gpu_memory_fraction"
    " 0.9",
    "vllm serve",
    "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs many",
]
VALUES["--serve-command"] = list(SERVE_COMMANDS)
MODELS = ["llama-3.1-8b", "qwen3-32b", "deepseek-r1", "gpt-oss-120b", "qwen3-30b-a3b",
          "mixtral-8x7b", "gemma-3-27b", "llama-3.1-405b", "qwen3-235b-a22b-fp8",
          "deepseek-r1-0528-fp4"]  # fmt: skip
COMMANDS = ["plan", "plan", "sweep", "memory", "calibrate", "check"]
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# the logs and bench files `capcliff calibrate` writes each calibration file from (argv)
CALIBRATIONS = {
    "vllm_llama8b": ["logs/vllm_v1_v16_llama31_8b_eager.txt"],
    "vllm_qwen235b": ["logs/vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt"],
    "vllm_dsr1fp4": ["logs/vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt"],
    "trtllm_llama8b": ["logs/trtllm_t01_llama31_8b_rtx5090.txt", "--model", "llama-3.1-8b"],
    "sglang_qwen32b": ["logs/sglang_s02_qwq_32b_4xl4_tp4.txt", "--model", "qwen3-32b"],
    "sglang_dsr1_bench": ["bench/dsr1_0528_h200_tp8_sglang.csv", "--model", "deepseek-r1",
                          "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8",
                          "--engine", "sglang"],
}  # fmt: skip
HF_MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "qwen3-32b"]
OUTPUTS = ("--plot", "--output", "--junit", "--markdown", "--write-baseline")


def file_pool() -> dict[str, bytes]:
    """Every file a case's folder holds (`{d}/...`): the fixtures, a trace, Hugging Face
    folders from the model cards, and the calibration files `capcliff calibrate` writes."""
    import contextlib
    import io
    import json
    import tempfile
    import tomllib

    from capcliff.cli import main

    files = {
        str(p.relative_to(FIXTURES)): p.read_bytes() for p in FIXTURES.rglob("*") if p.is_file()
    }
    files["trace.jsonl"] = files["checks/traces/short.jsonl"]
    files["logs/log.txt"] = files["logs/vllm_v1_v16_llama31_8b_eager.txt"]
    for model in HF_MODELS:
        card = tomllib.loads((ROOT / "model_cards" / f"{model}.toml").read_text())
        files[f"hf/{model}/config.json"] = json.dumps(card["config"]).encode()
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in CALIBRATIONS.items():
            out = Path(tmp) / f"{name}.toml"
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                code = main(["calibrate", str(FIXTURES / argv[0]), *argv[1:], "-o", str(out)])
            if code != 0:
                raise SystemExit(f"calibrate {argv}: exit {code}: {sink.getvalue()}")
            files[f"cal/{name}.toml"] = out.read_bytes()
        files.update(check_specs())
        spec, base = Path(tmp) / "small.toml", Path(tmp) / "base.json"
        spec.write_bytes(files["checks/small.toml"])
        with contextlib.redirect_stdout(io.StringIO()):
            main(["check", str(spec), "--write-baseline", str(base)])
        files["base.json"] = base.read_bytes()
    return files


def check_specs() -> dict[str, bytes]:
    """Small check specs beside the fixtures': one scenario each, of a few keys."""
    specs = {
        "small": ("llama-3.1-8b", "h200-sxm", "tp1", "isl = 128\nosl = 256\nnum_requests = 32\n"
                  "concurrency = 16", "fits = true\nttft_p99_max_s = 30"),
        "auto": ("qwen3-8b", "h100-sxm", "auto\"\ngpus = 1\n# \"",
                 "isl = 256\nosl = 128\nnum_requests = 24",
                 "recommended_layout = \"tp1\""),
        "online": ("llama-3.1-8b", "h100-sxm", "tp1", "isl = 200\nosl = 100\nnum_requests = 30\n"
                   "arrival = \"poisson\"\nrate = 2", "sustained_rps_min = 0.1\nreplicas_max = 4"),
        "hf": ("../hf/llama-3.1-8b", "h200-sxm", "tp1", "trace = \"traces/short.jsonl\"\n"
               "concurrency = 8", "no_preemption_at = 8"),
        "bad": ("llama-3.1-8b", "h200-sxm", "tp3", "isl = -1\nosl = 0", "fits = 3"),
    }  # fmt: skip
    return {
        f"checks/{name}.toml": (
            f'[[scenario]]\nname = "{name}"\nmodel = "{model}"\ngpu = "{gpu}"\n'
            f'layout = "{layout}"\n[scenario.workload]\n{workload}\n'
            f"[scenario.expect]\n{expect}\n"
        ).encode()
        for name, (model, gpu, layout, workload, expect) in specs.items()
    }


def _positional(command: str, rng: random.Random) -> list[str]:
    """The command's argument: a model, a log or bench file, a check spec."""
    if command == "calibrate":
        return [
            rng.choice(
                ["{d}/" + a[0] for a in CALIBRATIONS.values()]
                + ["{d}/trace.jsonl", "{d}/bench/reference_rows.csv", "{d}/cal/vllm_llama8b.toml"]
            )
        ]
    if command == "check":
        return [
            rng.choice(
                [
                    "{d}/checks/pass.toml",
                    "{d}/checks/fail.toml",
                    "{d}/checks/small.toml",
                    "{d}/checks/auto.toml",
                    "{d}/checks/online.toml",
                    "{d}/checks/hf.toml",
                    "{d}/checks/bad.toml",
                    "{d}/trace.jsonl",
                ]
            )
        ]
    if rng.random() < 0.15:
        model = rng.choice(HF_MODELS)
        return [rng.choice([f"{{d}}/hf/{model}", f"{{d}}/hf/{model}/config.json"])]
    return [rng.choice(MODELS)]


def _replaced(argv: list[str]) -> tuple[str, ...]:
    """Output files --force may replace: those the command line names only as an output."""
    if "--force" not in argv:
        return ()
    outputs = [argv[k + 1] for k, a in enumerate(argv[:-1]) if a in OUTPUTS or a == "-o"]
    inputs = [a for k, a in enumerate(argv) if k == 0 or argv[k - 1] not in (*OUTPUTS, "-o")]
    return tuple(o.replace("{d}/", "") for o in outputs if o not in inputs)


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


def cases(seed: int, count: int, files: dict[str, bytes], mode: str = "random") -> list[Case]:
    """`count` random command lines (a small sample per simulation, one worker)."""
    rng = random.Random(seed)
    options = command_options()
    out = []
    for i in range(count):
        if mode == "valid":
            argv = valid_case(rng)
        else:
            command = rng.choice(COMMANDS)
            values = {**VALUES, **COMMAND_VALUES.get(command, {})}
            names = sorted(k for k in values if k in options[command])
            argv = [command, *_positional(command, rng)]
            picked = rng.sample(names, rng.randint(1, min(4, len(names))))
            if command in ("plan", "sweep") and "--num-requests" not in picked:
                argv += ["--num-requests", "40"]
            if command == "plan" and "--jobs" not in picked:
                argv += ["--jobs", "1"]
            for name in picked:
                value = rng.choice(values[name])
                argv += [name] if value is None else [name, value]
            argv = _sized(argv)
        spec = {**files, "out": ("dir",)}
        out.append(
            Case(f"{mode}{seed}", str(i), argv, spec, invalid=None, replaced=_replaced(argv))
        )
        if mode == "valid":
            for suffix, make in (
                (TWIN, seed_twin),
                (LOAD_TWIN, load_twin),
                (THINK_TWIN, think_twin),
            ):
                if (twin := make(argv)) is not None:
                    out.append(Case(f"{mode}{seed}", f"{i}{suffix}", twin, spec, invalid=None))
    return out


TWIN = "~seed"  # a case's name suffix: the case before it with another --seed
# JSON figures of a sweep that describe the deployment and the workload's distribution, not the
# sample drawn: they may not move with --seed (the analytic p99 cliff did, fuzz_random seed 15)
SEED_FREE = ("max_model_len", "kv_blocks_per_replica", "block_size", "analytic_concurrency")


def seed_twin(argv: list[str]) -> list[str] | None:
    """`argv` with another --seed, for a JSON sweep (cheap; its seed-free figures compared by
    `seed_problems`); None for any other case."""
    if argv[0] != "sweep" or "--format" not in argv or "--workload" in argv:
        return None  # (a session preset: its sessions are the sample)
    given = dict(itertools.pairwise(argv))
    if given.get("--format") != "json":
        return None
    return _with_other(argv, "--seed", "5", "6")


def _with_other(argv: list[str], name: str, value: str, instead: str) -> list[str]:
    """`argv` with option `name` set to `value` (`instead` where it already was `value`)."""
    twin = list(argv)
    if name in twin:
        k = twin.index(name) + 1
        twin[k] = value if twin[k] != value else instead
    else:
        twin += [name, value]
    return twin


LOAD_TWIN = "~load"  # a session preset's sweep with its users sending at once
THINK_TWIN = "~think"  # a plan of closed-loop users of given lengths, thinking 10 s each
THINK_S = 10.0


def load_twin(argv: list[str]) -> list[str] | None:
    """A JSON sweep of a session preset again at --think-time 0 (the think times draw from the
    Generator the lengths come from): its `SEED_FREE` figures, those of the workload's lengths,
    must not move (the analytic cliff did: 88 and 93 for multiturn-chat, seed 25). None for any
    other case."""
    given = dict(itertools.pairwise(argv))
    if argv[0] != "sweep" or given.get("--format") != "json":
        return None
    if given.get("--workload") not in ("multiturn-chat", "agentic") or "--disagg" in argv:
        return None
    return _with_other(argv, "--think-time", "0", "1")


def think_twin(argv: list[str]) -> list[str] | None:
    """A JSON plan of closed-loop users (`--arrival clients`) of given lengths again with each
    user thinking THINK_S seconds: its fleet's users' rate may not pass clients / THINK_S
    (`users_problems`; plan dropped the think time, seed 25). None for any other case."""
    given = dict(itertools.pairwise(argv))
    if argv[0] != "plan" or given.get("--format") != "json" or "--clients" not in argv:
        return None
    if given.get("--workload") in ("multiturn-chat", "agentic") or "--think-time" in argv:
        return None
    if "--rate" in argv or "--disagg" in argv:
        return None
    return [*argv, "--think-time", f"{THINK_S:g}"]


FIX_TWIN = "~fix"  # a plan that recommends nothing, again with a flag its fixes say meets it
FIT_TWIN = "~fit"  # a plan where nothing fits, again as a fix of its own says something fits
# a fix's label: the flag it sets (None: the flag left out)
FIX_FLAGS: dict[str, tuple[str, str | None]] = {
    "(--weight-dtype fp8)": ("--weight-dtype", "fp8"),
    "(--kv-cache-dtype fp8)": ("--kv-cache-dtype", "fp8"),
    "(--weight-dtype left out)": ("--weight-dtype", None),
}  # fmt: skip


def fix_twins(outcomes: list[Outcome]) -> list[Case]:
    """For each JSON plan (exit 0) that recommends nothing and says a flag of its own "meets it
    at light load" (or, where nothing fits, that with it a layout "fits as" one), the case again
    with that flag set, or left out (`fix_problems` reads the answer)."""
    import json

    twins = []
    for o in outcomes:
        if o.code != 0 or o.case.argv[0] != "plan" or "~" in o.case.name:
            continue
        if "--layout" in o.case.argv:
            continue  # the fix is tried at the widest TP, which a given --layout may leave out
        try:
            data = json.loads(o.stdout)
        except ValueError:
            continue
        if not isinstance(data, dict) or data.get("recommended") is not None:
            continue
        for fix in map(str, data.get("fixes") or []):
            suffix = FIX_TWIN if "meets it" in fix else FIT_TWIN if " fit" in fix else None
            for label, (name, value) in FIX_FLAGS.items():
                given = dict(itertools.pairwise(o.case.argv)).get(name)
                if label not in fix or suffix is None or given == value:
                    continue  # (a flag left out that was not given, or set as it is)
                argv = _without(o.case.argv, name) if name in o.case.argv else list(o.case.argv)
                argv += [] if value is None else [name, value]
                twin = f"{o.case.name}{suffix}-{name.removeprefix('--')}"
                twins.append(Case(o.case.surface, twin, argv, o.case.files, invalid=None))
    return twins


def _without(argv: list[str], name: str) -> list[str]:
    """`argv` without option `name` and its value."""
    k = argv.index(name)
    return argv[:k] + argv[k + 2 :]


def fix_problems(stdout: str, fit: bool = False) -> list[str]:
    """A `~fix` twin whose plan, with the flag its case said meets the SLO, recommends nothing; a
    `~fit` twin (`fit`) where, as its case said something fits, nothing does; either of them
    served with weights its own answer says the engines cannot load from the checkpoint (an
    NVFP4 checkpoint told FP8 weights fit, seed 56)."""
    import json

    try:
        data = json.loads(stdout)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    problems = []
    if fit and data.get("reason") == "no layout fits":
        problems.append("a fix was said to fit; with it: no layout fits")
    elif not fit and "recommended" in data and data["recommended"] is None:
        problems.append(f"the fix was said to meet the SLO; with it: {data.get('reason')}")
    problems += [
        f"the fix's weights: {w}" for w in data.get("flag_warnings") or [] if "cannot quantize" in w
    ]
    return problems


def users_problems(argv: list[str], stdout: str, first: str | None = None) -> list[str]:
    """A fleet priced at a users' rate past what users thinking THINK_S seconds can send
    (clients / THINK_S), or not below the rate of the same users without the think time
    (`first`, the case's own answer: 10 s more per cycle can only lower it; `plan` that dropped
    the think time priced both alike)."""
    import json

    def rates(text: str | None) -> dict[str, float]:
        try:
            data = json.loads(text or "")
        except ValueError:
            return {}
        fleet = data.get("fleet") if isinstance(data, dict) else None
        return {
            str(e.get("gpu")): float(e["served_rps"])
            for e in fleet or []
            if isinstance(e, dict) and isinstance(e.get("served_rps"), int | float)
        }

    clients = int(dict(itertools.pairwise(argv))["--clients"])
    most, before = clients / THINK_S, rates(first)
    problems = [
        f"fleet {gpu}: {rps:.3g} requests/s from {clients} users thinking {THINK_S:g} s (at most "
        f"{most:.3g})"
        for gpu, rps in rates(stdout).items()
        if rps > most * (1 + 1e-9)
    ]
    return problems + [
        f"fleet {gpu}: {rps:.3g} requests/s from {clients} users thinking {THINK_S:g} s, not below "
        f"the {before[gpu]:.3g} they send without"
        for gpu, rps in rates(stdout).items()
        if gpu in before and rps >= before[gpu] * (1 - 1e-9)
    ]


def _seed_free(node: object, path: str = "") -> dict[str, object]:
    """The `SEED_FREE` figures of a JSON answer, by path."""
    if isinstance(node, dict):
        found = {f"{path}.{k}": v for k, v in node.items() if k in SEED_FREE}
        for k, v in node.items():
            if k not in ("points", "kv_over_time", "hit_rate_over_time"):
                found.update(_seed_free(v, f"{path}.{k}"))
        return found
    if isinstance(node, list):
        return {
            k: v for i, item in enumerate(node) for k, v in _seed_free(item, f"{path}[{i}]").items()
        }
    return {}


def seed_problems(first: str, second: str) -> list[str]:
    """The seed-free figures that differ between two answers of one case at two seeds."""
    import json

    try:
        a, b = _seed_free(json.loads(first)), _seed_free(json.loads(second))
    except ValueError:
        return []
    return [f"{k}: {a[k]} at one seed, {b.get(k)} at another" for k in a if a[k] != b.get(k)]


# mode valid: what each engine accepts alone (vLLM, SGLang and TensorRT-LLM's own flags)
ENGINE_VALUES: dict[str, dict[str, list[str | None]]] = {
    "vllm": {"--gpu-memory-utilization": ["0.8", "0.9"], "--max-num-seqs": ["64", "256"],
             "--max-num-batched-tokens": ["2048", "8192"], "--block-size": ["16", "32"],
             "--enforce-eager": [None],
             "--kv-cache-memory": ["20GiB"], "--engine-version": ["0.10.1", "0.11.0"],
             "--offload": ["cpu:64GiB", "cpu:16GiB,nvme:1TiB"],
             "--policy": ["vllm", "vllm-first-chunk"],
             "--preemption": ["swap"], "--prefix-caching": ["on", "off"]},
    "sglang": {"--mem-fraction-static": ["0.8", "0.88"], "--max-num-seqs": ["64", "256"],
               "--engine-version": ["0.4.3", "0.5.0"], "--no-overlap-schedule": [None],
               "--scheduler-recv-interval": ["1", "10"], "--prefix-caching": ["on", "off"],
               "--max-num-batched-tokens": ["8192"], "--policy": ["sglang"]},
    "trtllm": {"--free-gpu-memory-fraction": ["0.85", "0.9"], "--max-num-seqs": ["64", "256"],
               "--max-num-batched-tokens": ["8192"],
               "--policy": ["trtllm-max-util", "trtllm-no-evict"]},
}  # fmt: skip
COMMON_VALUES: dict[str, list[str | None]] = {
    "--isl": ["100", "1000", "4000"], "--osl": ["200", "1000", "lognormal:800:3000"],
    "--workload": ["chat", "chat-short", "reasoning", "{d}/trace.jsonl"],
    "--max-model-len": ["16384", "32K"], "--kv-cache-dtype": ["fp8", "bf16"],
    "--seed": ["0", "3"], "--random-range-ratio": ["0.5", "1"], "--request-overhead-ms": ["5"],
}  # fmt: skip
# (model, GPUs, GPU choices, layouts of those GPUs); small models mostly (CPU time)
VALID_MODELS = [
    ("llama-3.1-8b", "1", ["h100-sxm", "h200-sxm", "mi300x", "b200"], ["tp1"]),
    ("llama-3.1-8b", "2", ["h100-sxm", "h200-sxm"], ["tp2", "dp2"]),
    ("qwen3-8b", "4", ["h100-sxm", "b200"], ["dp2-tp2", "tp4", "dp4"]),
    ("qwen3-32b", "4", ["h200-sxm", "b200", "mi300x"], ["tp4", "dp2-tp2"]),
    ("qwen3-30b-a3b", "2", ["h100-sxm", "h200-sxm"], ["tp2", "dp2"]),
    ("gpt-oss-20b", "1", ["h100-sxm", "h200-sxm"], ["tp1"]),
    ("{d}/hf/llama-3.1-8b", "1", ["h100-sxm"], ["tp1"]),
]  # fmt: skip


def valid_case(rng: random.Random) -> list[str]:
    """A command line of options each valid alone with the engine, model and GPUs drawn."""
    command = rng.choice(["plan", "plan", "sweep", "sweep", "memory", "calibrate", "check"])
    if command == "check":
        return _valid_check(rng)
    if command == "calibrate":
        name = rng.choice(list(CALIBRATIONS))
        argv = ["calibrate", "{d}/" + CALIBRATIONS[name][0], *CALIBRATIONS[name][1:]]
        if rng.random() < 0.5:
            argv += ["-o", "{d}/out/new.toml"]
        return argv + rng.choice([[], ["--format", "json"]])
    model, gpus, gpu_choices, layouts = rng.choice(VALID_MODELS)
    engine = rng.choice(list(ENGINE_VALUES))
    argv = [command, model, "--gpu", rng.choice(gpu_choices), "--gpus", gpus, "--engine", engine]
    pool = _valid_pool(rng, argv, layouts)
    picked = rng.sample(sorted(pool), rng.randint(1, min(4, len(pool))))
    for name in picked:
        value = rng.choice(pool[name])
        argv += [name] if value is None else [name, value]
    if "--arrival" in picked:
        arrival = argv[argv.index("--arrival") + 1]
        if arrival == "poisson":
            argv += ["--rate", rng.choice(["0.5", "2"])]
        elif arrival == "clients":
            argv += ["--clients", rng.choice(["4", "16"])]
    if "--preemption" in picked:
        argv += ["--swap-space", "4GiB"]
    if rng.random() < 0.5:
        argv += ["--format", "json"]
    return _repaired(_sized(argv))


def _repaired(argv: list[str]) -> list[str]:
    """`argv` without the pairs its other options refuse (no draw: the same draws as before)."""

    def drop(name: str) -> None:
        k = argv.index(name)
        del argv[k : k + (1 if k + 1 == len(argv) or argv[k + 1].startswith("--") else 2)]

    given = dict(itertools.pairwise(argv))
    if "--disagg" in argv:
        drop("--gpus")  # the pools name the GPUs
    _paired(argv, given)
    if "--random-range-ratio" in argv and "--workload" in argv:
        drop("--random-range-ratio")  # only given lengths are drawn from a range
    elif "--random-range-ratio" in argv:
        argv += [
            f for n, v in (("--isl", "1000"), ("--osl", "500")) if n not in argv for f in (n, v)
        ]
    if given.get("--workload") in ("multiturn-chat", "agentic") and not (
        {"--rate", "--clients"} & set(argv)
    ):
        if given.get("--arrival") == "batch":
            drop("--arrival")
        argv += ["--clients", "8"]  # a session preset is online
    if "--objective" in argv and given.get("--arrival", "batch") != "batch":
        drop("--objective")
    elif "--objective" in argv and "--arrival" not in argv and "--clients" not in argv:
        argv += ["--arrival", "batch"]
    elif "--objective" in argv:
        drop("--objective")
    return argv


def _paired(argv: list[str], given: dict[str, str]) -> None:
    """`argv` (in place) without --num-requests for a trace, with NVIDIA's GPU under TensorRT-LLM
    and both lengths where one is given (each refusal a harness artefact of seeds 42-47)."""
    if given.get("--workload", "").endswith(".jsonl") and "--num-requests" in argv:
        k = argv.index("--num-requests")  # a trace has as many requests as lines
        del argv[k : k + 2]
    if given.get("--engine") == "trtllm" and given.get("--gpu", "").startswith("mi"):
        argv[argv.index("--gpu") + 1] = "h200-sxm"  # TensorRT-LLM runs on NVIDIA's GPUs only
    if "--workload" not in argv and ("--isl" in argv) != ("--osl" in argv):
        argv += ["--osl", "500"] if "--isl" in argv else ["--isl", "1000"]


def _sized(argv: list[str]) -> list[str]:
    """`argv` with the input and output lengths a sweep needs (it has no default workload)."""
    if argv[0] == "sweep" and "--workload" not in argv:
        for name, value in (("--isl", "1000"), ("--osl", "500")):
            if name not in argv:
                argv += [name, value]
    return argv


def _valid_check(rng: random.Random) -> list[str]:
    """`check` of a small spec, with some of its output files."""
    specs = ["small", "auto", "online", "hf"]
    argv = ["check", f"{{d}}/checks/{rng.choice(specs)}.toml"]
    outputs = [("--format", "json"), ("--junit", "{d}/out/j.xml"),
               ("--markdown", "{d}/out/m.md"), ("--write-baseline", "{d}/out/b.json")]  # fmt: skip
    for name, value in rng.sample(outputs, rng.randint(0, 2)):
        argv += [name, value]
    return argv


def _valid_pool(rng: random.Random, argv: list[str], layouts: list[str]) -> dict[str, list]:
    """The options (and their values) the command, engine, model and GPUs of `argv` accept;
    appends what they need (a sample size, one worker, a session preset) to `argv`."""
    command, model, gpus, engine = argv[0], argv[1], argv[5], argv[7]
    pool = {**COMMON_VALUES, **ENGINE_VALUES[engine]}
    if command != "memory":
        argv += ["--num-requests", "40"]
        pool.update({"--arrival": ["poisson", "clients", "batch"], "--slo-ttft": ["2", "10"],
                     "--slo-tpot": ["0.05", "0.2"]})  # fmt: skip
    else:
        pool = {k: v for k, v in pool.items() if k in MEMORY_OPTIONS}
    if command == "plan":
        argv += ["--jobs", "1"]
        pool["--layout"] = [",".join(layouts), rng.choice(layouts)]
        pool["--objective"] = ["makespan", "goodput", "cost"]
    else:
        pool["--layout"] = [rng.choice(layouts)]
    if command == "sweep" and gpus == "4" and rng.random() < 0.3:
        pool = {k: v for k, v in pool.items() if k != "--layout"}
        pool["--disagg"] = ["1p:tp2,1d:tp2", "1p:tp1,1d:tp2", "2p:tp1,1d:tp2"]
    if command == "sweep":
        pool["--concurrency"] = ["8,64", "1,16"]
    if model.startswith("qwen3-30b") or model.startswith("gpt-oss"):
        pool.setdefault("--layout", []).append("dp2-ep2" if gpus == "2" else "tp1")
    pool.pop("--no-enable-chunked-prefill", None)  # vllm-v0's only
    if rng.random() < 0.3:  # a session preset with its shaping flags
        pool = {k: v for k, v in pool.items() if k not in ("--isl", "--osl", "--workload")}
        if command != "memory":
            argv += ["--workload", rng.choice(["multiturn-chat", "agentic"])]
            pool.update({"--turns": ["2", "3"], "--think-time": ["0", "1"],
                         "--context": ["0", "2000"]})  # fmt: skip
    return pool


MEMORY_OPTIONS = {"--max-model-len", "--kv-cache-dtype", "--gpu-memory-utilization",
                  "--max-num-seqs", "--max-num-batched-tokens", "--block-size", "--enforce-eager",
                  "--no-enable-chunked-prefill", "--kv-cache-memory", "--mem-fraction-static",
                  "--free-gpu-memory-fraction"}  # fmt: skip
# JSON keys whose figures are never negative (throughput, latency, bytes, tokens, counts)
NON_NEGATIVE = ("throughput", "ttft", "tpot", "latency", "bytes", "tokens", "_rps", "makespan",
                "_s", "gib", "concurrency", "capacity", "replicas", "max_num_seqs", "gpus",
                "requests", "hours")  # fmt: skip


# keys of a signed difference (a calibration's error against the log), never flagged
SIGNED = ("err", "diff", "delta", "pct", "percent", "residual", "change")


def answer_problems(stdout: str) -> list[str]:
    """What an answer (exit 0) may not print: a negative throughput, latency, byte or token
    figure, a nan or inf figure, a recommended layout not among the evaluated ones."""
    import json

    said = _tie_problems(stdout) + _interval_problems(stdout)
    try:
        data = json.loads(stdout)
    except ValueError:
        return _text_problems(stdout) + said
    problems = _json_problems(data, "") + _order_problems(data, "") + said
    if isinstance(data, dict) and isinstance(data.get("recommended"), dict):
        names = {lay.get("name") for lay in data.get("layouts", []) if isinstance(lay, dict)}
        chosen = data["recommended"].get("layout")
        if chosen is not None and chosen not in names:
            problems.append(f"recommended {chosen} not among {sorted(map(str, names))}")
        problems += _cap_problems(data)
    return problems


def _cap_problems(data: dict) -> list[str]:
    """A plan whose recommended cap is not the one its layout's row was ranked at: the row's
    sweet spot (batch: its concurrency over the replicas) or capacity cap (online). A batch plan
    ranked dp2-tp4 at 40 requests past its cliff and served it at 16 (seed 46)."""
    rec = data["recommended"]
    row = next((r for r in data.get("layouts", []) if r.get("name") == rec.get("layout")), None)
    if row is None or not isinstance(rec.get("max_num_seqs"), int):
        return []
    if isinstance(row.get("capacity"), dict):
        ranked = row["capacity"].get("max_num_seqs")
    elif isinstance(row.get("sweet_spot"), dict):
        ranked = -(-int(row["sweet_spot"]["concurrency"]) // max(1, int(row.get("dp") or 1)))
    else:
        return []
    if ranked is not None and ranked != rec["max_num_seqs"]:
        return [f"recommended {rec['layout']} at max_num_seqs {rec['max_num_seqs']}, ranked at "
                f"{ranked} per replica"]  # fmt: skip
    return []


def _text_problems(stdout: str) -> list[str]:
    """A table's or Markdown's lines with a nan, an inf, a negative number (not a signed
    percentage: a difference) or a percentage of -0."""
    import re

    problems = []
    for line in stdout.splitlines():
        if line.lstrip().startswith(("note:", "warning:")):
            continue  # a diagnosis may quote a negative figure it refuses to use
        if re.search(r"(?<![\w.])-0\s?%", line):  # a signed difference prints -0.0 %
            problems.append(f"negative zero in: {line.strip()[:120]}")
        # (AMD's "Infinity Fabric" is a link's name, not a figure: fuzz_random seed 37)
        elif re.search(r"(?i)(?<![\w-])(nan|-?inf|infinity(?!\s+fabric))(?![\w-])", line):
            problems.append(f"nan/inf in: {line.strip()[:120]}")
        elif re.search(r"(?<![\w.:/-])-\d[\d.,]*(?!\d|[.,]?\d|\s?%)", line):
            problems.append(f"negative in: {line.strip()[:120]}")
    return problems


def _tie_problems(stdout: str) -> list[str]:
    """A tie said to be "within B%" of layouts whose rates lie further apart than B % (the
    recommended one's rate, "sustains R requests/s", and each tied one's, "name (R requests/s)").
    """
    import re

    def rate(text: str) -> float:
        return float(text.replace(",", ""))

    problems = []
    sustains = [rate(r) for r in re.findall(r"sustains ([\d,.]+) requests/s", stdout)]
    for names, band in re.findall(r"ties with (.*?): within (\d+)%", stdout):
        rates = [rate(r) for r in re.findall(r"\(([\d,.]+) requests/s", names)] + sustains[:1]
        if rates and min(rates) < max(rates) * (1 - int(band) / 100) - 0.01:
            problems.append(f"a tie 'within {band}%' of rates {rates}")
    return problems


def _interval_problems(stdout: str) -> list[str]:
    """p99s followed by the explanation of their 95 % interval ("±") that none of them prints (a
    40-request trace, too small for one, seed 55)."""
    import re

    return [
        f"an interval explained, none printed: {m.group(0)[:100]}"
        for m in re.finditer(r"TTFT p99 [^;()]*\(95 % sampling interval", stdout)
        if "±" not in m.group(0)
    ]


def _order_problems(node: object, path: str) -> list[str]:
    """Latency percentiles out of order (p50 > p90 or p90 > p99) anywhere in a JSON answer."""
    if isinstance(node, list):
        return [p for k, v in enumerate(node) for p in _order_problems(v, f"{path}[{k}]")]
    if not isinstance(node, dict):
        return []
    problems = [p for k, v in node.items() for p in _order_problems(v, f"{path}.{k}")]
    for name in ("ttft", "tpot", "itl", "e2e"):
        values = [node.get(f"{name}_{q}_s") for q in ("p50", "p90", "p99")]
        known = [v for v in values if isinstance(v, (int, float))]
        if any(b < a * (1 - 1e-9) for a, b in itertools.pairwise(known)):
            problems.append(f"{path}.{name} percentiles out of order: {known}")
    return problems


def _json_problems(node: object, path: str) -> list[str]:
    """A JSON answer's nan or inf figures, and negative ones under `NON_NEGATIVE` keys."""
    import math

    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _json_problems(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [p for k, v in enumerate(node) for p in _json_problems(v, f"{path}[{k}]")]
    if isinstance(node, float) and not math.isfinite(node):
        return [f"{path} = {node}"]
    if isinstance(node, (int, float)) and not isinstance(node, bool) and node < 0:
        key = path.rsplit(".", 1)[-1].split("[")[0]
        if any(w in key for w in NON_NEGATIVE) and not any(w in key for w in SIGNED):
            return [f"{path} = {node}"]
    return []


def checked(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes, an answer whose figures `answer_problems` flags reclassed `nonsense`, and
    so a seed or load twin whose seed-free figures differ from its case's (`seed_problems`) and
    a think twin priced past its users' rate or not below its case's (`users_problems`)."""
    by_name = {o.case.name: o for o in outcomes}
    for o in outcomes:
        if o.kind == "ok" and o.code == 0:
            problems = answer_problems(o.stdout)
            if problems:
                o.kind = "nonsense"
                o.stderr += "\n[answer: " + "; ".join(problems[:3]) + "]"
        name = o.case.name
        think = name.endswith(THINK_TWIN) and o.kind == "ok" and o.code == 0
        alone = by_name.get(name.removesuffix(THINK_TWIN))
        unthought = alone.stdout if alone is not None and alone.code == 0 else None
        if think and (users := users_problems(o.case.argv, o.stdout, unthought)):
            o.kind = "nonsense"
            o.stderr += "\n[users: " + "; ".join(users[:3]) + "]"
        fit = FIT_TWIN in name
        if (
            (FIX_TWIN in name or fit)
            and o.kind == "ok"
            and o.code == 0
            and (fixed := fix_problems(o.stdout, fit))
        ):
            o.kind = "nonsense"
            o.stderr += "\n[fix: " + "; ".join(fixed) + "]"
        twin = next((t for t in (TWIN, LOAD_TWIN) if name.endswith(t)), None)
        first = None if twin is None else by_name.get(name.removesuffix(twin))
        both = first is not None and (first.code, o.code) == (0, 0) and o.kind == "ok"
        moved = seed_problems(first.stdout, o.stdout) if both and first is not None else []
        if moved:
            o.kind = "nonsense"
            o.stderr += f"\n[{(twin or '').lstrip('~')}: " + "; ".join(moved[:3]) + "]"
    return outcomes


def summary(outcomes: list[Outcome]) -> None:
    """Each finding's command line; answers and the fields refusals named most."""
    for o in outcomes:
        if o.kind != "ok":
            print(f"{o.kind} ({o.seconds:.1f} s CPU): capcliff {' '.join(o.case.argv)}")
            extra = o.stderr.strip().splitlines()[-1:] if o.stderr.strip() else []
            print(f"    {extra[0][:300] if extra else ''}")
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
    parser.add_argument("--mode", choices=["random", "valid"], default="random")
    parser.add_argument("--dump", type=Path, help="write every case's answer here (JSON lines)")
    args = parser.parse_args()
    files = file_pool()
    outcomes = run_all(cases(args.seed, args.cases, files, args.mode), jobs=args.jobs)
    outcomes = checked(outcomes + run_all(fix_twins(outcomes), jobs=args.jobs))
    report(outcomes, show=0)
    summary(outcomes)
    if args.dump is not None:
        dump(outcomes, args.dump)


def dump(outcomes: list[Outcome], path: Path) -> None:
    """Each case's command line, class, exit code, CPU seconds, stdout and stderr (one JSON
    object a line), for reading the answers by hand."""
    import json

    with path.open("w") as f:
        for o in outcomes:
            row = {"name": o.case.name, "argv": o.case.argv, "kind": o.kind, "code": o.code,
                   "cpu_s": round(o.seconds, 2), "stdout": o.stdout,
                   "stderr": o.stderr}  # fmt: skip
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
