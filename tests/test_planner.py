"""The planner and the plan contract: field placement, one-line errors, batch evaluation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.errors import MlrigError
from mlrig.planner import evaluate, evaluate_case, load_plan_file, parse_plan, plan_from_fields

runner = CliRunner()


def test_fields_land_in_their_sections() -> None:
    d = plan_from_fields("llama-3.1-8b", gpu="RTX 4090", precision="q4_k_m", batch_size=4, zero_stage=3,
                         method="lora", tensor_parallel=2, count=2)
    assert d["model"] == {"name": "llama-3.1-8b"}
    assert d["workload"] == {"precision": "q4_k_m", "batch_size": 4}
    assert d["training"] == {"zero_stage": 3, "method": "lora"}
    assert d["hardware"] == {"gpu": "RTX 4090", "tensor_parallel": 2, "count": 2}


def test_flags_override_a_plan_file() -> None:
    base = {"model": "qwen2.5-7b", "workload": {"precision": "bf16", "batch_size": 8}}
    d = plan_from_fields(None, base=base, batch_size=2)
    assert d["model"] == {"name": "qwen2.5-7b"}
    assert d["workload"] == {"precision": "bf16", "batch_size": 2}
    assert base["workload"]["batch_size"] == 8  # the base is not mutated


@pytest.mark.parametrize("bad, needle", [
    ({"model": "x", "workload": {"batch_size": -1}}, "workload.batch_size"),
    ({"model": "x", "workload": {"batch_size": 0}}, "greater than 0"),
    ({"model": "x", "workload": {"gpu_memory_utilization": 1.5}}, "gpu_memory_utilization"),
    ({"model": "x", "workload": {"batchsize": 4}}, "unknown field 'workload.batchsize'"),
    ({"model": "x", "hardware": {"count": 2, "tensor_parallel": 4}}, "exceeds the 2 GPU"),
    ({"model": "x", "training": {"zero_stage": 5}}, "training.zero_stage"),
    ({"workload": {}}, "model is required"),
    ({"model": {"hidden_size": 4096}}, "explicit architecture lacks"),
])
def test_bad_plans_give_one_line(bad: dict, needle: str) -> None:
    with pytest.raises(MlrigError) as exc:
        parse_plan(bad)
    msg = str(exc.value)
    assert needle in msg
    assert "\n" not in msg


def test_nan_is_rejected() -> None:
    with pytest.raises(MlrigError, match="finite"):
        parse_plan({"model": "x", "workload": {"gpu_memory_utilization": math.nan}})


def test_plan_files(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text('id = "a"\n[model]\nname = "llama-3.1-8b"\n[workload]\nbatch_size = 2\n')
    assert parse_plan(load_plan_file(p)).workload.batch_size == 2
    (tmp_path / "bad.toml").write_text("[model\n")
    with pytest.raises(MlrigError, match="not valid"):
        load_plan_file(tmp_path / "bad.toml")
    with pytest.raises(MlrigError, match="not found"):
        load_plan_file(tmp_path / "missing.toml")


def test_evaluate_case_never_raises() -> None:
    r = evaluate_case({"id": "bad", "model": "no-such-model-xyz", "hardware": {"gpu": "RTX 4090"}})
    assert r.id == "bad" and r.error and "unknown model" in r.error
    r = evaluate_case([1, 2])
    assert r.error and "object" in r.error


def test_evaluate_llama_8b_on_4090() -> None:
    r = evaluate({"id": "x", "model": "meta-llama/Llama-3.1-8B", "workload": {"precision": "bf16",
                  "context_tokens": 8192, "engine": "transformers"}, "hardware": {"gpu": "RTX 4090"}})
    assert r.error is None and r.memory is not None
    # 8.03e9 bf16 params = 14.96 GiB of weights; 8192 tokens of bf16 KV = 1.0 GiB
    assert r.memory.weights_gib == pytest.approx(14.96, rel=0.02)
    assert r.memory.kv_cache_gib == pytest.approx(1.0, rel=0.02)
    assert r.fits is True
    assert r.memory.gpu_capacity_gib == pytest.approx(23.99, abs=0.05)


def test_eval_command_reports_bad_lines_and_finishes(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    good = {"id": "ok", "model": {"name": "llama-3.1-8b"}, "workload": {"precision": "q4_k_m"},
            "hardware": {"gpu": "RTX 3090"}}
    cases.write_text("\n".join([json.dumps(good), "{not json", json.dumps({"id": "gpu", "model": "llama-3.1-8b",
                     "hardware": {"gpu": "RTX 9999"}}), json.dumps({**good, "id": "ok2"})]) + "\n")
    res = runner.invoke(app, ["eval", str(cases)])
    assert res.exit_code == 1
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert [o["id"] for o in out] == ["ok", None, "gpu", "ok2"]
    assert out[0]["error"] is None and out[0]["fits"] is True
    for key in ("per_gpu_gib", "weights_gib", "kv_cache_gib", "activations_gib", "gradients_gib",
                "optimizer_gib", "overhead_gib", "host_ram_gib", "gpu_capacity_gib"):
        assert key in out[0]["memory"]
    assert "kv_cache_capacity_tokens" in out[0]
    assert "not valid JSON" in out[1]["error"]
    assert "RTX 9999" in out[2]["error"]
    assert out[3]["error"] is None


def test_eval_all_good_exits_zero(tmp_path: Path) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"model": "qwen2.5-7b", "hardware": {"gpu": "A100-SXM4-80GB"}}) + "\n")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["eval", str(cases), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["error"] is None


def test_eval_unwritable_output_is_a_user_error(tmp_path: Path) -> None:
    """An MlrigError (not an OSError traceback): mlrig.cli.main prints it as one line and exits 2."""
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"model": "qwen2.5-7b", "hardware": {"gpu": "A100-SXM4-80GB"}}) + "\n")
    res = runner.invoke(app, ["eval", str(cases), "-o", str(tmp_path / "missing" / "out.jsonl")])
    assert isinstance(res.exception, MlrigError) and res.exception.exit_code == 2
    assert "cannot write results" in str(res.exception) and "\n" not in str(res.exception)


def test_api_plan() -> None:
    import mlrig

    r = mlrig.plan("llama-3.1-8b", gpu="RTX 4090", precision="q4_k_m")
    assert r.fits and r.memory is not None and r.memory.weights_gib < 6


def test_quantised_checkpoints_default_to_their_shipped_format() -> None:
    shipped = evaluate({"model": "gpt-oss-20b", "hardware": {"gpu": "RTX 4090"}})
    assert shipped.precision == "mxfp4" and shipped.fits
    assert any("as shipped" in n for n in shipped.notes)
    bf16 = evaluate({"model": "gpt-oss-20b", "workload": {"precision": "bf16"}, "hardware": {"gpu": "RTX 4090"}})
    assert bf16.precision == "bf16" and not bf16.fits  # 21B at 16 bits is ~39 GiB
    plain = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "RTX 4090"}})
    assert plain.precision == "bf16" and plain.engine == "vllm"  # HF checkpoint on NVIDIA: vLLM by default
    gguf = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"}, "hardware": {"gpu": "RTX 4090"}})
    assert gguf.engine == "llama.cpp"
    mac = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "Apple M2 Max 30-core GPU 32GB"}})
    assert mac.engine == "mlx"  # an HF bf16 checkpoint on a Mac: mlx-lm loads it as is (s35)
    mac_gguf = evaluate({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"},
                         "hardware": {"gpu": "Apple M2 Max 30-core GPU 32GB"}})
    assert mac_gguf.engine == "llama.cpp"
    assert any("no engine given: assumed vllm" in n for n in plain.notes)
    assert any("current release" in n for n in plain.notes)


def test_precision_spellings_are_one_format() -> None:
    """'float16', 'half' and 'fp16' are the same weights, the same KV cache and the same speed."""
    results = [evaluate({"model": "llama-3.1-8b", "workload": {"precision": p}, "hardware": {"gpu": "RTX 4090"}})
               for p in ("fp16", "float16", "half")]
    assert {r.precision for r in results} == {"fp16"}
    assert len({(r.memory.per_gpu_gib, r.performance.decode_tok_s) for r in results  # type: ignore[union-attr]
                }) == 1


def test_llama_cpp_tensor_parallel_says_which_split_mode_it_prices() -> None:
    """A llama.cpp plan over several GPUs says what it prices: layer split by default (with the hint to pass
    --tp for --split-mode tensor), and with --tp the tensor-parallel pricing and that the deprecated
    --split-mode row (slower in published runs) is not modelled; serving engines get neither note."""
    def plan(engine: str, tp: int) -> dict[str, object]:
        return {"model": {"name": "llama-3-8b"},
                "workload": {"task": "inference", "precision": "q4_k_m", "engine": engine, "batch_size": 1},
                "hardware": {"gpu": "rtx-3090", "count": 2, "tensor_parallel": tp}}

    layer = evaluate(plan("llama.cpp", 1))
    assert any("--split-mode tensor" in n and "pipeline" in n for n in layer.notes)
    assert not any("--split-mode row" in n for n in layer.notes)
    tensor = evaluate(plan("llama.cpp", 2))
    assert any("--split-mode row" in n and "not modelled" in n for n in tensor.notes)
    assert not any("--split-mode row" in n for n in evaluate(plan("vllm", 2)).notes)
