"""Examples shown at the end of each command's `--help` (typer epilogs), attached in mlrig.cli.build_app.

Every line here runs as written from the repository root: tests/test_cli_polish.py runs each one that the
README tour (tests/test_readme_tour.py) does not already run. Keep them offline and at most 76 columns
(--help indents them by 4).
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "plan": (
        'mlrig plan llama-3.1-8b --gpu "RTX 4090" --precision q4_k_m --context 32k',
        'mlrig plan mistral-7b --gpu "RTX 4090" --method qlora --seq-len 4k',
        "mlrig plan --file examples/plan.toml --json",
        'mlrig plan llama-3.1-8b --gpu "RTX 4090" --markdown',
    ),
    "fit": (
        'mlrig fit llama-3.1-70b --gpu "RTX 3090" -n 2',
        'mlrig fit --gpu "RTX 4090" --context 8k --fits-only',
    ),
    "compare": (
        'mlrig compare llama-3-8b -q q4_k_m --gpu "M2 Max 64GB" --gpu "RTX 4070"',
        'mlrig compare mistral-7b -g "RTX 4090" -m full -m lora -m qlora',
        'mlrig compare llama-2-7b -g "8x A100 80GB" -g "RTX 4090" -m qlora',
    ),
    "serve": ("mlrig serve llama-3.1-8b --gpu L40S --min-tok-s 20",),
    "eval": ("mlrig eval examples/cases.jsonl",),
    "trace": ('mlrig trace llama-3.2-1b --gpu "RTX 4090" --task finetune --method lora',),
    "validate": ("mlrig validate",),
    "recommend": (
        "mlrig recommend --model llama-3.1-8b --min-tok-s 30 --budget 2k",
        "mlrig recommend --plan examples/advice/student-qlora-7b.toml --budget 1500",
    ),
    "report": ("mlrig report --plan examples/advice/student-qlora-7b.toml --budget 1500",),
    "build check": ("mlrig build check examples/build-2x3090.toml",),
    "build suggest": (
        'mlrig build suggest --gpu "RTX 4090" -n 2',
        'mlrig build suggest -g "RTX 3090" -n 4 -m llama-3.2-3b --method full',
    ),
    "cost": (
        'mlrig cost --buy "RTX 4090" --hours-per-month 60',
        'mlrig cost --buy "RTX 4090" --hours-per-month 60 --sources',
    ),
    "prices": ("mlrig prices --stale",),
    "gpus": ("mlrig gpus --vendor NVIDIA --min-memory 40", "mlrig gpus --search 4090 --wide"),
    "models": ("mlrig models --search qwen",),
    "inspect": ("mlrig inspect examples/tiny-llama", "mlrig inspect examples/tiny-llama-q8_0.gguf"),
    "probe": ("mlrig probe --dir /tmp", "mlrig probe --quick --dir /tmp"),
    "diagnose": ("mlrig diagnose -- python examples/train.py",),
    "monitor": (
        "mlrig monitor --prometheus 9400",
        "mlrig monitor --prometheus 9400 --host 0.0.0.0",
    ),
    "web": ("mlrig web --port 8765",),
    "sweep": (
        "mlrig sweep llama-3.1-8b --gpu 'RTX*' -q bf16,q4_k_m -c 4k..128k -b 1..64",
        "mlrig sweep qwen2.5-32b -g h100-sxm-80gb -n 1..8 -q bf16,fp8 --format json",
    ),
}


def epilog(command: str) -> str | None:
    """The epilog for a command path ('plan', 'build check'): 'Examples:' and one example per line."""
    lines = EXAMPLES.get(command)
    if not lines:
        return None
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)  # \b: click keeps the lines
