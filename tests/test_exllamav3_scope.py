"""ExLlamaV3 is priced with ExLlamaV2's physics but is not validated by ExLlamaV2's runs."""

from mlrig.planner import evaluate
from mlrig.workload import Plan


def _plan(engine: str) -> Plan:
    return Plan.model_validate({
        "model": "llama-2-13b",
        "workload": {"task": "inference", "precision": "exl2-4.65", "engine": engine, "batch_size": 1,
                     "prompt_tokens": 512, "output_tokens": 128},
        "hardware": {"gpu": "rtx-3090", "count": 1}})


def test_exllamav3_is_its_own_unvalidated_scope_nearest_to_exllamav2() -> None:
    v2 = evaluate(_plan("exllamav2"))
    v3 = evaluate(_plan("exllamav3"))
    assert v3.performance is not None and v2.performance is not None
    assert v3.performance.decode_tok_s == v2.performance.decode_tok_s  # the same physics
    dec2, dec3 = v2.validation["decode_tok_s"], v3.validation["decode_tok_s"]
    assert dec2.validated and "exllamav2" in dec2.scope
    assert not dec3.validated and "exllamav3" in dec3.scope
    assert dec3.nearest is not None and "exllamav2" in dec3.nearest
