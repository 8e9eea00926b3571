"""`plan`'s side-by-side engines are only those that load the weights as given."""

from mlrig.catalog.gpus import resolve_gpu
from mlrig.planner import alternative_engines


def test_gguf_q8_0_is_llama_cpp_only_while_int8_goes_to_the_serving_engines() -> None:
    rtx = resolve_gpu("RTX 4070")
    assert alternative_engines("q8_0", rtx, "llama.cpp") == []  # a GGUF block format: nothing else loads it
    assert alternative_engines("q4_k_m", rtx, "llama.cpp") == []
    assert "vllm" in alternative_engines("int8", rtx, "transformers")
    assert "llama.cpp" in alternative_engines("bf16", rtx, "vllm")
