"""TensorRT-LLM's default max_batch_size by release (engines.trtllm_default_max_batch_size): 256 before 0.14
(build.py / trtllm-build), 2,048 from 0.14 (NVIDIA/TensorRT-LLM PR #2401, the v0.14.0 release: "[BREAKING CHANGE]
The default `max_batch_size` of the `trtllm-build` command is set to `2048`"; BuildConfig in builder.py, which
trtllm-serve takes as its default)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import serving
from mlrig.estimators.engines import trtllm_default_max_batch_size
from mlrig.estimators.memory import trtllm_engine_activation_bytes
from mlrig.planner import parse_plan, resolve_plan


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"task": "inference", "precision": "fp16", "engine": "trt-llm", "load": "offline",
                             "num_requests": 4000, "prompt_tokens": 128, "output_tokens": 128}
    wl.update(w)
    return {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"}, "workload": wl,
            "hardware": {"gpu": "H100 SXM5 80GB", "count": 1}}


@pytest.mark.parametrize(("version", "cap"), [
    ("0.5.0", 256), ("0.9.0", 256), ("0.12.0", 256), ("0.13.0", 256), ("v0.13", 256),
    ("0.14.0", 2048), ("0.14", 2048), ("0.16.0", 2048), ("1.0.0", 2048), ("1.2.0rc1", 2048), (None, 2048),
])
def test_default_max_batch_size_by_release(version: str | None, cap: int) -> None:
    assert trtllm_default_max_batch_size(version) == cap
    h100 = resolve_gpu("H100 SXM5 80GB")
    assert serving.batch_cap(parse_plan(_plan(engine_version=version)), "trt-llm", h100, True) == cap


def test_a_plans_max_num_seqs_wins() -> None:
    """trtllm-bench sizes its own max_batch_size from the dataset; rows give it as max_num_seqs."""
    h100 = resolve_gpu("H100 SXM5 80GB")
    plan = parse_plan(_plan(engine_version="0.16.0", max_num_seqs=512))
    assert serving.batch_cap(plan, "trt-llm", h100, True) == 512


def test_the_logits_buffers_follow_the_default_batch() -> None:
    """The engine's fp32 logits for max_batch_size rows of the vocabulary (128,256 for Llama 3.1) and the runtime's
    4.69 copies: 8x larger under the 2,048 default than under 0.13's 256, so the KV pool is smaller. Hand check at
    0.16: 2,048 x 128,256 x 4 B x 5.69 = 5.98e9 bytes (the logits exceed 8,192 tokens x 102,400 B of MLP)."""
    new, _ = resolve_plan(_plan(engine_version="0.16.0"))
    old, _ = resolve_plan(_plan(engine_version="0.13.0"))
    assert trtllm_engine_activation_bytes(new.arch, new.plan, 1) == pytest.approx(2048 * 128_256 * 4 * 5.69, rel=1e-9)
    assert trtllm_engine_activation_bytes(old.arch, old.plan, 1) == pytest.approx(
        8192 * 102_400 + 4.69 * 256 * 128_256 * 4, rel=1e-9)
