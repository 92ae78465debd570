"""Per-module storage formats of a quantised checkpoint, from config.json's quantization_config.

A checkpoint is rarely one dtype. `nvidia/DeepSeek-R1-0528-FP4` stores its MLPs and experts
in NVFP4 and its attention in BF16; Meta's `Llama-3.1-405B-Instruct-FP8` quantises only the MLPs
of layers 1-124; gpt-oss quantises only its experts. This module turns each publisher's format
into one rule: `Quantization.format_of(module, expert=...)` gives the `WeightFormat` a weight of
that HF module is stored in, scales included, or None where it stays in the native dtype.

Supported `quant_method`s and the fields read (engines: vLLM's `vllm/model_executor/layers/
quantization/<method>.py`):
- `fp8` (DeepSeek/Qwen block FP8): `weight_block_size` (one fp32 scale per block), else one fp32
  scale per tensor; `modules_to_not_convert` / `ignored_layers`.
- `fbgemm_fp8` (Meta): one fp32 scale per output channel; `modules_to_not_convert`.
- `compressed-tensors` (llm-compressor): `config_groups.*.weights` (num_bits, type, strategy,
  group_size, symmetric), each group's `targets` where groups differ in format, and `ignore`
  (exact names or `re:` regexes).
- `modelopt` (NVIDIA ModelOpt, config.json or hf_quant_config.json's `quantization`): `quant_algo`
  NVFP4 (FP8 E4M3 scale per 16 elements) or FP8 (per-tensor), `exclude_modules` / `ignore` (globs).
- `mxfp4` (gpt-oss): routed experts only (vLLM's Mxfp4Config leaves linear layers unquantised),
  one E8M0 scale per 32 elements; `modules_to_not_convert`.
- `awq`, `gptq`: `bits`, `group_size`, zero points (`zero_point`, GPTQ always stores `qzeros`),
  fp16 scales; `modules_to_not_convert`; GPTQ's per-module `dynamic` overrides.

Per-tensor fp32 scales (NVFP4's weight_scale_2 and input_scale, FP8's per-tensor scale) are a few
bytes per tensor, under 1 MiB for the whole of DeepSeek-R1, and are not counted. GPTQ's `g_idx`
(4 bytes per input row) is not counted either (under 0.1 % of a 4-bit tensor with 4096 rows).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

from capcliff.errors import CatalogError
from capcliff.files import key_label

FP32_BITS, FP16_BITS, FP8_BITS, E8M0_BITS = 32, 16, 8, 8


@dataclass(frozen=True)
class WeightFormat:
    """How one weight tensor is stored: element bits plus one scale (and zero point) per group.

    A group is `group_size` consecutive input elements of `block_rows` output rows; `group_size`
    None means a whole row (per-output-channel scales); `scale_bits` 0 means no per-group scale.
    """

    name: str
    element_bits: int
    group_size: int | None = None
    block_rows: int = 1
    scale_bits: int = 0
    zero_bits: int = 0

    def bytes_per_element(self, fan_in: int) -> Fraction:
        """element_bits / 8 + (scale_bits + zero_bits) / 8 / (group x block_rows), in bytes.

        `fan_in` (the tensor's input width) is the group of per-channel formats.
        """
        per_element = Fraction(self.element_bits, 8)
        if self.scale_bits or self.zero_bits:
            group = self.group_size or max(fan_in, 1)
            per_element += Fraction(self.scale_bits + self.zero_bits, 8 * group * self.block_rows)
        return per_element


BF16 = WeightFormat("bf16", 16)
FP16 = WeightFormat("fp16", 16)
FP8_TENSOR = WeightFormat("fp8", FP8_BITS)  # one fp32 scale per tensor: not counted
FP8_CHANNEL = WeightFormat("fp8-channel", FP8_BITS, None, 1, FP32_BITS)
NVFP4 = WeightFormat("nvfp4", 4, 16, 1, FP8_BITS)  # FP8 E4M3 scale per 16 (+ fp32 per tensor)
MXFP4 = WeightFormat("mxfp4", 4, 32, 1, E8M0_BITS)  # OCP MX: E8M0 scale per 32


def fp8_block(rows: int, cols: int) -> WeightFormat:
    """Block FP8: one fp32 scale (`weight_scale_inv`) per rows x cols block."""
    return WeightFormat(f"fp8-block{rows}x{cols}", FP8_BITS, cols, rows, FP32_BITS)


def int_grouped(bits: int, group_size: int | None, *, zero_point: bool) -> WeightFormat:
    """AWQ/GPTQ/compressed-tensors integer weights: fp16 scale (+ packed zero point) per group."""
    name = f"int{bits}-g{group_size or 'row'}" + ("-zp" if zero_point else "")
    return WeightFormat(name, bits, group_size, 1, FP16_BITS, bits if zero_point else 0)


def format_label(fmt: WeightFormat | None, family: str) -> str:
    """The dtype a module's format is named by in reports: `int{bits}` for an integer format
    (GPTQ/AWQ/compressed-tensors at 2, 3, 4 or 8 bits), else `family` (fp8, nvfp4, bf16 ...)."""
    if fmt is not None and fmt.name.startswith("int"):
        return f"int{fmt.element_bits}"
    return family


def mixed_label(targeted: tuple[tuple[tuple[str, ...], WeightFormat | None], ...]) -> str | None:
    """The label of a checkpoint whose targeted groups hold formats of different families
    (compressed-tensors W4 MLPs beside FP8 attention, GPTQ's dynamic bits): the families joined
    in sorted order, e.g. `fp8+int4`; None where they are one family. The first group's family
    named the whole checkpoint, so one checkpoint read as int4 or fp8 by its groups' order.
    Modules a target leaves unquantised (None) name no family."""
    families = {format_label(f, f.name.split("-")[0]) for _, f in targeted if f is not None}
    return "+".join(sorted(families)) if len(families) > 1 else None


@dataclass(frozen=True)
class Quantization:
    """A checkpoint's quantisation: the format of its quantised linears, experts and what it skips.

    `linear` / `expert` is None where the method leaves that kind of module unquantised (mxfp4's
    linears). `excluded` holds the config's patterns as written.
    """

    method: str
    linear: WeightFormat | None
    expert: WeightFormat | None
    excluded: tuple[str, ...] = ()
    # formats of the modules that targets name, in the config's order (None: unquantised), read
    # before the default: compressed-tensors groups of different formats, GPTQ's `dynamic`
    targeted: tuple[tuple[tuple[str, ...], WeightFormat | None], ...] = ()
    # a module no target names: unquantised (compressed-tensors groups), else the default
    untargeted_native: bool = False
    # the output head is quantised too (GPTQ's `lm_head: true`, GPTQModel's `lm_head=True`)
    lm_head: bool = False
    # the KV cache quantisation the checkpoint ships scales for, as written: ModelOpt's
    # `kv_cache_quant_algo` ("FP8", "NVFP4", "INT8", or another string, which each engine reads
    # by its own rule: memory/kv_default.py) or its 1.x `kv_cache_scheme` as that name, FP8 for
    # a compressed-tensors `kv_cache_scheme`; None where it names none
    kv_cache: str | None = None

    def format_of(self, module: str, *, expert: bool) -> WeightFormat | None:
        """The format of the weight of HF module `module`; None: stored in the native dtype."""
        if _is_excluded(self.excluded, module):
            return None
        # a module's name (exact or `re:`) before its layer class, whichever group names it
        for by_class in (False, True):
            for targets, fmt in self.targeted:
                if any(_targets(target, module, by_class=by_class) for target in targets):
                    return fmt
        if self.untargeted_native:  # vLLM refuses to load a linear no group targets
            return None
        return self.expert if expert else self.linear

    def head_format(self) -> WeightFormat | None:
        """The format of a quantised output head (`lm_head`): a GPTQ `dynamic` rule that names
        it (vLLM overrides the head's config as any module's, by its prefix `lm_head`), else the
        linears' format."""
        if _is_excluded(self.excluded, "lm_head"):
            return None
        for targets, fmt in self.targeted:
            if any(_targets(target, "lm_head", by_class=False) for target in targets):
                return fmt
        return self.linear

    @property
    def main_format(self) -> WeightFormat:
        """The format most weight bytes are in (the experts' for MoE checkpoints)."""
        found = self.expert or self.linear
        assert found is not None  # a parsed Quantization always quantises something
        return found


@cache
def _is_excluded(patterns: tuple[str, ...], module: str) -> bool:
    """Whether any skip-list pattern names `module` (cached: layouts ask about the same modules)."""
    return any(module_matches(module, pattern) for pattern in patterns)


def _targets(target: str, module: str, *, by_class: bool) -> bool:
    """Whether a compressed-tensors target names `module`: `by_class`, as a layer class
    (`Linear`, every weight capcliff prices is one); else as a module name or `re:` pattern
    (`module_matches`). vLLM's `find_matched_target` (compressed_tensors/utils.py) tries every
    target on the layer's name first and on its class only then, so a group naming the MLPs by
    pattern takes them from a group that targets every `Linear`, in either order."""
    is_class = not target.startswith("re:") and target.endswith("Linear")
    return is_class if by_class else not is_class and module_matches(module, target)


def module_matches(module: str, pattern: str) -> bool:
    """Whether a skip-list pattern names `module` or one of its parents.

    `re:<regex>` (compressed-tensors) matches from the start of the name; a pattern with `*` is a
    glob (ModelOpt, gpt-oss), also tried with a trailing `.*`; otherwise the pattern is a module
    path (exact, or a parent of `module`), or a bare name such as `lm_head` or `self_attn` that
    matches a whole path component (transformers' `modules_to_not_convert` is a substring test).
    """
    if pattern.startswith("re:"):
        return re.match(pattern[3:], module) is not None
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return f".{module}.".find(f".{pattern}.") >= 0


def _error(path: str, field: str, message: str) -> CatalogError:
    return CatalogError(f"{path}: quantization_config.{field}: {message}")


def _patterns(raw: dict[str, Any], path: str, *fields: str) -> tuple[str, ...]:
    found: list[str] = []
    for name in fields:
        value = raw.get(name)
        value = [] if value is None else value  # 0, {} or "" read as no list
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _error(path, name, "must be a list of module names or patterns")
        for pattern in value:
            if pattern.startswith("re:"):
                try:
                    re.compile(pattern[3:])
                except (re.error, OverflowError, ValueError, RecursionError) as exc:
                    # a{99999999999}: OverflowError; a 5,000-digit count: ValueError
                    problem = str(exc).split("\n")[0][:80]
                    raise _error(path, name, f"bad regex {pattern!r:.60}: {problem}") from None
                slow = slow_regex_problem(pattern[3:])
                if slow is not None:
                    raise _error(
                        path, name,
                        f"regex {pattern!r:.60} {slow}: matching a module name takes "
                        "exponential (or high-polynomial) time; write e.g. re:.*mlp.*",
                    )  # fmt: skip
        found += value
    return tuple(found)


# Python's `re` backtracks: a repeated group that can match one text in several ways (it holds a
# repeat, `(.*)*x$`, or a branch, `(.|.)*x$`) takes time exponential in a module name's length
# (minutes for one name), and each unbounded repeat past a few multiplies the time by the name's
# length (12 `.*` in a row: hours). Engines' own `re:` patterns (re:.*lm_head,
# re:model.layers.*self_attn.*, re:.*mlp.gate$) repeat no group and hold 1 to 3 such repeats.
# Set: at most 4 unbounded repeats (a 4-repeat pattern that fails takes 0.3 ms on a 41-character
# module name; 6 take 50 ms, per name and layout).
MAX_UNBOUNDED_REPEATS = 4


def slow_regex_problem(pattern: str) -> str | None:
    """Why `pattern` may take exponential or high-polynomial time to match (None when it
    cannot): a repeated group holding a repeat or a branch, or more than MAX_UNBOUNDED_REPEATS
    unbounded repeats (`*`, `+`, `{n,}`). A scan of the text: escapes and character classes
    hold no repeat."""
    groups: list[bool] = []  # per open group: it holds a repeat or a branch
    unbounded = 0
    at = 0
    while at < len(pattern):
        skipped = _skip_atom(pattern, at, groups)
        if skipped is not None:
            at = skipped
            continue
        if pattern[at] == ")" and groups:
            ambiguous = groups.pop()
            repeat, width = _repeat_at(pattern, at + 1)
            if repeat in ("unbounded", "bounded") and ambiguous:
                return "repeats a group that itself repeats or branches (as (.*)* or (a|b)*)"
            at += 1 + width
        else:
            repeat, width = _repeat_at(pattern, at)
            ambiguous = repeat is not None or pattern[at] == "|"
            at += width or 1
        if groups:
            groups[-1] = groups[-1] or ambiguous or repeat is not None
        unbounded += repeat == "unbounded"
    if unbounded > MAX_UNBOUNDED_REPEATS:
        return f"holds {unbounded} unbounded repeats (*, +), more than {MAX_UNBOUNDED_REPEATS}"
    return None


def _skip_atom(pattern: str, at: int, groups: list[bool]) -> int | None:
    """The index past an escape, a character class or a group's opening at `at` (a group
    opened is pushed on `groups`); None for any other character."""
    char = pattern[at]
    if char == "\\":
        return at + 2
    if char == "[":
        return _class_end(pattern, at)
    if char == "(":
        groups.append(False)
        return at + 2 if pattern.startswith("(?", at) else at + 1  # `(?:` is no repeat
    return None


def _class_end(pattern: str, at: int) -> int:
    """The index past the character class `[...]` opening at `at` (a `]` first is a member)."""
    end = at + 1
    if pattern.startswith("^", end):
        end += 1
    if pattern.startswith("]", end):
        end += 1
    while end < len(pattern) and pattern[end] != "]":
        end += 2 if pattern[end] == "\\" else 1
    return end + 1


_BRACES = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _repeat_at(pattern: str, at: int) -> tuple[str | None, int]:
    """(the repeat at `at`: "unbounded" (`*`, `+`, `{n,}`), "bounded" (`{n}`, `{n,m}`, at most
    more than once), "optional" (`?`, `{0,1}`) or None; its width with a lazy or possessive
    suffix)."""
    if at >= len(pattern):
        return None, 0
    char = pattern[at]
    braces = _BRACES.match(pattern, at) if char == "{" else None
    if char in "*+":
        kind, width = "unbounded", 1
    elif char == "?":
        kind, width = "optional", 1
    elif braces is not None:
        low, comma, high = braces.groups()
        most = high or ("" if comma else low)  # {n,}: no most
        kind = (
            "unbounded"
            if not most
            else "optional"
            if len(most) == 1 and most in "01"
            else "bounded"
        )
        width = braces.end() - at
    else:
        return None, 0
    return kind, width + (pattern.startswith(("?", "+"), at + width))


# Integer weight widths the engines' int kernels take (AWQ 4; GPTQ 2, 3, 4, 8; compressed-tensors
# int4 / int8 packs), and the group sizes a scale may cover.
INT_BITS = (2, 3, 4, 8)
# vLLM's AWQ config refuses any other width ("only 4-bit weight quantization is supported").
AWQ_BITS = (4,)
# compressed-tensors' QuantizationStrategy names (quantization/quant_args.py).
COMPRESSED_STRATEGIES = (
    "tensor",
    "channel",
    "group",
    "block",
    "token",
    "tensor_group",
    "attn_head",
)
MAX_GROUP_SIZE = 1 << 20


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_bits(value: object, path: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in INT_BITS:
        bits = ", ".join(map(str, INT_BITS))
        raise _error(path, field, f"must be one of {bits} (bits per weight), got {value!r}")
    return value


def _group(value: object, path: str, field: str, *, per_row: tuple[object, ...] = ()) -> int | None:
    """A group size: a positive integer, or None where `value` is one of `per_row` (a row)."""
    if value in per_row and not isinstance(value, bool):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_GROUP_SIZE:
        rows = f" (or {', '.join(map(repr, per_row))} for a whole row)" if per_row else ""
        raise _error(
            path, field, f"must be an integer in 1 to {MAX_GROUP_SIZE:,}{rows}, got {value!r}"
        )
    return value


def _fp8(raw: dict[str, Any], path: str) -> Quantization:
    block = raw.get("weight_block_size")
    if block is None:
        fmt = FP8_TENSOR
    elif (
        isinstance(block, list)
        and len(block) == 2
        and all(_whole(b) and 1 <= b <= MAX_GROUP_SIZE for b in block)
    ):
        fmt = fp8_block(block[0], block[1])
    else:
        raise _error(path, "weight_block_size", f"must be [rows, cols], got {block!r}")
    # vLLM's Fp8Config: the scheme is one of ACTIVATION_SCHEMES ("Unsupported activation
    # scheme"), and block-wise weights take dynamic activations only ("The block-wise
    # quantization only supports dynamic activation scheme for now"); absent, it is left alone
    scheme = raw.get("activation_scheme", "dynamic")
    if scheme not in FP8_ACTIVATION_SCHEMES:
        raise _error(path, "activation_scheme", f"must be static or dynamic, got {scheme!r:.40}")
    if block is not None and scheme != "dynamic":
        raise _error(
            path, "activation_scheme", f"{scheme}: block-wise FP8 weights (weight_block_size) "
            "take dynamic activations only (vLLM's Fp8Config)",
        )  # fmt: skip
    skipped = _patterns(raw, path, "modules_to_not_convert", "ignored_layers")
    return Quantization("fp8", fmt, fmt, skipped)


FP8_ACTIVATION_SCHEMES = ("static", "dynamic")  # vLLM fp8.py ACTIVATION_SCHEMES


def _modelopt(raw: dict[str, Any], path: str) -> Quantization:
    nested = raw.get("quantization")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else raw
    algo = str(inner.get("quant_algo", "")).upper()
    formats = {"NVFP4": NVFP4, "FP8": FP8_TENSOR}
    if algo not in formats:
        raise _error(path, "quant_algo", f"unsupported {algo!r}; supported: NVFP4, FP8")
    group = _group(inner.get("group_size", 16), path, "group_size")
    fmt = formats[algo]
    if algo == "NVFP4" and group != fmt.group_size:
        fmt = WeightFormat(f"nvfp4-g{group}", 4, group, 1, FP8_BITS)
    skipped = _patterns(inner, path, "exclude_modules", "ignore")
    kv = _modelopt_kv_cache(inner, raw, path)
    return Quantization("modelopt", fmt, fmt, skipped, kv_cache=kv)


def _modelopt_kv_cache(inner: dict[str, Any], raw: dict[str, Any], path: str) -> str | None:
    """ModelOpt's KV cache quantisation: `kv_cache_quant_algo` as written (stripped of nothing:
    SGLang compares `.upper()` with "FP8", vLLM `.lower()` with its map, TensorRT-LLM takes
    QuantAlgo's exact names; memory/kv_default.py), else ModelOpt 1.x's flat `kv_cache_scheme`
    as its algorithm's name; None when absent, null, "" or "none" (TensorRT-LLM's
    `_algo_or_none`: no KV quantisation)."""
    algo = inner.get("kv_cache_quant_algo")
    if algo is None and "quantization" not in raw:
        return _modelopt_kv_scheme(raw.get("kv_cache_scheme"), path)
    if algo is not None and not isinstance(algo, str):
        raise _error(path, "kv_cache_quant_algo", f"must be a string or null, got {algo!r:.40}")
    if algo is None or algo.strip().lower() in MODELOPT_NO_KV:
        return None
    return algo


MODELOPT_NO_KV = ("", "none", "null")
# ModelOpt 1.x's flat config.json writes the KV quantisation as `kv_cache_scheme`: an FP8 cache as
# {"type": "float", "num_bits": 8}, NVFP4 and INT8 as the strings "NVFP4" / "INT8" (TensorRT-LLM
# tensorrt_llm/quantization/modelopt_config.py `_KV_SCHEME_DICT_MAP`, `_KV_SCHEME_STRING_ALGOS`;
# vLLM's get_kv_cache_quant_algo_string reads the same dicts).
MODELOPT_KV_SCHEMES: dict[tuple[object, object], str] = {
    ("float", 8): "FP8",
    ("float", 4): "NVFP4",
    ("int", 8): "INT8",
}


def _modelopt_kv_scheme(scheme: object, path: str) -> str | None:
    """A ModelOpt 1.x `kv_cache_scheme` as its algorithm's name (FP8, NVFP4, INT8); None where
    null, or an object of another type and width (TensorRT-LLM: "Unrecognized 'kv_cache_scheme';
    KV-cache quant disabled"; vLLM falls back to `auto`). It was not read: an FP8 cache of such a
    checkpoint was sized at 16 bits where every engine's `auto` stores FP8."""
    if scheme is None:
        return None
    if isinstance(scheme, str):
        name = scheme.strip().upper()
        return name if name in MODELOPT_KV_SCHEMES.values() else None
    if isinstance(scheme, dict):
        return MODELOPT_KV_SCHEMES.get((scheme.get("type"), scheme.get("num_bits")))
    raise _error(
        path, "kv_cache_scheme", f"must be an object such as {{\"type\": \"float\", \"num_bits\": "
        f"8}}, FP8, NVFP4, INT8 or null, got {scheme!r:.40}",
    )  # fmt: skip


def _compressed_weights(scheme: dict[str, Any], path: str) -> WeightFormat:
    """The weight format of one compressed-tensors config group."""
    bits, kind = scheme.get("num_bits"), scheme.get("type", "int")
    strategy = scheme.get("strategy", "tensor")
    group = scheme.get("group_size")
    if strategy not in COMPRESSED_STRATEGIES:  # 5 read as per-tensor, "x" as per-row
        raise _error(
            path, "config_groups.weights.strategy",
            f"must be one of {', '.join(COMPRESSED_STRATEGIES)}, got {strategy!r:.40}",
        )  # fmt: skip
    symmetric = scheme.get("symmetric", True)
    if not isinstance(symmetric, bool):  # "false" or 0 read by truth
        raise _error(
            path, "config_groups.weights.symmetric", f"must be true or false, got {symmetric!r:.40}"
        )
    if bits == FP8_BITS and kind == "float":
        return FP8_CHANNEL if strategy == "channel" else FP8_TENSOR
    if bits == 4 and kind == "float":  # compressed-tensors NVFP4 (nvfp4-pack-quantized)
        return NVFP4
    if kind == "int":
        field = "config_groups.weights"
        width = _int_bits(bits, path, f"{field}.num_bits")
        zero = not symmetric
        size = _group(group, path, f"{field}.group_size") if strategy == "group" else None
        return int_grouped(width, size, zero_point=zero)
    raise _error(path, "config_groups.weights", f"unsupported {bits}-bit {kind!r} weights")


def _compressed_tensors(raw: dict[str, Any], path: str) -> Quantization:
    _refuse_sparse(raw, path)
    kv = _check_kv_cache_scheme(raw.get("kv_cache_scheme"), path)
    groups = raw.get("config_groups")
    if groups is not None and not isinstance(groups, dict):
        kind = type(groups).__name__
        raise _error(path, "config_groups", f"must be an object of named groups, got a {kind}")
    if not groups:
        raise _error(path, "config_groups", "missing; needed to know the weight format")
    formats: list[tuple[tuple[str, ...], WeightFormat]] = []
    for name, group in groups.items():
        if not isinstance(group, dict) or not isinstance(group.get("weights"), dict):
            raise _error(path, f"config_groups.{key_label(name)}.weights", "missing")
        targets = f"config_groups.{key_label(name)}.targets"
        found = _patterns({targets: group.get("targets")}, path, targets)
        formats.append((found, _compressed_weights(group["weights"], path)))
    _refuse_shared_targets(groups, formats, path)
    first = formats[0][1]
    # Groups of different formats target different layers (W4 MLPs beside FP8 attention): each
    # module takes its group's format (the first group's for all read the MLPs at the attention's)
    mixed = len({fmt for _, fmt in formats}) > 1
    return Quantization(
        "compressed-tensors", first, first, _patterns(raw, path, "ignore"),
        targeted=tuple(formats) if mixed else (), untargeted_native=mixed, kv_cache=kv,
    )  # fmt: skip


def _check_kv_cache_scheme(scheme: object, path: str) -> str | None:
    """A compressed-tensors `kv_cache_scheme`: null, or what vLLM's
    CompressedTensorsKVCacheMethod.validate_kv_cache_scheme (compressed_tensors.py) loads: an
    object of num_bits 8 or type float, with per-tensor or (from PR 30141, per-attention-head
    FP8 scales) per-head scales. Such a checkpoint's KV cache is FP8 where its engine follows the
    scheme (vLLM's Attention sets `fp8` for any: memory/kv_default.py); "FP8", else None. A list
    or another strategy (which vLLM refuses at load) was ignored unsaid."""
    if scheme is None:
        return None
    if not isinstance(scheme, dict):
        raise _error(path, "kv_cache_scheme", f"must be an object or null, got {scheme!r:.40}")
    kind, bits = scheme.get("type"), scheme.get("num_bits")
    if kind != "float" and bits != 8:  # vLLM's own test, `and` as written there
        raise _error(
            path, "kv_cache_scheme.num_bits", f"{bits!r:.20} of type {kind!r:.20}; vLLM loads a "
            "KV cache scheme of num_bits 8 or type float",
        )  # fmt: skip
    if scheme.get("strategy") not in COMPRESSED_KV_STRATEGIES:
        raise _error(
            path, "kv_cache_scheme.strategy", f"{scheme.get('strategy')!r:.20}; vLLM loads "
            'per-tensor or per-attention-head KV cache scales only (strategy "tensor" or '
            '"attn_head")',
        )  # fmt: skip
    return "FP8"


# The KV scale strategies vLLM's validate_kv_cache_scheme loads: "tensor", and "attn_head" since
# PR 30141 ("Add llmcompressor fp8 kv-cache quant (per-tensor and per-attn_head)").
COMPRESSED_KV_STRATEGIES = ("tensor", "attn_head")


def _refuse_sparse(raw: dict[str, Any], path: str) -> None:
    """A `sparsity_config` of a sparse format: vLLM keeps 2:4 weights compressed (half the values
    plus metadata, `CompressedTensors24`, compressed_tensors/schemes/compressed_tensors_24.py);
    capcliff sizes every weight dense, so such a checkpoint was sized at about twice its bytes."""
    sparsity = raw.get("sparsity_config")
    if sparsity is None or sparsity == {}:
        return
    fmt = sparsity.get("format", "dense") if isinstance(sparsity, dict) else sparsity
    if fmt != "dense":
        raise _error(
            path, "sparsity_config.format",
            f"{fmt!r:.40}: sparse checkpoints are not sized (capcliff sizes dense weights); "
            "valid: dense, or no sparsity_config",
        )  # fmt: skip


def _refuse_shared_targets(
    groups: dict[str, Any], formats: list[tuple[tuple[str, ...], WeightFormat]], path: str
) -> None:
    """Two groups of different formats that name one target: which one a layer takes is the
    reader's accident (vLLM's target map keeps the last group, capcliff took the first)."""
    owner: dict[str, tuple[str, WeightFormat]] = {}
    for name, (targets, fmt) in zip(groups, formats, strict=True):
        for target in targets:
            first = owner.setdefault(target, (name, fmt))
            if first[1] != fmt:
                raise _error(
                    path, f"config_groups.{key_label(name)}.targets",
                    f"{target!r:.60} is also a target of {key_label(first[0])!r:.40}, of another "
                    f"format ({first[1].name}, here {fmt.name}); give each target one group",
                )  # fmt: skip


def _awq_gptq(raw: dict[str, Any], path: str, method: str) -> Quantization:
    # vLLM's GPTQConfig/AWQConfig.from_config read both with get_from_keys, which raises
    # "Cannot find any of ['bits'] in the model's quantization config": not 4 and 128 unsaid
    if "bits" not in raw and "w_bit" not in raw:
        raise _error(path, "bits", f"missing; {method} stores 2, 3, 4 or 8 bits per weight")
    bits = _int_bits(raw.get("bits", raw.get("w_bit")), path, "bits")
    if method == "awq" and bits not in AWQ_BITS:
        raise _error(path, "bits", f"AWQ takes 4 bits per weight, got {bits}")
    # group_size -1 (GPTQ) or 0 means one scale per output row
    group = _group(raw.get("group_size", raw.get("q_group_size", 128)), path, "group_size",
                   per_row=(-1, 0))  # fmt: skip
    # AWQ stores zero points unless zero_point is false; GPTQ checkpoints always carry qzeros.
    zero_point = raw.get("zero_point", True)
    if not isinstance(zero_point, bool):  # "false" read as true
        raise _error(path, "zero_point", f"must be true or false, got {zero_point!r}")
    zero = zero_point if method == "awq" else True
    if "group_size" not in raw and "q_group_size" not in raw:
        raise _error(
            path, "group_size", "missing; give the weights' group (e.g. 128, or -1: a row)"
        )
    fmt = int_grouped(bits, group, zero_point=zero)
    skipped = _patterns(raw, path, "modules_to_not_convert")
    if method == "awq":
        return Quantization(method, fmt, fmt, skipped)
    targeted = _gptq_dynamic(raw, path, bits, group)
    in_block = _gptq_in_block(raw, path)
    head = _gptq_lm_head(raw, path)
    if not in_block:
        return Quantization(method, fmt, fmt, skipped, targeted=targeted, lm_head=head)
    return Quantization(
        method, fmt, fmt, skipped, targeted=(*targeted, (in_block, fmt)), untargeted_native=True,
        lm_head=head,
    )  # fmt: skip


def _gptq_lm_head(raw: dict[str, Any], path: str) -> bool:
    """GPTQ's `lm_head` (GPTQModel writes `true` when it quantised the output head): vLLM's
    GPTQConfig and GPTQMarlinConfig read it (`lm_head_quantized = get_from_keys_or(config,
    ["lm_head"], default=False)`) and build the ParallelLMHead with the GPTQ linear method
    (`get_linear_quant_method`, quantization/utils/gptq_utils.py); the head was sized at bf16
    (Llama 3.1 8B: 1,050,673,152 B where the checkpoint holds 272,928,768)."""
    head = raw.get("lm_head")
    if head is None:  # absent or null: vLLM's default, False
        return False
    if not isinstance(head, bool):  # "true" or 1 read by truth
        raise _error(path, "lm_head", f"must be true or false, got {head!r:.40}")
    return head


def _gptq_in_block(raw: dict[str, Any], path: str) -> tuple[str, ...]:
    """GPTQ's `modules_in_block_to_quantize` (`[["self_attn.q_proj", ...], ["mlp.down_proj"]]`,
    or flat): a decoder layer's module no entry names stays in the native dtype, as vLLM builds
    it (`is_layer_gptq_quantized`, vllm/model_executor/layers/quantization/utils/gptq_utils.py);
    it was ignored, every linear sized at `bits`. An expert's index (`mlp.experts.0.up_proj`)
    names the fused experts module (`mlp.experts`) capcliff sizes."""
    listed = raw.get("modules_in_block_to_quantize")
    if listed is None or listed == []:
        return ()
    names = [n for item in listed for n in (item if isinstance(item, list) else [item])] \
        if isinstance(listed, list) else [listed]  # fmt: skip
    if not all(isinstance(n, str) and n.strip(". ") for n in names):
        raise _error(
            path, "modules_in_block_to_quantize",
            f"must be a list (or a list of lists) of module names such as self_attn.q_proj, "
            f"got {listed!r:.60}",
        )  # fmt: skip
    found = []
    for name in names:
        parts = [p for p in name.strip(".").split(".") if not p.isdigit()]
        if "experts" in parts:
            parts = parts[: parts.index("experts") + 1]
        # a fused name (Phi-3's qkv_proj, gate_up_proj) names the HF modules capcliff sizes
        for each in _UNFUSED.get(parts[-1], (parts[-1],)):
            found.append(".".join([*parts[:-1], each]))
    return tuple(found)


_UNFUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def _gptq_dynamic(
    raw: dict[str, Any], path: str, bits: int, group: int | None
) -> tuple[tuple[tuple[str, ...], WeightFormat | None], ...]:
    """GPTQModel's per-module `dynamic` overrides, `{"+:regex": {"bits": 8}, "-:regex": {}}`:
    the first regex that matches a module from its start gives its bits and group size (`+:` or
    no prefix) or leaves it unquantised (`-:`), as vLLM's `get_dynamic_override` reads them
    (vllm/model_executor/layers/quantization/utils/gptq_utils.py); they were ignored."""
    dynamic = raw.get("dynamic")
    if dynamic is None:
        return ()
    if not isinstance(dynamic, dict):
        raise _error(
            path, "dynamic", f"must be an object of {{regex: overrides}}, got {dynamic!r:.40}"
        )
    found: list[tuple[tuple[str, ...], WeightFormat | None]] = []
    for key, override in dynamic.items():
        field = f"dynamic.{key_label(key)[:60]}"
        pattern = "re:" + key.removeprefix("-:").removeprefix("+:")
        _patterns({field: [pattern]}, path, field)  # a bad or exponential regex is refused
        if not isinstance(override, dict):
            raise _error(path, field, f"must be an object of overrides, got {override!r:.40}")
        if key.startswith("-:"):
            found.append(((pattern,), None))
            continue
        width = _int_bits(override.get("bits", bits), path, f"{field}.bits")
        size = _group(override.get("group_size", group or -1), path, f"{field}.group_size",
                      per_row=(-1, 0))  # fmt: skip
        found.append(((pattern,), int_grouped(width, size, zero_point=True)))
    return tuple(found)


def quantization_from_config(raw: dict[str, Any], *, path: str) -> Quantization:
    """Parse a `quantization_config` (or hf_quant_config.json) dict into per-module formats."""
    method = str(raw.get("quant_method", "")).lower().replace("_", "-")
    if method == "fp8":
        return _fp8(raw, path)
    if method == "fbgemm-fp8":
        skipped = _patterns(raw, path, "modules_to_not_convert")
        return Quantization("fbgemm_fp8", FP8_CHANNEL, FP8_CHANNEL, skipped)
    if method in ("modelopt", "modelopt-fp4") or "quant_algo" in raw or "quantization" in raw:
        return _modelopt(raw, path)
    if method == "compressed-tensors":
        return _compressed_tensors(raw, path)
    if method == "mxfp4":
        return Quantization("mxfp4", None, MXFP4, _patterns(raw, path, "modules_to_not_convert"))
    if method in ("awq", "gptq"):
        return _awq_gptq(raw, path, method)
    raise _error(
        path,
        "quant_method",
        f"unsupported {raw.get('quant_method')!r}; supported: fp8, fbgemm_fp8, modelopt, "
        "compressed-tensors, mxfp4, awq, gptq",
    )
