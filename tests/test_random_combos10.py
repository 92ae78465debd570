"""Findings of the random-combination campaign's seeds 67-74 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engines' source.

- vLLM V1's and TensorRT-LLM's `--enable-chunked-prefill` was refused ("modelled for vllm-v0,
  not vllm") though both are simulated chunking prefills, and the same flag inside a pasted
  `vllm serve` line was taken; trtllm-serve's line left chunked prefill at TensorRT-LLM's default,
  off (`enable_chunked_prefill: bool = Field(default=False)`, tensorrt_llm/llmapi/llm_args.py).
- A token budget below the running cap was refused for every engine with vLLM's rule, SGLang's
  own defaults on a GPU under 35 GiB included (`--chunked-prefill-size` 2,048 beside at least
  2,048 running requests): SGLang's prefill steps run alone, so its chunk does not bound the
  decode batch.
- SGLang lines were printed, and `--engine sglang` planned, for NVFP4 weights on Hopper and AMD
  GPUs, which SGLang's loader refuses: ModelOptFp4Config.get_min_capability() is 100
  (python/sglang/srt/layers/quantization/modelopt_quant.py), checked in `_get_quantization_config`
  (python/sglang/srt/model_loader/loader.py) against the GPU's 90 (H100, H200) or 94 / 95 (MI300X
  and MI325X's gfx942, MI355X's gfx950).
"""

from __future__ import annotations

import json

import pytest

from capcliff.cli import main

PLAN = ["--num-requests", "40", "--jobs", "1", "--isl", "1000", "--osl", "500"]


def _words(line: str) -> list[str]:
    return line.replace("\\\n", " ").split()


def _flag(line: str, name: str) -> str | None:
    words = _words(line)
    return words[words.index(name) + 1] if name in words else None


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, *PLAN, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one line a refused command prints (exit 2, nothing on stdout)."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


# --- chunked prefill ------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_enable_chunked_prefill_is_taken_where_the_engine_is_simulated_chunking(
    capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    # the same pool as without the flag: it names the mode simulated, it changes nothing
    base = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", engine,
            "--format", "json"]  # fmt: skip
    assert main(base) == 0
    without = json.loads(capsys.readouterr().out)
    assert main([*base, "--enable-chunked-prefill"]) == 0
    with_it = json.loads(capsys.readouterr().out)
    assert with_it["layouts"] == without["layouts"]


def test_chunked_prefill_off_is_refused_outside_vllm_v0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "vllm",
            "--no-enable-chunked-prefill"]  # fmt: skip
    line = _refusal(capsys, argv)
    assert line.startswith("error: enable_chunked_prefill: off is modelled for vllm-v0 only")
    sglang = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine",
              "sglang", "--enable-chunked-prefill"]  # fmt: skip
    assert "SGLang chunks prefills by --chunked-prefill-size" in _refusal(capsys, sglang)


def test_the_trtllm_line_turns_on_the_chunked_prefill_simulated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _plan(capsys, "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine",
                   "trtllm")  # fmt: skip
    flags = report["engine_flags"]
    assert isinstance(flags, dict)
    assert "--enable_chunked_prefill" in _words(flags["trtllm"])
