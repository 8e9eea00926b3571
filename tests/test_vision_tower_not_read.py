"""A vision-language model decodes text without its vision tower: engines encode images once, before the language
model's prefill, so a text token streams only the language model (performance.read_fraction / read_weight_bytes).
Qwen3-VL-8B's text tower is Qwen3-8B's (hidden 4096, 36 layers, 12288 MLP, 151,936 untied vocabulary), so the two
decode at the same speed while the VL model still holds its ~0.58 B-parameter tower in memory (not on llama.cpp,
whose .gguf leaves the tower to a separate mmproj file)."""

from mlrig.catalog.models import resolve_model
from mlrig.planner import evaluate
from mlrig.workload import Plan


def _plan(model: str, engine: str, precision: str, gpu: str) -> Plan:
    return Plan.model_validate({"model": {"name": model},
                                "workload": {"task": "inference", "engine": engine, "precision": precision,
                                             "prompt_tokens": 512, "output_tokens": 128},
                                "hardware": {"gpu": gpu}})


def test_qwen3_vl_tower_is_a_vision_part_of_the_model() -> None:
    vl, text = resolve_model("Qwen/Qwen3-VL-8B-Instruct"), resolve_model("Qwen/Qwen3-8B")
    pv, pt = vl.params(), text.params()
    assert pv.vision == vl.vision_params > 500_000_000
    assert pv.total - pv.vision == pt.total  # the same language model
    assert pt.vision == 0


def test_vl_model_decodes_as_fast_as_its_text_tower_but_holds_more() -> None:
    for engine, precision, gpu in (("llama.cpp", "q4_k_m", "RTX 4090"), ("mlx", "mlx-4bit", "M4 Max 128GB"),
                                   ("vllm", "bf16", "H100 SXM")):
        vl = evaluate(_plan("Qwen/Qwen3-VL-8B-Instruct", engine, precision, gpu))
        text = evaluate(_plan("Qwen/Qwen3-8B", engine, precision, gpu))
        assert vl.performance is not None and text.performance is not None
        assert abs(vl.performance.decode_tok_s / text.performance.decode_tok_s - 1) < 0.01, engine
        if engine == "llama.cpp":  # the GGUF holds the text model; the tower is the mmproj, loaded with --mmproj
            assert abs(vl.memory.weights_gib - text.memory.weights_gib) < 0.01
        else:
            assert vl.memory.weights_gib > text.memory.weights_gib, engine
