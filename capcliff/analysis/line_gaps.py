"""What an engine line for an older release (`--engine-version`) leaves out of the deployment
simulated because that release has no flag for it (`analysis/flag_releases.py`): one line each,
naming the release the flag came in, so a dropped flag is never silent."""

from __future__ import annotations

from capcliff.analysis.flag_releases import Release, first, named, takes, vllm_block_sizes
from capcliff.analysis.flags import (
    SGLANG_DEEPEP_MODES,
    SGLANG_SPEC_ALGORITHM,
    VLLM_DEEPEP_MODES,
    Deployment,
    line_release,
    named_kv,
    sglang_deepep_expressible,
    sglang_ep_expressible,
    sglang_tp,
)

# (what the line would print, how it is said, what the line does instead)
Gap = tuple[str, str, str]


def line_gaps(dep: Deployment, engine: str) -> list[str]:
    """What `engine`'s line (vllm, sglang) cannot say at its release (`line_release`)."""
    release = line_release(dep, engine)
    if release is None or engine not in ("vllm", "sglang"):
        return []
    gaps = _vllm_gaps(dep) if engine == "vllm" else _sglang_gaps(dep)
    name = "vllm (V0)" if engine == "vllm" and dep.vllm_v0 else engine
    said = [
        f"{name} {named(release)}: {what} came in {named(first(engine, key))}; {instead}"
        for key, what, instead in gaps
        if not takes(release, engine, key)
    ]
    if engine == "vllm":
        return said + _vllm_block_gaps(dep, release, name)
    return said


def _vllm_gaps(dep: Deployment) -> list[Gap]:
    """The vllm line's settings that some release lacks: EP, the KV bytes, the CPU tier, DeepEP
    and the speculation (its --speculative-config, the EAGLE-3 method)."""
    speculating = dep.speculative is not None
    candidates: list[tuple[bool, Gap]] = [
        (dep.moe and dep.layout.ep > 1,
         ("--enable-expert-parallel", "--enable-expert-parallel",
          "the line runs the MoE layers TP-sharded, not the EP simulated")),
        (dep.kv_cache_memory_bytes is not None,
         ("--kv-cache-memory-bytes", "--kv-cache-memory-bytes",
          "the line's KV pool is what --gpu-memory-utilization leaves, not the bytes simulated")),
        # V0's own line says its CPU tier (`unexpressed`)
        (bool(dep.offload_cpu_bytes) and not dep.vllm_v0,
         ("--kv-offloading-backend", "--kv-offloading-backend",
          "the CPU tier simulated needs an LMCache --kv-transfer-config")),
        (dep.all2all_backend in VLLM_DEEPEP_MODES,
         ("VLLM_ALL2ALL_BACKEND=deepep", "DeepEP (VLLM_ALL2ALL_BACKEND)",
          "the line runs vLLM's naive all-to-all")),
        (speculating,
         ("--speculative-config", "--speculative-config",
          "speculation is --speculative-model with --num-speculative-tokens there; the line "
          "runs without it")),
        (speculating and dep.speculative is not None and dep.speculative[0] == "eagle",
         ("method eagle3", "the eagle3 method", "the line runs without speculation")),
    ]  # fmt: skip
    return [gap for applies, gap in candidates if applies]


def _vllm_block_gaps(dep: Deployment, release: Release, name: str) -> list[str]:
    """A block size outside vLLM `release`'s --block-size choices."""
    sizes = vllm_block_sizes(release)
    if dep.block_size is None or sizes is None or dep.block_size in sizes:
        return []
    return [
        f"{name} {named(release)}: --block-size takes {', '.join(map(str, sorted(sizes)))}, "
        f"not the {dep.block_size} simulated; the line keeps the engine's default"
    ]


def _sglang_gaps(dep: Deployment) -> list[Gap]:
    """The sglang line's settings that some release lacks: PP, EP within the TP group, the
    16-bit KV name, HiCache's size, the page size, DeepEP and the speculation."""
    lay, gaps = dep.layout, list[Gap]()
    if lay.pp > 1:
        gaps.append(("--pp-size", "--pp-size",
                     f"this release cannot serve {lay.name}'s pipeline stages"))  # fmt: skip
    if dep.moe and lay.ep > 1 and not sglang_ep_expressible(dep):
        gaps.append(("--ep-size without --enable-ep-moe",
                     f"--ep-size {lay.ep} within --tp {sglang_tp(dep)}",
                     "before it --enable-ep-moe runs EP over the whole --tp group only; the "
                     "line runs the MoE layers TP-sharded"))  # fmt: skip
    if dep.kv_cache_dtype == "auto" and named_kv(dep, "sglang", "bf16") == "bf16":
        gaps.append(("--kv-cache-dtype bf16", "--kv-cache-dtype bf16",
                     "this release stores the checkpoint's FP8 KV cache, not the 16-bit cache "
                     "planned: its KV pool holds twice the tokens"))  # fmt: skip
    if dep.offload_cpu_bytes:
        gaps.append(("--hicache-size", "--hicache-size",
                     "--enable-hierarchical-cache there sizes the host tier as --hicache-ratio "
                     "(default 2.0) x the GPU pool; the line sets no CPU tier"))  # fmt: skip
    if dep.block_size is not None:
        gaps.append(("--page-size", "--page-size", "the line keeps pages of one token"))
    return gaps + _sglang_deepep_gaps(dep) + _sglang_speculation_gaps(dep)


def _sglang_deepep_gaps(dep: Deployment) -> list[Gap]:
    """DeepEP where its mode cannot run on the release (the layout's EP, when it cannot, is
    said apart)."""
    if dep.all2all_backend not in SGLANG_DEEPEP_MODES or not sglang_ep_expressible(dep):
        return []
    gaps: list[Gap] = [("--deepep-mode", "DeepEP (--deepep-mode)", "the line runs without it")]
    if not sglang_deepep_expressible(dep) and takes(
        line_release(dep, "sglang"), "sglang", "--deepep-mode"
    ):
        gaps.append(("--deepep-mode auto with --enable-dp-attention",
                     "--deepep-mode auto beside --enable-dp-attention",
                     "the line runs without DeepEP"))  # fmt: skip
    return gaps


def _sglang_speculation_gaps(dep: Deployment) -> list[Gap]:
    """The speculation's algorithm, and SGLANG_ENABLE_SPEC_V2 where it was simulated."""
    if dep.speculative is None:
        return []
    algorithm = SGLANG_SPEC_ALGORITHM[dep.speculative[0]]
    gaps: list[Gap] = [(f"--speculative-algorithm {algorithm}",
                        f"--speculative-algorithm {algorithm}",
                        "the line runs without speculation")]  # fmt: skip
    if dep.spec_overlap:
        gaps.append(("SGLANG_ENABLE_SPEC_V2", "SGLANG_ENABLE_SPEC_V2",
                     "this release runs speculation with the overlap scheduler off, not under "
                     "it as simulated"))  # fmt: skip
    return gaps
