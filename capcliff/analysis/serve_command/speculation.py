"""capcliff's `speculative` setting (mtp:K, eagle:K[:DRAFT], ngram:K) from each engine's own
speculation flags: SGLang's `--speculative-*`, vLLM's `--speculative-config` JSON and
trtllm-serve's `speculative_config` YAML section. What the engine's parser refuses (K < 1, an
SGLang algorithm it does not offer, a JSON value that is no object) is refused here too."""

from __future__ import annotations

import json
import math
import re

from capcliff.analysis.engine_yaml import scalar
from capcliff.analysis.flag_releases import first
from capcliff.analysis.serve_command.command import FIELD
from capcliff.analysis.serve_command.readers import Reading
from capcliff.errors import InputError
from capcliff.units import INT_LITERAL

# The engines' speculative method names (analysis/flags.py writes them) as capcliff's methods.
_SGLANG_METHODS = {"NEXTN": "mtp", "EAGLE": "eagle", "EAGLE3": "eagle", "NGRAM": "ngram"}


_VLLM_METHODS = {"mtp": "mtp", "deepseek_mtp": "mtp", "eagle": "eagle", "eagle3": "eagle",
                 "ngram": "ngram"}  # fmt: skip


# SGLang's --speculative-algorithm choices (python/sglang/srt/server_args.py); STANDALONE (a
# small draft model run as such) is one capcliff does not model.
_SGLANG_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"})


def read_speculation(r: Reading) -> None:
    """`speculative` (mtp:K, eagle:K[:DRAFT], ngram:K) from SGLang's `--speculative-*` flags or
    vLLM's `--speculative-config` JSON, and SGLang's overlap setting; a tree of drafts (top-k
    above 1) or a method capcliff does not model is named as not modelled."""
    s = r.settings
    keys = ("spec_algorithm", "spec_steps", "spec_draft_tokens", "spec_topk", "spec_draft")
    algorithm, steps, drafts, topk, draft = (s.pop(k, None) for k in keys)
    config = s.pop("spec_config", None)
    trt = tuple(s.pop(k, None) for k in ("trt_spec_type", "trt_spec_k", "trt_spec_draft"))
    spec: str | None = None
    if algorithm is not None:
        spec = _sglang_speculation(r, str(algorithm), steps, drafts, topk, draft)
    elif config is not None:
        spec = _vllm_speculation(r, str(config))
    elif trt[0] is not None:
        spec = _trtllm_speculation(r, *trt)
    if spec is None:
        return
    s["speculative"] = spec
    if r.engine == "sglang" and r.spec_v2 is not None:
        s["spec_overlap"] = r.spec_v2


def _sglang_speculation(
    r: Reading, algorithm: str, steps: int | None, drafts: int | None, topk: int | None,
    draft: str | None,
) -> str | None:  # fmt: skip
    if algorithm.upper() not in _SGLANG_ALGORITHMS:
        known = ", ".join(sorted(_SGLANG_ALGORITHMS))
        raise InputError(
            f"{FIELD}: --speculative-algorithm {algorithm!r} is not one of SGLang's {known}"
        )
    method = _SGLANG_METHODS.get(algorithm.upper())
    if method == "ngram" and drafts is not None:
        return f"ngram:{max(1, drafts - 1)}"
    tree = topk is not None and topk > 1
    if method is None or steps is None or tree:
        why = "a tree of drafts (--speculative-eagle-topk above 1)" if tree else (
            "method or --speculative-num-steps not read"
        )  # fmt: skip
        r.unmodelled.append(f"--speculative-algorithm {algorithm} ({why})")
        return None
    if method == "eagle" and draft:
        return f"eagle:{steps}:{draft}"
    # EAGLE without a draft checkpoint runs the model's own MTP layers, as NEXTN does
    return f"{'mtp' if method == 'eagle' else method}:{steps}"


def _vllm_speculation(r: Reading, config: str) -> str | None:
    """vLLM reads --speculative-config as a JSON object into `SpeculativeConfig` (pydantic, lax:
    3, 3.0 and "3" are K = 3), which wants num_speculative_tokens > 0."""
    try:
        data = json.loads(config)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise InputError(
            f"{FIELD}: --speculative-config {config!r:.60} is not a JSON object; give e.g. "
            '\'{"method": "ngram", "num_speculative_tokens": 3}\''
        )
    method = _VLLM_METHODS.get(str(data.get("method")))
    k, model = _speculative_tokens(data.get("num_speculative_tokens")), data.get("model")
    if "method" not in data and model is None and _takes_model_mtp(r.release):
        method = "mtp"
    if method is not None and k is not None:
        return f"{method}:{k}" + (f":{model}" if method == "eagle" and model else "")
    r.unmodelled.append(f"--speculative-config {config}")
    return None


def _takes_model_mtp(release: tuple[int, int, int] | None) -> bool:
    """Whether vLLM `release` reads a --speculative-config with neither method nor model as the
    model's own MTP layers: 0.8.x - 0.10.x (`if self.model is None and
    self.num_speculative_tokens is not None:` ... `self.model = self.target_model_config.model`,
    config.py / config/__init__.py); from the release with "method mtp" (flag_releases) it
    wants "method": "mtp"."""
    return release is not None and release < first("vllm", "method mtp")


# trtllm-serve's speculative_config decoding types (tensorrt_llm/llmapi/llm_args.py
# DecodingBaseConfig subclasses) as capcliff's methods; flags.py writes them back
_TRTLLM_METHODS = {"MTP": "mtp", "Eagle": "eagle", "Eagle3": "eagle", "NGram": "ngram"}


def _trtllm_speculation(r: Reading, kind: str, k: str | None, draft: str | None) -> str | None:
    """speculative_config of trtllm-serve's YAML: MTP counts num_nextn_predict_layers, EAGLE and
    n-gram max_draft_len; both must be whole numbers >= 1."""
    method = _TRTLLM_METHODS.get(kind)
    what = "num_nextn_predict_layers" if kind == "MTP" else "max_draft_len"
    count = _speculative_tokens(None if k is None else scalar(k), f"speculative_config.{what}")
    if method is None or count is None:
        r.unmodelled.append(f"speculative_config: decoding_type {kind} (method or length not read)")
        return None
    return f"{method}:{count}" + (f":{draft}" if method == "eagle" and draft else "")


def _speculative_tokens(
    value: object, field: str = "--speculative-config num_speculative_tokens"
) -> int | None:
    """num_speculative_tokens as vLLM's lax pydantic int reads it (None: not given); a value
    that is no whole number above 0 is a one-line error."""
    if value is None:
        return None
    number: float | None = None
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric or (isinstance(value, str) and re.fullmatch(INT_LITERAL, value.strip())):
        number = float(value)  # type: ignore[arg-type]  # a number or a whole-number string
    if number is None or not (1 <= number < math.inf and number == int(number)):
        raise InputError(f"{FIELD}: {field} wants a whole number >= 1, got {value!r:.40}")
    return int(number)
