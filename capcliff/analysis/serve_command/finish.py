"""What needs every flag read first: the layout from the parallel sizes, then the settings that
depend on it (SGLang's per-replica request cap and HiCache size, vLLM's offload tier, the
all-to-all backend, the speculation) and the engine name (`vllm-v0` under `VLLM_USE_V1=0`)."""

from __future__ import annotations

from capcliff.analysis.serve_command.command import FIELD
from capcliff.analysis.serve_command.readers import Reading
from capcliff.analysis.serve_command.speculation import read_speculation
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.units import GB, GIB

# SGLang's --deepep-mode choices (server_args.py)
_DEEPEP_MODES = ("auto", "normal", "low_latency")
# capcliff's DeepEP all2all_backend values (deepep.py)
_DEEPEP = ("deepep", "deepep_high_throughput", "deepep_low_latency")


def check_visible(r: Reading, layout: Layout) -> None:
    """A server that sees fewer GPUs than one TP group (which never spans nodes) does not
    start: CUDA_VISIBLE_DEVICES names the GPUs of the node it runs on."""
    if r.visible_gpus is not None and r.visible_gpus < layout.tp:
        raise InputError(
            f"{FIELD}: CUDA_VISIBLE_DEVICES names {r.visible_gpus} GPU(s) but the command's "
            f"TP is {layout.tp}; name at least {layout.tp} GPUs or lower the TP"
        )


def read_layout(r: Reading) -> Layout:
    tp, pp, dp = (r.sizes.get(k, 1) for k in ("tp", "pp", "dp"))
    if r.engine == "vllm":
        return Layout(dp=dp, tp=tp, pp=pp, ep=tp * dp if "ep" in r.switches else 1)
    ep = r.sizes.get("ep", 1)
    if r.engine == "sglang" and r.switches & {"ep_moe", "deepep_moe"}:
        ep = tp  # server_args.py (0.4.x): `self.ep_size = self.tp_size` under either switch
    if ep > tp > 0 or (ep > 0 and tp > 0 and tp % ep):
        # trtllm: moe_tp_size x moe_ep_size must equal tp_size (tensorrt_llm/mapping.py);
        # SGLang: each rank's EP rank is tp_rank // (tp_size // ep_size)
        # (python/sglang/srt/entrypoints/engine.py), so EP divides the TP ranks
        raise InputError(
            f"{FIELD}: an EP size of {ep} does not divide the TP size {tp}: the engine splits "
            f"the {tp} TP ranks into EP groups; give an EP size that divides {tp}"
        )
    if r.engine == "trtllm" and "adp" in r.switches:
        return Layout(dp=tp, tp=1, pp=pp, ep=ep, attention_dp=True)
    if r.engine == "trtllm":
        return Layout(tp=tp, pp=pp, ep=ep)
    if "dpa" in r.switches and dp > 1:  # --tp counts every rank of the lockstep group
        if tp % dp:
            raise InputError(f"{FIELD}: --dp {dp} does not divide --tp {tp} (SGLang DP attention)")
        return Layout(dp=dp, tp=tp // dp, pp=pp, ep=ep, attention_dp=True)
    return Layout(dp=dp, tp=tp, pp=pp, ep=ep)


def _running_per_replica(running: int, layout: Layout) -> int:
    """SGLang's `--max-running-requests` per replica: the group's total under DP attention,
    `running // dp_size` each (SGLang's tp_worker, which asserts it is > 0), else per replica."""
    ranks = layout.lockstep_replicas
    if running < ranks:
        raise InputError(
            f"{FIELD}: --max-running-requests {running} is the total of {ranks} attention-DP "
            f"ranks, {running} // {ranks} = 0 each, and SGLang does not start; give at least "
            f"{ranks}"
        )
    return running // ranks


def finish(r: Reading, layout: Layout) -> None:
    """Engine-specific settings that need the layout: SGLang's request cap and HiCache, vLLM's
    offload backend and all-to-all, the engine itself."""
    s = r.settings
    s["engine"] = "vllm-v0" if r.vllm_v0 else r.engine
    chunked = s.pop("v0_chunked_prefill", None)
    if r.vllm_v0 and chunked is not None:  # V1 always chunks: the flag changes nothing there
        s["enable_chunked_prefill"] = chunked
    running = s.pop("max_running_requests", None)
    if running is not None:
        s["max_num_seqs"] = _running_per_replica(running, layout)
    gib, backend = s.pop("offload_gib", None), s.pop("offload_backend", None)
    refuse_v0_offload(r.vllm_v0 and (gib, backend) != (None, None), "VLLM_USE_V1=0")
    if gib is not None and backend in (None, "native"):
        s["offload"] = f"cpu:{gib:g}GiB"  # the total over the replica's ranks = per replica
    elif gib is not None:
        r.unmodelled.append(f"--kv-offloading-backend {backend}")
    size, policy = s.pop("hicache_gb", None), s.pop("hicache_policy", None)
    if "hicache" in r.switches and size is not None:
        ranks = layout.gpus_per_replica
        s["offload"] = f"cpu:{size * ranks * GB / GIB:g}GiB"  # per rank, GB
        if policy is not None:
            s["offload_policy"] = policy.replace("_", "-")
    elif "hicache" in r.switches:
        r.unmodelled.append("--enable-hierarchical-cache without --hicache-size")
    _all_to_all(r)
    read_speculation(r)


def _all_to_all(r: Reading) -> None:
    """SGLang's --moe-a2a-backend and --deepep-mode, vLLM's --all2all-backend, as capcliff's
    `all2all_backend`; a backend it does not model is named."""
    s = r.settings
    a2a, mode = s.pop("a2a", None), s.pop("deepep_mode", None)
    if "deepep_moe" in r.switches:  # SGLang 0.4.5 - 0.4.x's switch for --moe-a2a-backend deepep
        a2a = "deepep"
    if mode is not None and mode not in _DEEPEP_MODES:
        raise InputError(
            f"{FIELD}: --deepep-mode {mode!r} is not one of SGLang's {', '.join(_DEEPEP_MODES)}"
        )
    if a2a == "deepep":
        modes = {None: "deepep", "auto": "deepep", "normal": "deepep_high_throughput",
                 "low_latency": "deepep_low_latency"}  # fmt: skip
        s["all2all_backend"] = modes.get(mode, "deepep")
    elif a2a not in (None, "none"):
        r.unmodelled.append(f"--moe-a2a-backend {a2a}")
    if s.get("all2all_backend") not in (None, "none", *_DEEPEP):
        r.unmodelled.append(f"--all2all-backend {s.pop('all2all_backend')}")


def refuse_v0_offload(v0: bool, how: str) -> None:
    """vLLM's offloading flags are V1's OffloadingConnector (vllm/config/cache.py
    `kv_offloading_size`, vllm-project/vllm PR #24498, vLLM 0.11, after V0's removal): V0's
    parser refuses them."""
    if v0:
        raise InputError(
            f"{FIELD}: --kv-offloading-size/--kv-offloading-backend are vLLM V1's (0.11 and "
            f"later); {how} runs V0, which has no KV offloading flag: drop one of them"
        )
