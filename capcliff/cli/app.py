"""The typer app, the options the commands share, and the exit codes.

Exit codes: 0 ok, 1 a sizing check failed, 2 usage or invalid input, 4 internal error.
Command modules import `app` from here and register on it; `cli.main` imports them all.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from capcliff.errors import CapcliffError, InputError

E = TypeVar("E", bound=StrEnum)
DEFAULT_MODEL = "deepseek-r1-distill-qwen-32b"
DEFAULT_GPU = "h200-sxm"
# `capcliff calibrate` without --gpu: a calibration records where it came from, never a default.
NO_GPU_NOTE = (
    "note: no --gpu: the input does not say which GPU it ran on, so the calibration records "
    f"none (the fit takes what the input leaves out from {DEFAULT_GPU}); pass --gpu to record it"
)
DEFAULT_GPUS = 8
EXIT_INPUT = 2
EXIT_INTERNAL = 4


class _CoercionOnUse:
    """Typer's coercion of one option, built the first time the option has a value.

    Typer (0.2x) builds a pydantic TypeAdapter for every option of a command on every call,
    given or not (`_TyperParameter.get_runtime_param`, about 2 ms each: 47 for `plan`, 0.1 s of
    every run); an option left at None needs none, and comes back None either way."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:  # click's Parameter and Context
        if value is None and not (param.multiple or param.nargs == -1):
            return None  # what typer's RuntimeParam.coerce returns for a value not given
        from typer._coercion import build_runtime_param

        runtime = build_runtime_param(getattr(param, "type_descriptor"))  # noqa: B009
        setattr(param, "_runtime_param", runtime)  # noqa: B010  (typer's own cache of it)
        return runtime.coerce(value, param=param, ctx=ctx)


def _coerce_on_use(params: list[Any]) -> None:
    """Give each typer parameter of `params` its coercion built on use (`_CoercionOnUse`); a
    parameter of a typer without that cache is left as it is."""
    for param in params:
        if getattr(param, "_runtime_param", False) is None:  # typer builds it on first use
            setattr(param, "_runtime_param", _CoercionOnUse())  # noqa: B010


class _Group(TyperGroup):
    """The app's command group: it and each command it hands out build their options' coercion
    on use (`_coerce_on_use`), the --help options included."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # click's Context
        _coerce_on_use(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:  # click's Context and Command
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _coerce_on_use(command.get_params(ctx))
        return command


app = typer.Typer(
    cls=_Group,
    name="capcliff",
    help="Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help and usage errors as click prints them: typer's rich help imports rich's markdown,
    # syntax and traceback modules (about 0.15 s, half of `capcliff --help`); results are still
    # rendered with rich.
    rich_markup_mode=None,
)


class OutputFormat(StrEnum):
    """How a command prints its result."""

    TABLE = "table"
    JSON = "json"


def _version(show: bool) -> None:
    if show:
        from capcliff import __version__

        typer.echo(f"capcliff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts."""


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table or json.")]
GpuOption = Annotated[str, typer.Option(help="Hardware id (see `capcliff hardware`).")]
ForceOption = Annotated[
    bool,
    typer.Option(
        help="Replace existing output files; apply a calibration made for another deployment."
    ),
]


def _at_least(low: int) -> Callable[[Any, Any, int | None], int | None]:
    def check(ctx: Any, param: Any, value: int | None) -> int | None:
        if value is not None and value < low:
            raise InputError(f"{_flag(param)}: must be an integer >= {low}, got {value}")
        return value

    return check


def _positive_finite(ctx: Any, param: Any, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{_flag(param)}: must be a finite number > 0, got {value}")
    return value


def _share_below_one(ctx: Any, param: Any, value: float | None) -> float | None:
    if value is not None and not 0 <= value < 1:  # NaN fails both comparisons
        raise InputError(f"{_flag(param)}: must be a number in [0, 1), got {value}")
    return value


def max_model_len_option(value: str) -> int:
    """`--max-model-len` read as vLLM reads it (`units.parse_human_int`: 32K is 32,768, 32k
    32,000)."""
    from capcliff.units import parse_human_int

    return parse_human_int(value, field="--max-model-len:")


def _flag(param: Any) -> str:
    return str(param.opts[0]) if getattr(param, "opts", None) else str(param.name)


COUNT = _at_least(1)  # callbacks: counts are >= 1 ...
NON_NEGATIVE = _at_least(0)  # ... seeds >= 0
POSITIVE = _positive_finite  # ... sizes, rates and SLOs > 0 and finite
SHARE = _share_below_one  # ... a share kept spare, in [0, 1)
SeedOption = Annotated[
    int, typer.Option(callback=NON_NEGATIVE, help="Random seed for the workload (>= 0).")
]

# The deployment settings every command that sizes memory takes, one option per field of
# `analysis.deployment_settings.DeploymentSettings` (None: not given). `deployment_options` adds
# them to a command; a new setting is a field there and an entry here.
MEMORY_OPTIONS: dict[str, Any] = {
    "engine": Annotated[str | None, typer.Option(help="vllm (default), vllm-v0, sglang, trtllm.")],
    "weight_dtype": Annotated[
        str | None,
        typer.Option(
            "--weight-dtype",
            "--quantization",
            help="bf16, fp16, fp8, int4 (awq/gptq), mxfp4, nvfp4 (default: as shipped).",
        ),
    ],
    "kv_cache_dtype": Annotated[
        str | None,
        typer.Option(
            "--kv-cache-dtype",
            "--kv-dtype",
            help="KV cache dtype: bf16, fp16, fp8 (default: the engine's auto, the checkpoint's "
            "kv_cache_quant_algo or kv_cache_scheme where the release follows it, else bf16).",
        ),
    ],
    "max_model_len": Annotated[
        int | None,
        typer.Option(
            parser=max_model_len_option,
            metavar="<int>",
            help="Longest request, tokens, as vLLM reads them (32768, 32K = 32,768, 32k = "
            "32,000; default: from the workload or the model).",
        ),
    ],
    "allow_long_max_model_len": Annotated[
        bool | None,
        typer.Option(
            "--allow-long-max-model-len",
            help="Allow a max_model_len past the model's context "
            "(as vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1).",
        ),
    ],
    "rope_scaling": Annotated[
        str | None,
        typer.Option(
            "--rope-scaling",
            metavar="<json>",
            help="A RoPE table over config.json's, as vLLM's --rope-scaling or --hf-overrides "
            '\'{"rope_scaling": ...}\' sets it at launch, e.g. \'{"rope_type": "yarn", '
            '"factor": 4.0, "original_max_position_embeddings": 32768}\'; the model\'s context '
            "is derived with it.",
        ),
    ],
    "gpu_memory_utilization": Annotated[
        float | None, typer.Option(help="vLLM's memory fraction, in (0, 1] (default 0.9).")
    ],
    "gpu_total_memory": Annotated[
        str | None, typer.Option(help="Override the driver-reported memory, e.g. 139.81GiB.")
    ],
    "kv_cache_memory": Annotated[
        str | None, typer.Option(help="vLLM --kv-cache-memory: KV bytes per GPU, e.g. 21.43GiB.")
    ],
    "max_num_seqs": Annotated[int | None, typer.Option(help="Engine max_num_seqs (per replica).")],
    "max_num_batched_tokens": Annotated[
        int | None, typer.Option(help="Engine max_num_batched_tokens (prefill chunk budget).")
    ],
    "enable_chunked_prefill": Annotated[
        bool | None,
        typer.Option(
            "--enable-chunked-prefill/--no-enable-chunked-prefill",
            help="vLLM V0: chunked prefill on or off (default: V0's, on above 32K context "
            "except for MLA models). Off: prefills run in steps of their own and the budget "
            "and profile run cover max_model_len tokens. vLLM V1 and TensorRT-LLM are "
            "simulated with it on (off is refused); SGLang has no such switch.",
        ),
    ],
    "block_size": Annotated[int | None, typer.Option(help="KV block (page) size, tokens.")],
    "enforce_eager": Annotated[
        bool | None, typer.Option("--enforce-eager", help="No CUDA graphs.")
    ],
    "flashinfer_sampler": Annotated[
        bool | None,
        typer.Option(
            "--flashinfer-sampler",
            help="vLLM V1 samples with FlashInfer (up to 0.11.0 wherever FlashInfer is "
            "installed; from 0.11.1 with VLLM_USE_FLASHINFER_SAMPLER=1): the profile run's "
            "sampler peak is 14 B per logit, not 38.",
        ),
    ],
    "mem_fraction_static": Annotated[float | None, typer.Option(help="SGLang's fraction.")],
    "free_gpu_memory_fraction": Annotated[
        float | None, typer.Option(help="TensorRT-LLM's KV fraction of free memory (default 0.9).")
    ],
    "all2all_backend": Annotated[
        str | None,
        typer.Option(
            help="MoE all-to-all: none (every engine's default), deepep (SGLang "
            "--moe-a2a-backend deepep), deepep_high_throughput, deepep_low_latency "
            "(vLLM --all2all-backend; SGLang --deepep-mode): DeepEP's buffers join the budget."
        ),
    ],
    "calibration": Annotated[
        str | None, typer.Option(help="A calibration file written by `capcliff calibrate`.")
    ],
    "engine_version": Annotated[
        str | None,
        typer.Option(
            help="The engine's release, e.g. 0.4.3, for its step-time profile and vLLM's "
            "CUDA-graph rule: capture sizes, and from 0.20.0 (0.26.0 on AMD) the graphs out of "
            "the KV budget, and the flags its printed engine line names (default: the latest "
            "modelled release; outputs print which)."
        ),
    ],
}
# ... and those only a simulation uses.
SIM_OPTIONS: dict[str, Any] = {
    "policy": Annotated[str | None, typer.Option(help="Admission policy (default: the engine's).")],
    "preemption": Annotated[
        str | None, typer.Option(help="recompute (default) or swap: what preemption does to KV.")
    ],
    "swap_space": Annotated[
        str | None,
        typer.Option(help="Host swap pool per GPU for --preemption swap (default 4GiB)."),
    ],
    "routing": Annotated[
        str | None, typer.Option(help="round-robin (default) or least-loaded: DP request routing.")
    ],
    "prefix_caching": Annotated[
        str | None,
        typer.Option(
            help="on or off. Default: the engine's (vllm, sglang: on) for session workloads, "
            "off for single-turn ones."
        ),
    ],
    "offload": Annotated[
        str | None,
        typer.Option(help="KV offload tiers per replica, e.g. cpu:512GiB,nvme:4TiB."),
    ],
    "offload_policy": Annotated[
        str | None,
        typer.Option(
            help="write-through (default: copy KV out as requests finish) or write-back "
            "(copy out when HBM evicts it)."
        ),
    ],
    "request_overhead_ms": Annotated[
        float | None,
        typer.Option(
            help="Time each request spends outside the engine's steps (HTTP, tokenization, the "
            "first chunk, the client), ms, added to TTFT (default: a calibration's fitted "
            "figure, else the engine's measured one: SGLang 6.9, others 0)."
        ),
    ],
    "kv_transfer_overhead_ms": Annotated[
        float | None,
        typer.Option(help="Disaggregated: set-up cost per KV transfer, ms (default 1)."),
    ],
    "speculative": Annotated[
        str | None,
        typer.Option(
            help="Speculative decoding: mtp:K (the model's MTP layers), eagle:K[:DRAFT] "
            "(an EAGLE-3 head) or ngram:K, K draft tokens per step."
        ),
    ],
    "spec_acceptance": Annotated[
        str | None,
        typer.Option(
            help="Per-position acceptance rates of the K drafts, e.g. 0.8,0.6,0.4 (default: "
            "the method's published figures)."
        ),
    ],
    "spec_accept_length": Annotated[
        float | None,
        typer.Option(help="Mean acceptance length, tokens per speculative step, in [1, K+1]."),
    ],
    "spec_overlap": Annotated[
        bool | None,
        typer.Option(
            "--spec-overlap/--no-spec-overlap",
            help="SGLang: speculation under the overlap scheduler (SGLANG_ENABLE_SPEC_V2=1) or "
            "not (default: not, as 0.5.x runs EAGLE/MTP; each step then shows 1.1 ms of host "
            "time).",
        ),
    ],
    "scheduler_recv_interval": Annotated[
        int | None,
        typer.Option(
            help="SGLang --scheduler-recv-interval: receive new requests every N decode steps "
            "(default: every step)."
        ),
    ],
    "attention_dp_balance": Annotated[
        str | None,
        typer.Option(
            help="TensorRT-LLM attention_dp_config under attention DP: on (enable_balance, "
            "timeout_iters 50, batching_wait_iters 10), TIMEOUT[:BATCHING_WAIT] in iterations "
            "(e.g. 60:0) or off (default, as the engine ships): new requests wait until every "
            "attention-DP rank has one, or the timeout.",
        ),
    ],
    "overlap_schedule": Annotated[
        bool | None,
        typer.Option(
            "--overlap-schedule/--no-overlap-schedule",
            help="The engine's overlap scheduler: a request arriving during a step runs from the "
            "step after next (default: on for SGLang and TensorRT-LLM, as they ship; off for vLLM "
            "and SGLang's speculative worker).",
        ),
    ],
    "moe_backend": Annotated[
        str | None,
        typer.Option(
            help="The engine's MoE backend (TensorRT-LLM moe_config.backend: TRTLLM, CUTLASS, "
            "DEEPGEMM, ...; SGLang --moe-runner-backend): which measured rows price "
            "DeepSeek's expert layers (default: the engine's own, TRTLLM/flashinfer_trtllm on "
            "Blackwell; a backend with no measured rows takes the fitted MoE lines); vLLM: "
            "marlin prices MXFP4 experts on Hopper at the Marlin kernel's measured line; "
            "triton prices DeepSeek's block-FP8 experts on Hopper at vLLM's Triton fused-MoE "
            "rows (what vLLM runs where DeepGEMM is not installed).",
        ),
    ],
    "fp8_gemm_backend": Annotated[
        str | None,
        typer.Option(
            help="SGLang's dense block-FP8 GEMM kernel (--fp8-gemm-backend): deep_gemm "
            "(default) or flashinfer_trtllm (what SGL_ENABLE_JIT_DEEPGEMM=false runs on "
            "Blackwell), whose measured line prices those GEMMs' FLOPs on B200/B300/GB200.",
        ),
    ],
    "step_source": Annotated[
        str | None,
        typer.Option(
            help="What prices engine steps: roofline (default) or kernels (aiconfigurator's "
            "measured tables; pip install '.[kernels]')."
        ),
    ],
}

C = TypeVar("C", bound=Callable[..., Any])


def deployment_options(*, simulation: bool) -> Callable[[C], C]:
    """Add the deployment settings' options to a command; it receives them validated as a
    `settings: DeploymentSettings` argument (one-line errors naming the flag)."""
    options = MEMORY_OPTIONS | (SIM_OPTIONS if simulation else {})

    def decorate(command: C) -> C:
        # The command's own annotations, evaluated (its `settings` type is imported for type
        # checking only: a placeholder stands in for it).
        hints = typing.get_type_hints(
            command, include_extras=True, localns={"DeploymentSettings": object}
        )
        signature = inspect.signature(command)
        own = [
            p.replace(annotation=hints[p.name])
            for p in signature.parameters.values()
            if p.name != "settings"
        ]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
            for name, kind in options.items()
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            from capcliff.analysis.deployment_settings import settings_of

            values = {name: kwargs.pop(name) for name in options}
            serve, context = kwargs.pop("serve_command"), kwargs.pop("serve_context")
            warning = None
            if serve is not None:
                values, warning = _read_serve_command(serve, values, kwargs, context)
            try:
                return command(**kwargs, settings=settings_of(values))
            except CapcliffError:
                warning = None  # the error alone, on its one line
                raise
            finally:
                if warning is not None:
                    print_warning(warning)

        params = [*own, *added, _SERVE_COMMAND, _SERVE_CONTEXT]
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper  # type: ignore[return-value]

    return decorate


_SERVE_COMMAND = inspect.Parameter(
    "serve_command",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Option(
            help="The engine command you run today, quoted: 'vllm serve MODEL --tensor-parallel-"
            "size 8 ...', 'python -m sglang.launch_server --model-path MODEL --tp 8 ...' or "
            "'trtllm-serve MODEL --tp_size 8 ...': its model, layout and settings (flags it does "
            "not model are named in a warning; a capcliff flag that says otherwise is an error)."
        ),
    ],
)
# The command's context: which of its options the user gave (against --serve-command).
_SERVE_CONTEXT = inspect.Parameter(
    "serve_context", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
)


def _read_serve_command(
    text: str, values: dict[str, Any], kwargs: dict[str, Any], context: typer.Context
) -> tuple[dict[str, Any], str | None]:
    """The settings, model and layout of `--serve-command` merged into the command's own
    (`kwargs`, updated in place), and the warning naming the flags it does not model (printed
    once the command has run, so that an error stays one line): a flag given with another
    value is a one-line error."""
    from capcliff.analysis.serve_command import (
        merged_settings,
        merged_target,
        parse_serve_command,
    )

    command = parse_serve_command(text, release=values.get("engine_version"))
    merged = merged_settings(command, values)

    def given(name: str) -> Any:
        source = context.get_parameter_source(name)
        if name not in kwargs or source is None or source.name == "DEFAULT":
            return None
        return kwargs[name]

    model, layout = merged_target(command, model=given("model"), layout=given("layout"))
    kwargs["model"] = model
    if "layout" in kwargs:
        kwargs["layout"] = layout
    return merged, command.warning()


def print_warning(line: str) -> None:
    """A warning on stderr, one line."""
    typer.echo(f"warning: {line}", err=True)


def print_warnings(warnings: tuple[str, ...] | list[str]) -> None:
    """Warnings on stderr, one line each."""
    for line in warnings:
        print_warning(line)


def _resolve_gpus(gpus: int | None, layout: str, gpus_per_node: int) -> int:
    """The GPUs `memory` lays out: --gpus, else its layouts' (one count for all of them)."""
    from capcliff.catalog.layout import parse_layout_list

    count = DEFAULT_GPUS if gpus is None else gpus
    if layout != "all":
        named = parse_layout_list(layout)
        counts = dict.fromkeys(lay.gpus for lay in named)
        if len(counts) > 1:
            uses = ", ".join(f"{lay.name} uses {lay.gpus}" for lay in named)
            raise InputError(
                f"layout: one memory report lays out one GPU count ({uses}); run memory once "
                "per count"
            )
        from_layout = named[0].gpus
        if gpus is not None and gpus != from_layout:
            raise InputError(f"gpus: --gpus {gpus} but layout {layout!r} uses {from_layout} GPUs")
        count = from_layout
    from capcliff.analysis.deployment_settings import check_gpu_count

    return check_gpu_count(count, gpus_per_node=gpus_per_node)


def _choice(kind: type[E], text: str, field: str) -> E:
    try:
        return kind(text)
    except ValueError:
        valid = ", ".join(str(v.value) for v in kind)
        raise InputError(f"{field}: unknown {text!r}; valid: {valid}") from None
