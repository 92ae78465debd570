"""Which planned weights the engines can serve from a checkpoint: as shipped, cast between the
16-bit float types (`--dtype`), quantized to FP8 while loading (`--quantization fp8`), or the
catalog's checkpoint already quantized to them. `plan` prints the flags these name and warns of
the rest; `what_fits` and the SLO alternatives offer only weights an engine can load."""

from __future__ import annotations

from capcliff.analysis.deployment import Deployment
from capcliff.catalog.catalogs import Model
from capcliff.memory.weights import WeightScheme
from capcliff.units import WeightDType


def quantized_checkpoint(dep: Deployment) -> Model | None:
    """The catalog's checkpoint of the planned model already quantized to the planned weight
    dtype: the card `<model id>-<dtype>` (e.g. llama-3.1-405b-fp8) with the same architecture
    (layers, widths, heads, experts). None when the weights are planned as shipped or the catalog
    holds no such card (a named rule: a card of another release, such as Llama 3.3 for 3.1, is
    another model and never stands in)."""
    from capcliff.catalog.catalogs import get_model, model_catalog

    if dep.scheme == WeightScheme.as_shipped(dep.model.arch):
        return None
    card_id = f"{dep.model.id}-{dep.scheme.linear.value}"
    if card_id not in model_catalog():
        return None
    card = get_model(card_id)
    mine, theirs = dep.model.arch, card.arch
    same = all(
        getattr(mine, f) == getattr(theirs, f)
        for f in ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "moe")
    )
    shipped = WeightScheme.as_shipped(theirs)
    return card if same and shipped.linear is dep.scheme.linear and card.hf_repo else None


def online_quantization(dep: Deployment) -> str | None:
    """The engines' flag value when the planned weights are FP8 but the checkpoint ships wider:
    vLLM and SGLang quantize BF16/FP16 weights to FP8 while loading (`--quantization fp8`,
    dynamic per-tensor scales). None otherwise, and for a checkpoint with a quantization_config
    (gpt-oss's MXFP4 experts beside BF16 attention): both engines refuse a --quantization other
    than its quant_method ("Quantization method specified in the model config (mxfp4) does not
    match the quantization method specified in the `quantization` argument (fp8)",
    `_verify_quantization` in vllm/config/model.py and python/sglang/srt/configs/
    model_config.py)."""
    shipped = WeightScheme.as_shipped(dep.model.arch)
    if dep.scheme == shipped or dep.scheme.linear is not WeightDType.FP8:
        return None
    sixteen = (WeightDType.BF16, WeightDType.FP16)
    loadable = shipped.quantization is None and {shipped.linear, shipped.expert} <= set(sixteen)
    return "fp8" if loadable else None


def engines_load(dep: Deployment) -> bool:
    """Whether the engines can serve `dep`'s planned weights from a checkpoint: as shipped, cast
    to the other 16-bit float type (`cast_dtype`), quantized to FP8 while loading from 16-bit
    weights (`online_quantization`), or as the catalog's checkpoint already quantized to them
    (`quantized_checkpoint`). vLLM loads a quantized checkpoint in its own quantization_config's
    method only (another --quantization is refused: "Quantization method specified in the model
    config ... does not match", `_verify_quantization` in vllm/config/model.py)."""
    return (
        dep.scheme == WeightScheme.as_shipped(dep.model.arch)
        or cast_dtype(dep) is not None
        or online_quantization(dep) is not None
        or quantized_checkpoint(dep) is not None
    )


# vLLM and SGLang cast a checkpoint's 16-bit float weights to the other 16-bit type at load with
# `--dtype` ("Casting between float16 and bfloat16 is allowed with a warning":
# `_get_and_verify_dtype`, vllm/config/model.py and python/sglang/srt/configs/model_config.py).
TORCH_DTYPE = {WeightDType.BF16: "bfloat16", WeightDType.FP16: "float16"}


def cast_dtype(dep: Deployment) -> str | None:
    """The engines' `--dtype` value where the planned weights are the shipped 16-bit float
    weights cast to the other 16-bit type (bf16 <-> fp16, no quantization either side); None
    otherwise."""
    shipped = WeightScheme.as_shipped(dep.model.arch)
    scheme = dep.scheme
    if scheme == shipped or shipped.quantization is not None or scheme.quantization is not None:
        return None
    widths = {shipped.linear, shipped.expert, scheme.linear, scheme.expert}
    if not widths <= TORCH_DTYPE.keys() or scheme.linear is not scheme.expert:
        return None
    return TORCH_DTYPE[scheme.linear]
