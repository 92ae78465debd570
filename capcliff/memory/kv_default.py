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

A compressed-tensors checkpoint (llm-compressor) with a `kv_cache_scheme` is stored in FP8 by
vLLM from 0.15, whatever `--kv-cache-dtype` says: the Attention layer sets its cache dtype to
"fp8" when the quant config has a kv_cache_scheme ("llm-compressor mdls need to set cache_dtype
to fp8 manually", vllm/model_executor/layers/attention/attention.py; vllm-project/vllm PR
30141, merged in the week to 2026-01-23; 0.15.0 is the first release cut wholly after it, 0.14
may hold it too). SGLang's configure_kv_cache_dtype reads only a `kv_cache_quant_algo`, which a
compressed-tensors config lacks: its `auto` stays the model's dtype. TensorRT-LLM is sized at the
model's dtype for such a checkpoint too (not modelled: no rule of its read).

Elsewhere `auto` is the model's activation dtype: BF16 or FP16, 2 bytes an element alike
(units.parse_kv_dtype).

A 16-bit cache over such a checkpoint must then be asked for by name: vLLM's `--kv-cache-dtype
bfloat16` (vllm/config/cache.py `CacheDType`), SGLang's `--kv-cache-dtype bf16`
(python/sglang/srt/server_args.py). TensorRT-LLM cannot store one: `validate_and_set_kv_cache_quant`
(tensorrt_llm/_torch/pyexecutor/model_loader.py) accepts only `auto`, `fp8` and `nvfp4`, and raises
"You cannot override a checkpoint with a pre-quantized KV cache that doesn't match" for any
other than the checkpoint's own.
"""

from __future__ import annotations

from capcliff.catalog.architecture import Architecture
from capcliff.memory.budget import EngineName
from capcliff.units import KVDType

SGLANG_CHECKPOINT_KV_FROM = (0, 4, 3)
VLLM_CHECKPOINT_KV_FROM = (0, 14, 0)
VLLM_COMPRESSED_KV_FROM = (0, 15, 0)
COMPRESSED_TENSORS = "compressed-tensors"


def engine_takes_checkpoint_kv(
    engine: EngineName, release: tuple[int, int, int] | None, method: str = "modelopt"
) -> bool:
    """Whether `engine` at `release` (None: the latest modelled) stores the KV cache in the
    checkpoint's own KV quantisation when `--kv-cache-dtype` is not given; `method` is the
    checkpoint's quantisation method (Quantization.method)."""
    if method == COMPRESSED_TENSORS:
        return engine_forces_checkpoint_kv(engine, release, method)
    if engine is EngineName.TRTLLM:
        return True
    if engine is EngineName.SGLANG:
        return release is None or release >= SGLANG_CHECKPOINT_KV_FROM
    if engine is EngineName.VLLM:
        return release is None or release >= VLLM_CHECKPOINT_KV_FROM
    return False


def engine_forces_checkpoint_kv(
    engine: EngineName, release: tuple[int, int, int] | None, method: str
) -> bool:
    """Whether `engine` at `release` stores the checkpoint's KV quantisation whatever dtype
    `--kv-cache-dtype` names: vLLM from 0.15 for a compressed-tensors kv_cache_scheme."""
    return (
        method == COMPRESSED_TENSORS
        and engine is EngineName.VLLM
        and (release is None or release >= VLLM_COMPRESSED_KV_FROM)
    )


def checkpoint_kv_dtype(
    arch: Architecture, engine: EngineName, release: tuple[int, int, int] | None
) -> KVDType | None:
    """The KV dtype `engine` at `release` takes from the checkpoint as shipped when none is
    given; None where it takes the model's dtype (no directive, or a release that ignores it)."""
    quant = arch.quantization
    if quant is None or quant.kv_cache is None:
        return None
    if not engine_takes_checkpoint_kv(engine, release, quant.method):
        return None
    return KVDType(quant.kv_cache)
