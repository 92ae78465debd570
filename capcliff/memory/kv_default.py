"""The KV cache dtype an engine stores when `--kv-cache-dtype` is left at its default.

Each engine's default is `auto`. Where the checkpoint names a KV cache quantisation of its own
(ModelOpt's `kv_cache_quant_algo: FP8` in hf_quant_config.json, shipped with the k/v scales, as
NVIDIA's FP4 and FP8 exports do), `auto` takes it at these releases:

- TensorRT-LLM (PyTorch backend, every modelled release): `validate_and_set_kv_cache_quant`
  leaves the checkpoint's quantisation in place for `auto` (start-up log line: 'KV cache
  quantization set to "auto". Using checkpoint KV quantization.').
- SGLang from 0.4.3: ModelRunner.configure_kv_cache_dtype maps `auto` to float8_e4m3fn (fnuz on
  ROCm) when the model's quant_config has `kv_cache_quant_algo` "FP8"; added with ModelOpt's FP8
  KV cache (sgl-project/sglang PR 3223, merged 2025-01-30, first in 0.4.3).
- vLLM V1 from 0.14: the KV dtype is read from hf_quant_config.json when none is given
  (vllm-project/vllm PR 30785, merged 2025-12-16; 0.14.0 is the first release cut wholly after
  it, 0.13.0 may hold it too). Earlier releases, and V0, store the model's dtype.

Elsewhere `auto` is the model's activation dtype: BF16 or FP16, 2 bytes an element alike
(units.parse_kv_dtype).

A 16-bit cache over such a checkpoint must then be asked for by name: vLLM's `--kv-cache-dtype
bfloat16` (vllm/config/cache.py `CacheDType`), SGLang's `--kv-cache-dtype bf16`
(python/sglang/srt/server_args.py). TensorRT-LLM cannot store one: `validate_and_set_kv_cache_quant`
(tensorrt_llm/_torch/pyexecutor/model_loader.py) accepts only `auto`, `fp8` and `nvfp4`, and raises
"You cannot override a checkpoint with a pre-quantized KV cache that doesn't match" for any
other than the checkpoint's own.

The checkpoint's KV quantisation is read by each engine in its own way
(catalog/quantization.py keeps ModelOpt's name as written):

- SGLang: FP8 only, `kv_cache_quant_algo.upper() == "FP8"`; any other name is the model's dtype.
- vLLM (get_kv_cache_quant_algo_string, vllm/utils/torch_utils.py): the name lower-cased through
  MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP, `fp8` -> fp8_e4m3, and from VLLM_NVFP4_KV_FROM `nvfp4` ->
  nvfp4; an unknown name logs "Unknown kv_cache_quant_algo ... Falling back to 'auto'" (16 bits).
- TensorRT-LLM (ModelConfig.load_modelopt_quant_config, `QuantAlgo(value)`): FP8, NVFP4 or INT8
  by their exact names; any other name fails at load ("none" and "" are no quantisation). Its
  KV cache holds FP8 and INT8 at 1 byte an element, NVFP4 at half a byte plus its block scales
  (model_engine.get_kv_cache_dtype_byte_size).

capcliff sizes 16-bit and FP8 caches: where the release would store NVFP4 or INT8, or could not
load the name at all, the plan is refused naming what would be sized.

A compressed-tensors `kv_cache_scheme` (llm-compressor) is another rule: vLLM's Attention sets the
cache to `fp8` whenever the scheme is present, over `--kv-cache-dtype` whatever it says
(vllm/model_executor/layers/attention/attention.py, "llm-compressor mdls need to set cache_dtype
to fp8 manually", as PR 30141 left it); SGLang and TensorRT-LLM read no KV dtype from it and
store the model's.
"""

from __future__ import annotations

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.quantization import Quantization
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.units import KVDType

SGLANG_CHECKPOINT_KV_FROM = (0, 4, 3)
VLLM_CHECKPOINT_KV_FROM = (0, 14, 0)
# Assumption: vLLM's `auto` maps a ModelOpt NVFP4 KV cache to `nvfp4` from 0.21 (PR 40177, "Add
# nvfp4 kv cache support", opened 2026-04-17; vllm issue 43562 runs it on 0.21.1rc1); before,
# its map held `fp8` alone ("TODO: Add more modelopt kv cache dtype mappings ... nvfp4").
VLLM_NVFP4_KV_FROM = (0, 21, 0)
# vLLM's Attention follows a compressed-tensors kv_cache_scheme from 0.15: PR 30141 (opened
# 2025-12-05) was merged in the week to 2026-01-23 (vLLM's weekly summary of that date), after
# 0.14.0's cut; the attention layer of December 2025 (`_init_kv_cache_quant`) has no such block.
# Assumption: 0.15.0 is the first release holding it (0.14.x may, through a backport).
VLLM_SCHEME_KV_FROM = (0, 15, 0)
TRTLLM_KV_ALGOS = {"FP8": "fp8", "NVFP4": "nvfp4", "INT8": "int8"}  # QuantAlgo's exact names
UNREADABLE = "unreadable"  # a name TensorRT-LLM's QuantAlgo fails to read


def _from(release: tuple[int, int, int] | None, first: tuple[int, int, int]) -> bool:
    return release is None or release >= first


def engine_takes_checkpoint_kv(engine: EngineName, release: tuple[int, int, int] | None) -> bool:
    """Whether `engine` at `release` (None: the latest modelled) stores the KV cache in the
    checkpoint's own (ModelOpt) KV quantisation when `--kv-cache-dtype` is not given."""
    if engine is EngineName.TRTLLM:
        return True
    if engine is EngineName.SGLANG:
        return _from(release, SGLANG_CHECKPOINT_KV_FROM)
    if engine is EngineName.VLLM:
        return _from(release, VLLM_CHECKPOINT_KV_FROM)
    return False


def auto_kv_format(
    quant: Quantization | None, engine: EngineName, release: tuple[int, int, int] | None
) -> str | None:
    """What `engine` at `release` stores from the checkpoint as shipped when `--kv-cache-dtype`
    is auto: "fp8", "nvfp4", "int8", or UNREADABLE (TensorRT-LLM fails to load the name); None
    where it stores the model's dtype."""
    algo = None if quant is None else quant.kv_cache
    if algo is None or quant is None:
        return None
    if quant.method == "compressed-tensors":
        return "fp8" if scheme_forces_fp8(quant, engine, release) else None
    if not engine_takes_checkpoint_kv(engine, release):
        return None
    if engine is EngineName.TRTLLM:
        return TRTLLM_KV_ALGOS.get(algo, UNREADABLE)
    name = algo.lower()  # vLLM lower-cases, SGLang upper-cases: alike for ASCII names
    if name == "fp8":
        return "fp8"
    if engine is EngineName.VLLM and name == "nvfp4" and _from(release, VLLM_NVFP4_KV_FROM):
        return "nvfp4"
    return None


def scheme_forces_fp8(
    quant: Quantization | None, engine: EngineName, release: tuple[int, int, int] | None
) -> bool:
    """Whether `engine` at `release` stores FP8 for a compressed-tensors kv_cache_scheme whatever
    `--kv-cache-dtype` says (vLLM's Attention)."""
    return (
        quant is not None
        and quant.method == "compressed-tensors"
        and quant.kv_cache is not None
        and engine is EngineName.VLLM
        and _from(release, VLLM_SCHEME_KV_FROM)
    )


def checkpoint_kv_dtype(
    arch: Architecture, engine: EngineName, release: tuple[int, int, int] | None
) -> KVDType | None:
    """The KV dtype `engine` at `release` takes from the checkpoint as shipped when none is
    given; None where it takes the model's dtype (no directive, or a release that ignores it).
    A format capcliff does not size (NVFP4, INT8) or a name the engine cannot load is refused."""
    stored = auto_kv_format(arch.quantization, engine, release)
    if stored is None:
        return None
    if stored == "fp8":
        return KVDType.FP8
    algo = arch.quantization.kv_cache if arch.quantization is not None else None
    if stored == UNREADABLE:
        raise InputError(
            f"kv_cache_quant_algo: {algo!r:.40} is no name TensorRT-LLM loads (QuantAlgo: FP8, "
            "NVFP4 or INT8, as written); it fails at start-up: fix the checkpoint's "
            "hf_quant_config.json, or plan --engine vllm or sglang"
        )
    raise InputError(
        f"kv_cache_quant_algo: {algo!r:.40}: {engine.value}'s --kv-cache-dtype auto stores the "
        f"checkpoint's {stored.upper()} KV cache, which capcliff does not size (bf16, fp16 and "
        "fp8 are); plan --engine vllm or sglang with --kv-cache-dtype fp8 or bf16"
    )
