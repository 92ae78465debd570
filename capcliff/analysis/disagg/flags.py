"""Engine settings for a disaggregated deployment: SGLang, vLLM and Dynamo-style worker counts.

- SGLang (docs.sglang.io, advanced_features/pd_disaggregation; `server_args.py`): each worker is a
  `sglang.launch_server` with `--disaggregation-mode prefill|decode`, the KV transfer engine
  `--disaggregation-transfer-backend mooncake|nixl` and the RDMA NIC `--disaggregation-ib-device`;
  a router (`sglang_router.launch_router --pd-disaggregation --prefill URL --decode URL`) pairs
  them.
- vLLM (docs.vllm.ai, features/nixl_connector_usage): each worker is a `vllm serve` with
  `--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'`, and a proxy
  sends each request to a prefill worker then a decode worker.
- Dynamo (docs.nvidia.com/dynamo, disaggregated serving): prefill and decode workers counted
  separately; one worker per instance here.
"""

from __future__ import annotations

import json

from capcliff.analysis.deployment import Deployment, sglang_default_fraction
from capcliff.analysis.disagg.pools import DisaggSpec, PoolPlan
from capcliff.analysis.flags import Deployment as Served
from capcliff.analysis.flags import command_text, sglang_command, vllm_command
from capcliff.analysis.plan.commands import MODEL_PLACEHOLDER, served_model
from capcliff.analysis.plan.inputs import PlanInputs
from capcliff.analysis.setting_refusals import sglang_fp4_refusal
from capcliff.catalog.layout import Layout
from capcliff.units import KVDType, counted

# vLLM's NIXL connector: one role for both sides (the proxy decides who prefills).
VLLM_KV_TRANSFER_CONFIG = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
SGLANG_TRANSFER_BACKEND = "mooncake"  # SGLang's default transfer engine
SGLANG_IB_DEVICE = "mlx5_0"  # a placeholder: the NIC name of the cluster (ibv_devices)


def _served(dep: Deployment, plan: PoolPlan, inputs: PlanInputs, max_num_seqs: int) -> Served:
    layout: Layout = plan.memory.layout
    stage = plan.memory.stages[0]
    given = dep.settings.mem_fraction_static
    return Served(
        model=served_model(dep, local=False),
        layout=layout,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max(inputs.config.max_num_batched_tokens, max_num_seqs),
        chunked_prefill_size=inputs.config.max_num_batched_tokens,
        gpus_per_node=plan.hardware.gpus_per_node,
        max_model_len=inputs.max_model_len,
        gpu_memory_utilization=dep.settings.gpu_memory_utilization,
        mem_fraction_static=given
        if given is not None
        else sglang_default_fraction(
            dep, layout, stage.total_memory_bytes, vendor=plan.hardware.vendor, disaggregated=True
        ),
        kv_cache_dtype="fp8" if dep.kv_dtype is KVDType.FP8 else "auto",
        moe=dep.model.arch.moe is not None,
        mla=dep.model.arch.mla is not None,
    )


# the entry beside the lines when the config names no HF repo: the workers load the placeholder
PLACEHOLDER_NOTE = (
    f"{MODEL_PLACEHOLDER} in the lines: the config names no HF repo (_name_or_path); replace it "
    "with the repo id or the model directory on each worker"
)


def _url(role: str, index: int) -> str:
    """A placeholder address of a worker (host `prefill-0`, SGLang's default port 30000)."""
    return f"http://{role}-{index}:30000"


def _more(command: str, args: list[str]) -> str:
    """`command` (as `command_text` writes it) with `args`, one option per line (`args` start
    with an option, so `command_text` opens with an empty first line and its continuation)."""
    return command + command_text(args)


def disagg_engine_settings(
    dep: Deployment,
    spec: DisaggSpec,
    pools: tuple[PoolPlan, PoolPlan],
    inputs: PlanInputs,
    decode_cap: int | None,
) -> dict[str, str]:
    """Command lines per worker kind and engine, and the Dynamo-style worker counts."""
    pre, dec = pools
    decode_seqs = (
        dec.pool.config.max_num_seqs if decode_cap is None else -(-decode_cap // dec.pool.replicas)
    )
    prefill = _served(dep, pre, inputs, pre.pool.config.max_num_seqs)
    decode = _served(dep, dec, inputs, decode_seqs)
    transfer = [
        "--disaggregation-transfer-backend", SGLANG_TRANSFER_BACKEND,
        "--disaggregation-ib-device", SGLANG_IB_DEVICE,
    ]  # fmt: skip
    kv_config = ["--kv-transfer-config", json.dumps(VLLM_KV_TRANSFER_CONFIG, separators=(",", ":"))]
    router = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
    router += [w for i in range(spec.prefill_instances) for w in ("--prefill", _url("prefill", i))]
    router += [w for i in range(spec.decode_instances) for w in ("--decode", _url("decode", i))]
    refused = [why for p in pools if (why := sglang_fp4_refusal(dep.scheme, p.hardware))]
    sglang = {
        "sglang prefill": _more(
            sglang_command(prefill), ["--disaggregation-mode", "prefill", *transfer]
        ),
        "sglang decode": _more(
            sglang_command(decode), ["--disaggregation-mode", "decode", *transfer]
        ),
        "sglang router": command_text(router),
    }
    return {
        **({"sglang": f"no line: {refused[0]}"} if refused else sglang),
        **({"model": PLACEHOLDER_NOTE} if prefill.model == MODEL_PLACEHOLDER else {}),
        "vllm prefill": _more(vllm_command(prefill), kv_config),
        "vllm decode": _more(vllm_command(decode), kv_config),
        "dynamo": (
            f"{counted(spec.prefill_instances, 'prefill worker')} x "
            f"{counted(spec.prefill.gpus, f'{pre.hardware.id} GPU')} ({spec.prefill.name}), "
            f"{counted(spec.decode_instances, 'decode worker')} x "
            f"{counted(spec.decode.gpus, f'{dec.hardware.id} GPU')} ({spec.decode.name})"
        ),
    }
