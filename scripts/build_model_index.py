"""Regenerate mlrig/data/models_index.json from the catalog's sources, mlrig/data/models/*.json.

    python scripts/build_model_index.py [--out PATH] [--check]

The configs stay the sourced data; the index holds each one's normalised ModelArch and the names
it answers to, so resolving a catalog model at start-up reads one small file instead of parsing
59 configs (see mlrig.catalog.models.catalog_from_configs). tests/test_model_index.py fails when
the shipped index differs from what this script builds, so a changed config or parser can't
leave it stale. `--check` does the same comparison without writing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "mlrig" / "data" / "models_index.json"


def build_text() -> str:
    """The index file's exact text, built from the configs (one model per line pair, diff-friendly)."""
    from mlrig.catalog.models import catalog_from_configs, catalog_index_data

    return json.dumps(catalog_index_data(catalog_from_configs()), indent=1, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the index at --out is stale; write nothing")
    args = ap.parse_args()
    text = build_text()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run python scripts/build_model_index.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
