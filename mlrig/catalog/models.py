"""The built-in model catalog and name resolution: catalog names, Hugging Face ids and repo ids
people copy, local files. The architecture itself is `mlrig.catalog.arch.ModelArch` (re-exported
here with `ParamBreakdown` for callers that import them from this module)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mlrig.catalog.arch import ModelArch, validation_message
from mlrig.catalog.params import ParamBreakdown
from mlrig.errors import AmbiguousNameError, MlrigError, UnknownNameError, closest

if TYPE_CHECKING:
    from mlrig.workload import ModelRef

__all__ = ["ModelArch", "ParamBreakdown", "arch_from_ref", "load_model_catalog", "resolve_model",
           "validation_message"]


# ---- the built-in catalog and name resolution ------------------------------------------------

_STRIP_TOKENS = {"instruct", "it", "chat", "hf"}
# Names that would otherwise be ambiguous or miss: resolved to the newest matching entry.
_ALIASES: dict[str, str] = {
    "mistral-7b": "mistral-7b-v0.3",
    "mistral-nemo": "mistral-nemo-base-2407",
    "mistral-nemo-2407": "mistral-nemo-base-2407",
    "mistral-small-24b": "mistral-small-24b-2501",
    "mixtral-8x7b": "mixtral-8x7b-v0.1",
    "mixtral-8x22b": "mixtral-8x22b-v0.1",
    "falcon-7b": "falcon-7b",
    "phi-3-mini": "phi-3-mini-4k",
    "phi-3-medium": "phi-3-medium-4k",
    "gpt2-small": "gpt2",
    "bert-base": "bert-base-uncased",
    "bert-large": "bert-large-uncased",
    "llama-4-scout": "llama-4-scout-17b-16e",
    "llama-4-maverick": "llama-4-maverick-17b-128e",
    "qwen3-coder-480b": "qwen3-coder-480b-a35b",
    "qwen3-coder": "qwen3-coder-480b-a35b",
    "olmo-2-7b": "olmo-2-1124-7b",
    "olmo-2-13b": "olmo-2-1124-13b",
    "olmo-2-32b": "olmo-2-0325-32b",
    "qwen1.5-moe": "qwen1.5-moe-a2.7b",
    "glm-4.6": "glm-4.5",
    "command-r": "c4ai-command-r-08-2024",  # the newest Command R (ollama's 'command-r' is it too)
    "command-r-v01": "c4ai-command-r-v01",
    "command-r-08-2024": "c4ai-command-r-08-2024",
    "command-r-plus-08-2024": "c4ai-command-r-plus-08-2024",
    "command-r-plus": "c4ai-command-r-plus-08-2024",
}


def short_name(name: str) -> str:
    """Friendly id: lower case, no org, no 'meta-' prefix, no instruct/it/chat/hf tokens.

    'meta-llama/Meta-Llama-3.1-8B-Instruct' -> 'llama-3.1-8b'; 'google/gemma-2-9b-it' -> 'gemma-2-9b'; a name
    written as people say it, with spaces ('Llama 3.1 70B Instruct'), reads as with hyphens.
    """
    s = re.sub(r"\s+", "-", name.strip().lower().rsplit("/", 1)[-1])
    if "--" in s:
        s = s.split("--", 1)[1]
    s = s.removeprefix("meta-")
    tokens = [t for t in s.split("-") if t and t not in _STRIP_TOKENS]
    return "-".join(tokens) or s


def _catalog_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "models"


def _index_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "models_index.json"


def _parse_hf_repo(text: str) -> tuple[str, list[str]]:
    """'google-t5/t5-base (alias t5-base)' -> ('google-t5/t5-base', ['t5-base'])."""
    hf_id = text.split()[0]
    extra = re.findall(r"(?:alias|formerly|identical to)\s+([\w./-]+?)\)?(?=[\s)]|$)", text)
    return hf_id, [e.rstrip(")") for e in extra]


CatalogEntries = tuple[tuple[ModelArch, frozenset[str]], ...]


def catalog_from_configs(folder: Path | None = None) -> CatalogEntries:
    """The catalog built from its sources, the published configs in `mlrig/data/models/*.json`:
    each entry's ModelArch and the lower-case names it answers to.

    Parsing 59 configs costs ~30 ms, too much for every `mlrig plan`, so this runs when
    `scripts/build_model_index.py` regenerates `mlrig/data/models_index.json` (a test checks that
    the shipped index equals this), and `_catalog_entries` reads the index.
    """
    import json

    from mlrig.catalog.readers.hf_config import arch_from_hf_config

    out = []
    for path in sorted((folder or _catalog_dir()).glob("*.json")):
        cfg = json.loads(path.read_text(encoding="utf-8"))
        hf_id, aliases = _parse_hf_repo(cfg["_hf_repo"])
        arch = arch_from_hf_config(cfg, model_id=short_name(hf_id), hf_id=hf_id,
                                   source=f"{cfg['_source']} (catalog {path.name})")
        arch.catalog_id = cfg["_model_id"]
        arch.name = hf_id
        out.append((arch, _catalog_keys(arch, [hf_id, arch.catalog_id, *aliases])))
        for variant in cfg.get("_variants", []):
            out.append(_variant_entry(cfg, variant, path.name))
    ids = [a.id for a, _ in out]
    assert len(set(ids)) == len(ids), f"duplicate short ids in the model catalog: {ids}"
    return tuple(out)


def _catalog_keys(arch: ModelArch, names: list[str]) -> frozenset[str]:
    """The lower-case names a catalog entry answers to: its id, and each name with and without org."""
    keys = {arch.id}
    for n in names:
        n = n.lower()
        keys |= {n, n.rsplit("/", 1)[-1], n.split("--", 1)[-1]}
    return frozenset(keys)


def _variant_entry(cfg: dict[str, object], variant: dict[str, object],
                   file_name: str) -> tuple[ModelArch, frozenset[str]]:
    """A published sibling of a catalog config that differs only in the keys `overrides` lists
    (Qwen2.5-7B-Instruct: max_position_embeddings 32768 where the base model has 131072), with its
    own source. It is an entry of its own, so 'Qwen/Qwen2.5-7B-Instruct' gets the context limit
    vLLM derives from that repo's config.json, not the base model's."""
    from mlrig.catalog.readers.hf_config import arch_from_hf_config

    hf_id = str(variant["hf_repo"])
    overrides = variant["overrides"]
    assert isinstance(overrides, dict)
    merged = {k: v for k, v in cfg.items() if k not in ("_catalog", "_variants")} | overrides
    repo = hf_id.rsplit("/", 1)[-1]
    arch = arch_from_hf_config(merged, model_id=repo.lower(), hf_id=hf_id,
                               source=f"{variant['source']} (catalog {file_name}, variant: {sorted(overrides)})")
    arch.catalog_id = hf_id.replace("/", "--")
    arch.name = hf_id
    return arch, _catalog_keys(arch, [hf_id])


def catalog_index_data(entries: CatalogEntries) -> dict[str, object]:
    """The JSON form of the catalog that `_catalog_entries` reads back (fields at their defaults
    are left out; validation restores them)."""
    return {
        "_about": "generated by scripts/build_model_index.py from mlrig/data/models/*.json; do not edit",
        "models": [{"keys": sorted(keys), "arch": arch.model_dump(mode="json", exclude_defaults=True)}
                   for arch, keys in entries],
    }


@lru_cache(maxsize=1)
def _catalog_entries() -> CatalogEntries:
    """The built-in catalog, read from the precomputed index (see `catalog_from_configs`)."""
    import json

    data = json.loads(_index_path().read_text(encoding="utf-8"))
    return tuple((ModelArch.model_validate(e["arch"]), frozenset(e["keys"])) for e in data["models"])


def _catalog() -> tuple[ModelArch, ...]:
    return tuple(a for a, _ in _catalog_entries())


def load_model_catalog() -> list[ModelArch]:
    """All built-in models (copies: callers may modify them)."""
    return [a.detached_copy() for a in _catalog()]


def _compact(model_id: str) -> str:
    """A short id without its separators ('llama-3-8b' -> 'llama38b'), so a name spelled with other or no
    hyphens ('llama3-8b', ollama's 'llama3.1:8b') finds the one catalog id spelled with them."""
    return re.sub(r"[-_:\s]", "", model_id)


def family_members(name: str, ids: list[str]) -> list[str]:
    """Catalog ids a family name such as 'llama3', 'qwen2.5' or 'gpt-oss' begins, at a word or version boundary
    ('llama3' -> llama-3-8b, llama-3.1-70b, ...; not llama-30b, which difflib ranks first), in catalog order:
    the names to suggest for a name that is a family, not a model."""
    q = _compact(short_name(name.replace(":", "-")))
    if not q:
        return []
    exact, dotted = [], []  # 'llama3' names llama-3-8b before llama-3.1-8b
    for i in ids:
        parts = i.split("-")
        heads = [_compact("-".join(parts[:k])) for k in range(1, len(parts))]
        if q in heads:
            exact.append(i)
        elif any(h.startswith(q) and h[len(q)] == "." for h in heads):
            dotted.append(i)
    return exact + dotted


def _lookup(name: str) -> tuple[ModelArch | None, str | None]:
    """Catalog match by exact key, then by friendly short name; (arch, note about the match)."""
    entries = _catalog_entries()
    cat = [a for a, _ in entries]
    q = name.strip().lower()
    exact = [a for a, keys in entries if q in keys]
    if len(exact) == 1:
        return exact[0], None
    if len(exact) > 1:
        raise AmbiguousNameError("model", name, [a.id for a in exact])
    short = short_name(q)
    short = _ALIASES.get(short, short)
    matches = [a for a in cat if a.id == short]
    if not matches:  # 'llama3-8b', 'llama3.1:8b' (ollama), 'qwen-2.5-7b': the id up to its separators
        cq = _compact(short_name(q.replace(":", "-")))
        aliased = {_ALIASES[k] for k in _ALIASES if _compact(k) == cq}
        matches = [a for a in cat if _compact(a.id) == cq or a.id in aliased]
        if len(matches) != 1:  # none, or two ids that differ only in separators: let the suggestions speak
            return None, None
    if len(matches) > 1:
        raise AmbiguousNameError("model", name, [a.id for a in matches])
    a = matches[0]
    note = None
    keys = next(k for e, k in entries if e is a)
    if q.rsplit("/", 1)[-1] not in keys:
        note = f"{name!r} resolved to catalog entry {a.id} ({a.hf_id}): same architecture"
        if _tuned_variant(q) and not _tuned_variant((a.hf_id or a.id).lower()):
            note = (f"{name!r} resolved to catalog entry {a.id} ({a.hf_id}): an instruct / chat fine-tune shares its "
                    "base's architecture, so its memory and speed are the base's")
    return a, note


def _tuned_variant(name: str) -> bool:
    """A repo name of an instruction- or chat-tuned release ('Llama-3.1-8B-Instruct', 'gemma-2-9b-it', '-chat')."""
    last = name.rsplit("/", 1)[-1].lower()
    return "instruct" in last or "-chat" in last or last.endswith("-it")


# Repo-name suffixes of quantised re-uploads -> the precision they ship in (checked in this order; the
# first that ends the name wins). GGUF repos hold many files: the quant comes from the file name or
# ':QUANT', else Q4_K_M (the quant most model cards recommend) with a note.
_REPO_FORMATS: tuple[tuple[str, str | None], ...] = (
    (r"-gguf", None), (r"-gptq-int8", "gptq-int8"), (r"-gptq-int4", "gptq"), (r"-gptq(?:-4bit)?", "gptq"),
    (r"-awq(?:-int4)?", "awq"), (r"-fp8(?:-dynamic|-static)?", "fp8"), (r"-nvfp4", "nvfp4"), (r"-fp4", "nvfp4"),
    (r"-mxfp4", "mxfp4"), (r"-(?:unsloth-)?bnb-4bit", "nf4"), (r"-bnb-8bit", "int8"), (r"-int8", "int8"),
    (r"-w8a8", "int8"), (r"-exl2", None), (r"-(q4f16_1|q4f16_2|q3f16_1|q4f32_1|q0f16)-mlc", None),
    (r"-mlx-(\d)bit", None), (r"-(\d)bit", None),
)
# Publishers whose own '-FP8' repos are block-scaled FP8 (quantization_config.weight_block_size), so a repo name
# read offline keeps the block edge (ModelArch.weight_block_size, performance.prefill_gemm_rates): Qwen's model
# cards (Qwen/Qwen3-30B-A3B-FP8, Qwen/Qwen3-235B-A22B-FP8, Qwen/Qwen3-VL-8B-Instruct-FP8, ...): "The quantization
# method is fine-grained fp8 quantization with block size of 128". Other publishers' '-FP8' / '-FP8-dynamic'
# repos (RedHatAI, neuralmagic: llm-compressor FP8_DYNAMIC) scale per channel and are not listed. Rows it moves:
# VLLMPR17530 / VLLMPR17535 (fit; Qwen3-30B-A3B-FP8 / Qwen3-235B-A22B-FP8 on MI300X, vLLM 0.8.5 / 0.9.0), predicted
# +33..+88 % before, +28..+66 % with the early block-FP8 path; GPUSTACK's Qwen FP8 rows (held out) run releases past it.
BLOCK_FP8_ORGS: dict[str, int] = {"qwen": 128}
_GGUF_QUANT_RE = re.compile(r"(?:^|[-_.:])((?:ud-)?(?:i?q\d(?:_[a-z0-9]+)*|bf16|f16|f32))(?:\.gguf)?$", re.I)
_EXL2_RATE_RE = re.compile(r"[:_-](\d+(?:[._]\d+)?)(?:bpw|b)?$", re.I)


def _repo_format(name: str) -> tuple[str, str | None, str] | None:
    """('bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M') -> ('Meta-Llama-3.1-8B-Instruct', 'q4_k_m', what)."""
    from mlrig import quant

    text = name.strip()
    org, _, rest = text.partition("/") if "/" in text else ("", "", text)
    qualifier = ""
    if ":" in rest:  # repo:QUANT (ollama / llama.cpp -hf style) or repo:4.65bpw (exl2 branch)
        rest, _, qualifier = rest.partition(":")
    if "/" in rest:  # repo/file.gguf
        rest, _, qualifier = rest.partition("/")
    if rest.lower().endswith(".gguf"):  # a bare GGUF file name that is not on disk
        stem = rest[:-5]
        m = _GGUF_QUANT_RE.search(stem)
        if not m:
            return None
        base = stem[: m.start()]
        return base, quant.normalise_precision(m.group(1).lower().removeprefix("ud-")), "GGUF file"
    low = rest.lower()
    for suffix, prec in _REPO_FORMATS:
        m = re.search(suffix + "$", low)
        if not m:
            continue
        base = rest[: m.start()]
        if suffix == "-gguf":
            qm = _GGUF_QUANT_RE.search(qualifier) if qualifier else None
            if qualifier and not qm:
                raise MlrigError(f"{name!r}: cannot read a GGUF quant from {qualifier!r}; "
                                 f"write e.g. {org}/{rest}:Q4_K_M")
            return base, quant.normalise_precision(qm.group(1).lower().removeprefix("ud-") if qm else "q4_k_m"), \
                "GGUF repo" + ("" if qm else " (no quant named: assumed Q4_K_M; add :Q5_K_M etc. to choose)")
        if suffix == "-exl2":
            rm = _EXL2_RATE_RE.search(":" + qualifier) if qualifier else None
            rate = rm.group(1).replace("_", ".") if rm else "4.0"
            return base, quant.normalise_precision(f"exl2-{rate}"), \
                "EXL2 repo" + ("" if rm else " (no rate named: assumed 4.0 bpw; add :4.65bpw to choose)")
        if suffix.startswith(r"-(q4f16"):
            return base, quant.normalise_precision(m.group(1)), "MLC repo"
        if suffix.endswith(r"(\d)bit"):
            if org.lower() != "mlx-community" and "mlx" not in suffix:
                return None
            return base, quant.normalise_precision(f"mlx-{m.group(1)}bit"), "MLX repo"
        assert prec is not None
        return base, quant.normalise_precision(prec), f"{prec.upper()} repo"
    return None


# An ollama library tag: 'llama3.1:70b', 'qwen2.5:32b-instruct-q8_0', 'mixtral:8x7b'. A size tag alone is the
# Q4_K_M build (ollama.com/library/llama3.1/tags: '8b' is the same download as '8b-instruct-q4_K_M'); a quant
# at the tag's end ('-q8_0', '-fp16') chooses another.
_OLLAMA_TAG_RE = re.compile(r"(?P<family>[a-z][\w.-]*):(?P<size>\d+(?:\.\d+)?[bm]|\d+x\d+b)(?:-(?P<rest>[\w.-]+))?",
                            re.I)
OLLAMA_DEFAULT_QUANT = "q4_k_m"
# ':latest' ('llama3.1:latest') is ollama's default tag: the size each family's page
# (ollama.com/library/<family>, "latest" tag) makes the same download as, for the families the catalog holds.
OLLAMA_LATEST_SIZE = {
    "llama2": "7b", "llama3": "8b", "llama3.1": "8b", "llama3.2": "3b", "llama3.3": "70b", "codellama": "7b",
    "qwen2": "7b", "qwen2.5": "7b", "qwen3": "8b", "mistral": "7b", "mixtral": "8x7b", "mistral-nemo": "12b",
    "gemma": "7b", "gemma2": "9b", "gemma3": "4b", "phi3": "3.8b", "phi3.5": "3.8b", "phi4": "14b",
    "tinyllama": "1.1b", "gpt-oss": "20b", "deepseek-r1": "8b",
    # ollama.com/library/qwq ('latest' = 32b, Q4_K_M, 20 GB), /llama4 ('latest' = scout = 16x17b, Q4_K_M, 67 GB),
    # /command-r ('latest' = 35b), /command-r-plus ('latest' = 104b), /mistral-small ('latest' = 24b),
    # /mistral-small3.1, /mistral-small3.2 ('latest' = 24b); tag lists as published there, read 2025 (not re-fetched:
    # no network in this session)
    "qwq": "32b", "llama4": "16x17b", "command-r": "35b", "command-r-plus": "104b", "mistral-small": "24b",
    "mistral-small3.1": "24b", "mistral-small3.2": "24b",
}
# Tags named by a word instead of a size (ollama.com/library/llama4: 'scout' is the 16x17b build, 'maverick' the
# 128x17b; 'scout-q8_0' etc. likewise): read as the size tag they are.
OLLAMA_NAMED_TAGS = {"llama4:scout": "llama4:16x17b", "llama4:maverick": "llama4:128x17b"}
# Tags whose model is not the family's own at that size (ollama.com/library/deepseek-r1: its sizes below 671b
# are DeepSeek's distills into Qwen2.5 and Llama 3; since the 2025-05 update '8b' is DeepSeek-R1-0528-Qwen3-8B and
# the Llama distill is '8b-llama-distill'). A distill keeps its base's architecture (DeepSeek-R1 model card,
# "Distilled Models"): 14b is priced as Qwen2.5-14B's, 8b as Qwen3-8B's.
OLLAMA_TAG_MODELS = {
    "deepseek-r1:7b": "deepseek-r1-distill-qwen-7b", "deepseek-r1:8b": "qwen3-8b",
    "deepseek-r1:8b-llama-distill": "deepseek-r1-distill-llama-8b", "deepseek-r1:14b": "qwen2.5-14b",
    "deepseek-r1:32b": "deepseek-r1-distill-qwen-32b", "deepseek-r1:70b": "deepseek-r1-distill-llama-70b",
    "deepseek-r1:671b": "deepseek-r1", "phi3:3.8b": "phi-3-mini-4k", "phi3.5:3.8b": "phi-3.5-mini",
    "mistral-nemo:12b": "mistral-nemo-base-2407", "phi4:14b": "phi-4", "tinyllama:1.1b": "tinyllama-1.1b-v1.0",
    # QwQ-32B (ollama.com/library/qwq since 2025-03) is Qwen2.5-32B's architecture (Qwen/QwQ-32B model card:
    # "Qwen2.5", 64 layers, 40 Q / 8 KV heads, 32.5B parameters), so it is priced as Qwen2.5-32B's
    "qwq:32b": "qwen2.5-32b",
    "llama4:16x17b": "llama-4-scout-17b-16e", "llama4:128x17b": "llama-4-maverick-17b-128e",
    "llama4:17b-scout-16e-instruct": "llama-4-scout-17b-16e",
    "llama4:17b-maverick-128e-instruct": "llama-4-maverick-17b-128e",
    # ollama.com/library/command-r: '35b' (= 'latest') and '35b-08-2024' are Command R 08-2024 (GQA, 8 KV heads);
    # the '35b-v0.1' tags are the first release (64 KV heads). 'command-r-plus:104b' (= 'latest') is Command R+ 08-2024
    "command-r:35b": "c4ai-command-r-08-2024", "command-r:35b-08-2024": "c4ai-command-r-08-2024",
    "command-r:35b-v0.1": "c4ai-command-r-v01",
    "command-r-plus:104b": "c4ai-command-r-plus-08-2024", "command-r-plus:104b-08-2024": "c4ai-command-r-plus-08-2024",
    # ollama.com/library/qwen3: '30b' and '235b' are the MoE models (30b-a3b, 235b-a22b)
    "qwen3:30b": "qwen3-30b-a3b", "qwen3:235b": "qwen3-235b-a22b",
    # Mistral-Small-3.2-24B-Instruct-2506 is "a minor update of Mistral-Small-3.1-24B-Instruct-2503" (its model card):
    # the same architecture
    "mistral-small3.1:24b": "mistral-small-3.1-24b-2503", "mistral-small3.2:24b": "mistral-small-3.1-24b-2503",
}
# What a tag's catalog entry does not say about the build ollama serves.
OLLAMA_TAG_CAVEATS = {
    "qwq": "QwQ-32B shares Qwen2.5-32B's architecture: weights and KV cache are Qwen2.5-32B's",
    "mistral-small3.2": "Mistral Small 3.2 shares 3.1's architecture",
}


def _ollama_latest(name: str) -> str | None:
    """'llama3.1:latest' as ollama's default tag, 'llama3.1:8b'; None for anything else. (A bare 'llama3.1' stays a
    family name whose error suggests its catalog members, tests/test_new_user_s30.py.)"""
    family, _, tag = name.strip().lower().partition(":")
    if tag != "latest" or family not in OLLAMA_LATEST_SIZE:
        return None
    return f"{family}:{OLLAMA_LATEST_SIZE[family]}"


def _from_ollama_tag(name: str) -> ModelArch | None:
    """An ollama library tag read as its catalog architecture with the tag's quant as the weights' precision
    (Q4_K_M for a size tag alone), with a note; None when `name` is no such tag or its model is not in the
    catalog."""
    from mlrig import quant

    latest = _ollama_latest(name)
    text = latest or name.strip()
    for named, sized in OLLAMA_NAMED_TAGS.items():  # 'llama4:scout', 'llama4:scout-q8_0' -> 'llama4:16x17b...'
        if text.lower() == named or text.lower().startswith(named + "-"):
            text = sized + text[len(named):]
    m = _OLLAMA_TAG_RE.fullmatch(text)
    if m is None:
        return None
    rest = (m["rest"] or "").lower().replace("fp16", "f16")
    qm = _GGUF_QUANT_RE.search(rest) if rest else None
    variant = (rest[: qm.start()] if qm else rest).strip("-_.")  # 'a3b' of 'qwen3:30b-a3b-q8_0'
    arch = None
    family = m["family"].lower()
    for key in ([f"{family}:{m['size']}-{variant}"] if variant else []) + [f"{family}:{m['size']}"]:
        # 'deepseek-r1:32b' is a distill (OLLAMA_TAG_MODELS); 'qwen3:30b-a3b' names qwen3-30b-a3b;
        # 'llama3.1:8b-instruct-q8_0' llama-3.1-8b
        arch, _ = _lookup(OLLAMA_TAG_MODELS.get(key.lower(), key))
        if arch is not None:
            break
    if arch is None:
        return None
    # gpt-oss is the exception to Q4_K_M: ollama runs its MXFP4 weights as shipped (ollama.com/library/gpt-oss:
    # "MXFP4 format", 14 GB for 20b)
    native_mxfp4 = arch.quant_method == "mxfp4" or arch.weight_format == "mxfp4"
    # a '-qat' tag ('gemma3:27b-it-qat') is Google's quantisation-aware-trained Q4_0 build (the GGUF Google
    # publishes as google/gemma-3-27b-it-qat-q4_0-gguf), not Q4_K_M
    qat = variant.endswith("qat")
    default = "mxfp4" if native_mxfp4 else "q4_0" if qat else OLLAMA_DEFAULT_QUANT
    precision = quant.normalise_precision(qm.group(1) if qm else default)
    arch = arch.detached_copy()
    arch.weight_format = precision
    arch.gguf_packaged = True  # ollama runs it on llama.cpp (an '-fp16' tag too)
    how = ("the quant its tag names" if qm else "a QAT tag's Q4_0 build" if qat
           else "ollama's default for a size tag; add -q8_0, -fp16, ... to choose")
    tag = f"ollama's default tag, {latest}" if latest else "an ollama library tag"
    arch.notes.append(f"{name!r} resolved to catalog entry {arch.id} ({arch.hf_id}) as {tag}: "
                      f"weights {precision} ({how}); pass --engine ollama for ollama's own defaults")
    caveat = OLLAMA_TAG_CAVEATS.get(family)
    if caveat:
        arch.notes.append(caveat)
    return arch


def _from_repo_name(name: str) -> ModelArch | None:
    """A quantised re-upload ('TheBloke/Llama-2-7B-Chat-GPTQ', 'unsloth/...-bnb-4bit', 'mlx-community/...-4bit',
    'bartowski/...-GGUF:Q4_K_M', a '...-Q4_K_M.gguf' file name) read offline as its catalog base
    architecture, with the format as the weights' precision (the planner's default) and a note."""
    found = _repo_format(name)
    if found is None:
        return None
    base, precision, what = found
    arch, _ = _lookup(base)
    if arch is None:
        return None
    arch = arch.detached_copy()
    arch.weight_format = precision
    arch.notes.append(f"{name!r} read as a {what} of {arch.hf_id or arch.id} (catalog architecture, offline): "
                      f"weights {precision}, sized from the architecture, not from the files")
    org = name.strip().partition("/")[0].lower() if "/" in name else ""
    if precision == "fp8" and org in BLOCK_FP8_ORGS:
        arch.weight_block_size = BLOCK_FP8_ORGS[org]
        arch.notes.append(f"{name!r}: {org}'s FP8 repos scale their weights per {arch.weight_block_size} x "
                          f"{arch.weight_block_size} block (model card)")
    return arch


def resolve_model(name_or_path: str) -> ModelArch:
    """A model by path (config.json, model dir, .safetensors, .gguf), catalog name or HF id.

    Catalog names match case-insensitively: catalog id ('meta-llama--Meta-Llama-3.1-8B'), HF id
    with or without org ('meta-llama/Llama-3.1-8B'), or friendly short names ('llama-3.1-8b',
    'qwen2.5-7b-instruct' -> base architecture). An unknown 'org/name' is fetched from the
    Hugging Face Hub (config only, never code) when that is possible.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise MlrigError("model name is empty; give a catalog name (see `mlrig models`), HF id or path")
    name = name_or_path.strip()
    from mlrig.userfiles import expand_user, path_exists

    p = expand_user(name)

    if path_exists(p):  # not Path.exists: a 300-character name raised ENAMETOOLONG
        from mlrig.catalog.readers import load_model_path

        return load_model_path(p)
    tagged = _from_ollama_tag(name)
    if tagged is not None:
        return tagged
    arch, note = _lookup(name)
    if arch is not None:
        arch = arch.detached_copy()
        if note:
            arch.notes.append(note)
        return arch
    mapped = _from_repo_name(name)
    if mapped is not None:
        return mapped
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", name):
        from mlrig.catalog.hub import fetch_hf_config

        return fetch_hf_config(name)
    if any(s in name for s in ("/", "\\", ".json", ".gguf", ".safetensors")):
        raise MlrigError(f"model file {name!r} does not exist; check the path")
    ids = [a.id for a in _catalog()]
    family = family_members(name, ids)
    if not family and name.lower() in OLLAMA_LATEST_SIZE:  # 'qwq': a name only ollama uses, so ollama's default tag
        tagged = _from_ollama_tag(f"{name.lower()}:latest")
        if tagged is not None:
            tagged.notes.insert(0, f"{name!r} is a name only ollama uses: read as its default tag, "
                                   f"{name.lower()}:latest")
            return tagged
    cands = [*family, *(c for c in closest(short_name(name), ids) if c not in family)][:5]
    latest = _ollama_latest(f"{name}:latest")
    named = {sized: tag.split(":")[1] for tag, sized in OLLAMA_NAMED_TAGS.items()}  # 'llama4:16x17b' -> 'scout'
    size = latest.split(":")[1] if latest else ""
    size = f"{named[latest]} ({size})" if latest in named else size
    ollama = f"; ollama's {name!r} is {name}:latest, its {size} build" if latest else ""
    raise UnknownNameError("model", name, cands, "see `mlrig models`; or pass an HF id, a path, "
                           f"or an explicit architecture{ollama}")


def arch_from_ref(ref: ModelRef) -> ModelArch:
    """A ModelArch from a plan's explicit architecture; notes when the stated `params` disagree."""
    if not ref.is_explicit:
        assert ref.name is not None
        return resolve_model(ref.name)
    try:
        arch = ModelArch(
            id=ref.name or "custom", name=ref.name, hidden_size=ref.hidden_size, num_layers=ref.num_layers,
            num_heads=ref.num_heads, num_kv_heads=ref.num_kv_heads, head_dim=ref.head_dim,
            intermediate_size=ref.intermediate_size, mlp=ref.mlp, vocab_size=ref.vocab_size,
            tie_word_embeddings=ref.tie_word_embeddings, num_experts=ref.num_experts,
            experts_per_token=ref.experts_per_token, source="explicit architecture in the plan",
        )
    except ValueError as exc:
        raise MlrigError(f"explicit model architecture is inconsistent: {validation_message(exc)}") from None
    if ref.params is not None:
        derived = arch.total_params
        stated = ref.params if ref.params > 1e4 else ref.params * 1e9  # accept 8.03 (billions) too
        arch.params_stated = round(stated)
        if abs(derived - stated) > 0.02 * stated:
            arch.notes.append(f"stated params {stated / 1e9:.3g}B differ from the {derived / 1e9:.3g}B "
                              "derived from the architecture by > 2%; estimates use the derived count")
    return arch
