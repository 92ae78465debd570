"""The eighth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py sess8 engines8 calib8 disagg8 check8 trace8

What the seven campaigns before did not try: session presets against every shaping flag, engine
and cache setting (sess8); vLLM V0's chunking and batch budget against session and long
workloads (engines8); the pacing and cap fields of a vLLM or SGLang result (calib8);
closed-loop clients and sessions on two pools, and the KV transfer's numbers (disagg8); a check
scenario's session workload keys (check8); session traces whose turns outgrow a context or
whose numbers sit at their limits (trace8).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

from collections.abc import Callable, Iterator

from fuzz_cases7 import CAL, DISAGG, SESS, SW_SESS, TRACE, Table, _cases, _lines
from fuzz_harness import Case, FileSpec
from fuzz_surfaces import HUGE_INT, RUNS, SESSION_ROWS, SPEC

# fmt: off
SW_CL = [*SW_SESS, "--clients", "4"]
SW_RATE = [*SW_SESS, "--rate", "1"]
PLAN_SESS = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SESS]
SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SW = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]


# Session presets against their shaping flags ------------------------------------------------------

def sess8_cases() -> Iterator[Case]:
    table: Table = [
        ("clients-valid", SW_CL, False),
        ("rate-valid", SW_RATE, False),
        ("agentic-clients", ["sweep", "llama-3.1-8b", "--workload", "agentic", "--num-requests", "20", "--concurrency", "4", "--clients", "2"], None),
        ("no-load", SW_SESS, True),
        ("turns-0", [*SW_CL, "--turns", "0"], True),
        ("turns-0.5", [*SW_CL, "--turns", "0.5"], True),
        ("turns-1", [*SW_CL, "--turns", "1"], False),
        ("turns-nan", [*SW_CL, "--turns", "nan"], True),
        ("turns-inf", [*SW_CL, "--turns", "inf"], True),
        ("turns-1e9", [*SW_CL, "--turns", "1e9"], None),
        ("turns-huge", [*SW_CL, "--turns", HUGE_INT], True),
        ("think-neg", [*SW_CL, "--think-time", "-1"], True),
        ("think-nan", [*SW_CL, "--think-time", "nan"], True),
        ("think-inf", [*SW_CL, "--think-time", "inf"], True),
        ("think-1e308", [*SW_CL, "--think-time", "1e308"], None),
        ("think-0", [*SW_CL, "--think-time", "0"], False),
        ("context-0", [*SW_CL, "--context", "0"], None),
        ("context-neg", [*SW_CL, "--context", "-5"], True),
        ("context-room", [*SW_CL, "--context", "29000"], True),
        ("context-just", [*SW_CL, "--context", "20000"], None),
        ("context-most-turns-past", [*SW_CL, "--context", "28000"], None),  # a turn fits under 472 new tokens
        ("context-huge", [*SW_CL, "--context", HUGE_INT], True),
        ("isl-0", [*SW_CL, "--isl", "0"], True),
        ("isl-huge", [*SW_CL, "--isl", "40000"], True),
        ("osl-40000", [*SW_CL, "--osl", "40000"], None),
        ("osl-list", [*SW_CL, "--osl", "100,200"], None),
        ("osl-lognormal", [*SW_CL, "--osl", "lognormal:100:400"], None),
        ("range-ratio-0", [*SW_CL, "--random-range-ratio", "0"], True),
        ("range-ratio-1", [*SW_CL, "--random-range-ratio", "1", "--isl", "100", "--osl", "50"], None),
        ("range-ratio-2", [*SW_CL, "--random-range-ratio", "2"], True),
        ("arrival-batch", [*SW_CL, "--arrival", "batch"], True),
        ("arrival-poisson-with-clients", [*SW_CL, "--arrival", "poisson"], True),
        ("clients-and-rate", [*SW_CL, "--rate", "1"], True),
        ("clients-0", [*SW_SESS, "--clients", "0"], True),
        ("rate-0", [*SW_SESS, "--rate", "0"], True),
        ("rate-tiny", [*SW_SESS, "--rate", "1e-300"], None),
        ("rate-huge", [*SW_SESS, "--rate", "1e300"], None),
        ("max-model-len-short", [*SW_CL, "--max-model-len", "4096"], True),
        ("max-model-len-exact", [*SW_CL, "--max-model-len", "32768"], False),
        ("prefix-off-offload", [*SW_CL, "--prefix-caching", "off", "--offload", "cpu:64GiB"], None),
        ("prefix-bad", [*SW_CL, "--prefix-caching", "maybe"], True),
        ("offload-write-back", [*SW_CL, "--offload", "cpu:64GiB", "--offload-policy", "write-back"], False),
        ("offload-policy-alone", [*SW_CL, "--offload-policy", "write-back"], True),
        ("num-requests-1", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "1", "--concurrency", "4", "--clients", "4"], None),
        ("plan-clients", [*PLAN_SESS, "--clients", "4"], None),
        ("plan-rate", [*PLAN_SESS, "--rate", "1"], None),
        ("plan-rate-headroom-1", [*PLAN_SESS, "--rate", "1", "--headroom", "1"], True),
        ("plan-turns-nan", [*PLAN_SESS, "--rate", "1", "--turns", "nan"], True),
        ("plan-batch", [*PLAN_SESS, "--arrival", "batch"], None),
        ("plan-max-model-len-short", [*PLAN_SESS, "--rate", "1", "--max-model-len", "8192"], True),
    ]
    yield from _cases("sess8", table)


# vLLM V0 and the batch budget ---------------------------------------------------------------------

def engines8_cases() -> Iterator[Case]:
    v0 = ["--engine", "vllm-v0"]
    table: Table = [
        ("v0-sessions", [*SW_CL, *v0], False),
        ("v0-sessions-rate", [*SW_RATE, *v0], False),
        ("v0-sessions-chunked", [*SW_CL, *v0, "--enable-chunked-prefill"], False),
        ("v0-sessions-unchunked-budget-low", [*SW_CL, *v0, "--no-enable-chunked-prefill", "--max-num-batched-tokens", "4096"], True),
        ("v0-sessions-agentic", ["sweep", "llama-3.1-8b", "--workload", "agentic", "--num-requests", "20", "--concurrency", "4", "--clients", "2", *v0], None),
        ("v0-reasoning", ["sweep", "llama-3.1-8b", "--workload", "reasoning", "--num-requests", "20", "--concurrency", "4", *v0], None),
        ("v0-chat-rate", ["sweep", "llama-3.1-8b", "--workload", "chat", "--num-requests", "20", "--concurrency", "4", "--rate", "2", *v0], None),
        ("v0-lognormal-osl-rate", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "lognormal:200:2000", "--num-requests", "20", "--rate", "2", "--concurrency", "4", *v0], None),
        ("v0-budget-0", [*SW, *v0, "--max-num-batched-tokens", "0"], True),
        ("v0-budget-1", [*SW, *v0, "--max-num-batched-tokens", "1"], True),
        ("v0-block-0", [*SW, *v0, "--block-size", "0"], True),
        ("v0-block-huge", [*SW, *v0, "--block-size", HUGE_INT], True),
        ("v0-seqs-0", [*SW, *v0, "--max-num-seqs", "0"], True),
        ("v0-plan-sessions", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SESS, "--rate", "1", *v0], None),
        ("sglang-sessions", [*SW_CL, "--engine", "sglang"], False),
        ("trtllm-sessions", [*SW_CL, "--engine", "trtllm"], None),
        ("sglang-v0-flag", [*SW_CL, "--engine", "sglang", "--enable-chunked-prefill"], True),
        ("v0-policy-sglang", [*SW_CL, *v0, "--policy", "sglang"], None),
        ("vllm-policy-v0", [*SW_CL, "--policy", "vllm-v0"], None),
        ("policy-bad", [*SW_CL, "--policy", "fifo"], True),
    ]
    yield from _cases("engines8", table)


# A result's pacing and cap ------------------------------------------------------------------------

def calib8_cases() -> Iterator[Case]:
    def each(**changes: object) -> dict[str, FileSpec]:
        return {"r.json": _lines([{**run, **changes} for run in RUNS])}

    def first(**changes: object) -> dict[str, FileSpec]:
        return {"r.json": _lines([{**RUNS[0], **changes}, *RUNS[1:]])}

    table: list[tuple[str, dict[str, FileSpec], bool | None]] = [
        ("rate-under-cap", first(request_rate=4.0), True),
        ("rate-under-cap-all", each(request_rate=100.0), True),
        ("rate-infinity-json", {"r.json": _lines([{**run, "request_rate": float("inf")} for run in RUNS])}, False),
        ("rate-inf-text-case", first(request_rate="Inf"), True),
        ("rate-INF", first(request_rate="INF"), True),
        ("rate-true", first(request_rate=True), True),
        ("rate-list", first(request_rate=[4]), True),
        ("rate-null", first(request_rate=None), False),
        ("cap-0", first(max_concurrency=0), True),
        ("cap-neg", first(max_concurrency=-8), True),
        ("cap-float", first(max_concurrency=8.5), True),
        ("cap-text", first(max_concurrency="8"), True),
        ("cap-huge", first(max_concurrency=HUGE_INT), True),
        ("cap-null-inf-rate", first(max_concurrency=None), None),
        ("burstiness-0", first(burstiness=0), None),
        ("burstiness-nan", first(burstiness=float("nan")), None),
        ("duration-neg", first(duration=-60.0), None),
        ("completed-gt-prompts", first(completed=400), True),
        ("completed-float", first(completed=199.5), True),
        ("num-prompts-0", first(num_prompts=0), True),
        ("prompts-text", first(num_prompts="200"), True),
        ("output-throughput-0", first(output_throughput=0), True),
        ("tpot-0", first(mean_tpot_ms=0), True),
        ("ttft-neg", first(mean_ttft_ms=-1), True),
        ("random-range-ratio-2", first(random_range_ratio=2.0), True),
        ("random-range-ratio-neg", first(random_range_ratio=-0.5), True),
        ("random-input-len-0", first(random_input_len=0), True),
        ("random-output-len-0", first(random_output_len=0), True),
        ("model-id-other", first(model_id="Qwen/Qwen3-8B"), True),
        ("backend-num", first(backend=5), None),
        ("same-run-twice", {"r.json": _lines([RUNS[0], RUNS[0], *RUNS[1:]])}, True),
    ]
    for name, files, invalid in table:
        yield Case("calib8", name, CAL, files, invalid)
    yield Case("calib8", "jsonl-rate-under-cap", ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
               {"r.jsonl": _lines([{"request_rate": 8.0, "max_concurrency": 8, "random_input_len": 1024, "random_output_len": 128, "completed": 80, "output_throughput": 800.0}])}, True)


# Two pools: closed-loop clients, sessions, and the transfer ---------------------------------------

def disagg8_cases() -> Iterator[Case]:
    table: Table = [
        ("sweep-clients", [*SW, "--clients", "4", *DISAGG], False),
        ("sweep-sessions-clients", [*SW_CL, *DISAGG], False),
        ("sweep-sessions-rate", [*SW_RATE, *DISAGG], False),
        ("sweep-sessions-think-0", [*SW_CL, "--think-time", "0", *DISAGG], False),
        ("sweep-offload-prefix-off", [*SW, *DISAGG, "--prefix-caching", "off", "--offload", "cpu:64GiB"], None),
        ("sweep-transfer-nan", [*SW, *DISAGG, "--kv-transfer-overhead-ms", "nan"], True),
        ("sweep-transfer-inf", [*SW, *DISAGG, "--kv-transfer-overhead-ms", "inf"], True),
        ("sweep-transfer-neg", [*SW, *DISAGG, "--kv-transfer-overhead-ms", "-1"], True),
        ("sweep-transfer-1e9", [*SW, *DISAGG, "--kv-transfer-overhead-ms", "1e9"], None),
        ("sweep-decode-0", [*SW, "--disagg", "1p:tp1,0d:tp1"], True),
        ("sweep-prefill-only", [*SW, "--disagg", "1p:tp1"], True),
        ("sweep-same-role-twice", [*SW, "--disagg", "1p:tp1,1p:tp1"], True),
        ("sweep-v0-disagg", [*SW, *DISAGG, "--engine", "vllm-v0"], None),
        ("sweep-v0-sessions-disagg", [*SW_CL, *DISAGG, "--engine", "vllm-v0"], None),
        ("sweep-max-model-len-short-sessions", [*SW_CL, *DISAGG, "--max-model-len", "4096"], True),
        ("plan-sessions-rate", ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", *SESS, "--rate", "1", "--disagg"], None),
        ("plan-sessions-clients", ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", *SESS, "--clients", "2", "--disagg"], None),
        ("plan-transfer-inf", ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", *SMALL, "--rate", "2", "--disagg", "--kv-transfer-overhead-ms", "inf"], True),
        ("plan-gpus-1", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--rate", "2", "--disagg"], True),
    ]
    yield from _cases("disagg8", table)


# A check scenario's session workload --------------------------------------------------------------

SCENARIO = SPEC.split("[scenario.workload]")[0]  # the check surface's scenario, up to its workload


def _spec(workload: str, extra: str = "") -> str:
    return f"{SCENARIO}{extra}\n[scenario.workload]\n{workload}\n"


def check8_cases() -> Iterator[Case]:
    base = 'preset = "multiturn-chat"\nnum_requests = 20\nclients = 4\nconcurrency = 4'
    table: list[tuple[str, str, bool | None]] = [
        ("valid", _spec(base), False),
        ("rate", _spec('preset = "multiturn-chat"\nnum_requests = 20\nrate = 1.0\nconcurrency = 4'), None),
        ("no-load", _spec('preset = "multiturn-chat"\nnum_requests = 20'), None),
        ("turns-nan", _spec(base + "\nturns = nan"), True),
        ("turns-0", _spec(base + "\nturns = 0"), True),
        ("think-inf", _spec(base + "\nthink_time_s = inf"), True),
        ("think-neg", _spec(base + "\nthink_time_s = -1.0"), True),
        ("context-neg", _spec(base + "\ncontext = -1"), True),
        ("context-room", _spec(base + "\ncontext = 30000"), True),
        ("max-model-len-short", _spec(base, "max_model_len = 4096"), True),
        ("max-model-len-exact", _spec(base, "max_model_len = 32768"), None),
        ("v0", _spec(base).replace('engine = "vllm"', 'engine = "vllm-v0"'), None),
        ("offload-prefix-off", _spec(base, 'offload = "cpu:64GiB"\nprefix_caching = "off"'), None),
        ("preset-unknown", _spec('preset = "multiturn"\nnum_requests = 20\nclients = 4'), True),
        ("preset-int", _spec('preset = 5\nnum_requests = 20\nclients = 4'), True),
        ("range-ratio-2", _spec(base + "\nrandom_range_ratio = 2.0"), True),
    ]
    for name, text, invalid in table:
        yield Case("check8", name, ["check", "{d}/s.toml"], {"s.toml": text}, invalid)


# Session traces at their limits -------------------------------------------------------------------

def trace8_cases() -> Iterator[Case]:
    def rows(**changes: object) -> dict[str, FileSpec]:
        return {"t.jsonl": _lines([{**SESSION_ROWS[0], **changes}, *SESSION_ROWS[1:]])}

    long_turns = [{"session_id": "a", "turn": k, "input_tokens": 30_000, "output_tokens": 20, **({"arrival_s": 0.0} if k == 0 else {"think_s": 0.0})} for k in range(6)]
    table: list[tuple[str, dict[str, FileSpec], bool | None, list[str]]] = [
        ("valid", rows(), False, []),
        ("context-past-model", {"t.jsonl": _lines(long_turns)}, True, []),
        ("context-past-model-allowed", {"t.jsonl": _lines(long_turns)}, None, ["--allow-long-max-model-len"]),
        ("prefix-tokens-past-input", rows(prefix_tokens=10_000), None, []),  # on top of input_tokens: valid
        ("prefix-tokens-no-id", {"t.jsonl": _lines([*SESSION_ROWS[:2], {**SESSION_ROWS[2], "prefix_id": None}, SESSION_ROWS[3]])}, True, []),
        ("later-turn-other-prefix", {"t.jsonl": _lines([SESSION_ROWS[0], SESSION_ROWS[1], SESSION_ROWS[2], {**SESSION_ROWS[3], "prefix_id": "other", "prefix_tokens": 16}])}, True, []),
        ("prefix-tokens-neg", rows(prefix_tokens=-1), True, []),
        ("turn-neg", rows(turn=-1), True, []),
        ("turn-gap", {"t.jsonl": _lines([SESSION_ROWS[0], {**SESSION_ROWS[1], "turn": 5}, *SESSION_ROWS[2:]])}, None, []),
        ("arrival-huge", rows(arrival_s=1e300), None, []),
        ("think-huge", {"t.jsonl": _lines([SESSION_ROWS[0], {**SESSION_ROWS[1], "think_s": 1e300}, *SESSION_ROWS[2:]])}, None, []),
        ("session-id-int", rows(session_id=5), None, []),
        ("session-id-null", rows(session_id=None), True, []),
        ("v0", rows(), False, ["--engine", "vllm-v0"]),
        ("disagg", rows(), False, DISAGG),
        ("clients", rows(), None, ["--clients", "2"]),
        ("max-model-len-short", rows(), True, ["--max-model-len", "64"]),
    ]
    for name, files, invalid, extra in table:
        yield Case("trace8", name, [*TRACE, *extra], files, invalid)


SURFACES8: dict[str, Callable[[], Iterator[Case]]] = {
    "sess8": sess8_cases, "engines8": engines8_cases, "calib8": calib8_cases,
    "disagg8": disagg8_cases, "check8": check8_cases, "trace8": trace8_cases,
}
# fmt: on
