"""Bad input through the real entry point: exit status 2, one line on stderr naming the problem, no
traceback, and never a hang (named pipes and devices are refused before they are opened).

Each row is (name, setup, argv, expected words). `setup(tmp)` writes the files a row needs and returns
extra environment variables; argv may contain "{tmp}". Every run has a generous timeout: a reader that
opened a named pipe would block there, and the timeout turns that into a failure instead of a hang.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Setup = Callable[[Path], dict[str, str]]
TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llama"


def _nothing(tmp: Path) -> dict[str, str]:
    return {}


def _write(name: str, data: str | bytes) -> Setup:
    def setup(tmp: Path) -> dict[str, str]:
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        return {}
    return setup


def _fifo(name: str) -> Setup:
    def setup(tmp: Path) -> dict[str, str]:
        os.mkfifo(tmp / name)
        return {}
    return setup


def _config_dir(cfg_text: str) -> Setup:
    def setup(tmp: Path) -> dict[str, str]:
        (tmp / "m").mkdir()
        (tmp / "m" / "config.json").write_text(cfg_text)
        return {}
    return setup


def _safetensors_header(header: bytes) -> Setup:
    def setup(tmp: Path) -> dict[str, str]:
        (tmp / "m").mkdir()
        (tmp / "m" / "config.json").write_bytes((TINY / "config.json").read_bytes())
        (tmp / "m" / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
        return {}
    return setup


def _corrupt_history(tmp: Path) -> dict[str, str]:
    (tmp / "home").mkdir()
    (tmp / "home" / "history.sqlite").write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    return {"MLRIG_HOME": str(tmp / "home")}


def _executable(name: str, text: str, mode: int) -> Setup:
    def setup(tmp: Path) -> dict[str, str]:
        p = tmp / name
        p.write_text(text)
        p.chmod(mode)
        return {}
    return setup


BIG_INT = "9" * 5000
DEEP_JSON = "[" * 100_000 + "]" * 100_000
CONFIG = json.loads((TINY / "config.json").read_text())

CASES: list[tuple[str, Setup, list[str], list[str]]] = [
    # files that are not regular files: refused before opening, so nothing blocks
    ("plan file is a named pipe", _fifo("p.toml"), ["plan", "--file", "{tmp}/p.toml"], ["not a regular file"]),
    ("model is a named pipe", _fifo("m.gguf"), ["plan", "{tmp}/m.gguf"], ["not a regular file"]),
    ("inspect a named pipe", _fifo("config.json"), ["inspect", "{tmp}/config.json"], ["not a regular file"]),
    ("model is a device", _nothing, ["plan", "/dev/zero"], ["not a regular file"]),
    ("plan file is a device", _nothing, ["plan", "--file", "/dev/zero"], ["not a regular file"]),
    ("plan file is a folder", _nothing, ["plan", "--file", "{tmp}"], ["is a folder"]),
    ("price file is a named pipe", _fifo("prices.toml"),
     ["cost", "--buy", "RTX 3090", "--hours-per-month", "100", "--prices", "{tmp}/prices.toml"],
     ["not a regular file"]),
    ("build file is a named pipe", _fifo("b.toml"), ["build", "check", "{tmp}/b.toml"], ["not a regular file"]),
    # hostile or broken contents
    ("plan: 5000-digit integer", _write("p.toml", f'model = "llama-3.1-8b"\n[workload]\nbatch_size = {BIG_INT}\n'),
     ["plan", "--file", "{tmp}/p.toml"], ["4,300-digit limit"]),
    ("plan: deep nesting", _write("p.json", DEEP_JSON), ["plan", "--file", "{tmp}/p.json"], ["nested too deeply"]),
    ("plan: nan", _write("p.toml", 'model = "llama-3.1-8b"\n[hardware]\nhost_ram_gib = nan\n'),
     ["plan", "--file", "{tmp}/p.toml"], ["hardware.host_ram_gib", "finite"]),
    ("plan: JSON Infinity", _write("p.json", '{"model": "llama-3.1-8b", "workload": {"batch_size": Infinity}}'),
     ["plan", "--file", "{tmp}/p.json"], ["workload.batch_size", "finite"]),
    ("plan: bad UTF-8", _write("p.toml", b'model = "\xff\xfe"\n'), ["plan", "--file", "{tmp}/p.toml"], ["UTF-8"]),
    ("plan: over 1 MB", _write("p.toml", "# " + "x" * 1_100_000 + "\n"), ["plan", "--file", "{tmp}/p.toml"],
     ["over"]),
    ("plan: TOML syntax", _write("p.toml", "model = \n"), ["plan", "--file", "{tmp}/p.toml"], ["not valid TOML"]),
    ("config.json: 5000-digit integer", _config_dir(json.dumps(CONFIG)[:-1] + f', "x": {BIG_INT}}}'),
     ["plan", "{tmp}/m"], ["4,300-digit limit"]),
    ("config.json: deep nesting", _config_dir(DEEP_JSON), ["inspect", "{tmp}/m/config.json"], ["nested too deeply"]),
    ("config.json: mlp_only_layers of objects",
     _config_dir(json.dumps({**CONFIG, "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
                             "moe_intermediate_size": 8, "mlp_only_layers": [{}]})),
     ["plan", "{tmp}/m"], ["mlp_only_layers"]),
    ("safetensors header: huge integer", _safetensors_header(f'{{"a": {BIG_INT}}}'.encode()),
     ["plan", "{tmp}/m/model.safetensors"], ["4,300-digit limit"]),
    ("safetensors header: deep nesting", _safetensors_header(DEEP_JSON.encode()),
     ["plan", "{tmp}/m/model.safetensors"], ["nested too deeply"]),
    ("--prices: huge integer", _write("prices.toml", f"[gpu.x]\nprice_usd = {BIG_INT}\n"),
     ["cost", "--buy", "RTX 3090", "--hours-per-month", "100", "--prices", "{tmp}/prices.toml"], ["4,300-digit limit"]),
    ("--prices: deep nesting", _write("prices.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
     ["cost", "--buy", "RTX 3090", "--hours-per-month", "100", "--prices", "{tmp}/prices.toml"], ["nested too deeply"]),
    ("user price file: bad UTF-8", _write("cfg/mlrig/prices.toml", b"\xff\n"),
     ["cost", "--buy", "RTX 3090", "--hours-per-month", "100"], ["UTF-8"]),
    ("build file: huge integer", _write("b.toml", f"ram_gib = {BIG_INT}\n"), ["build", "check", "{tmp}/b.toml"],
     ["4,300-digit limit"]),
    # values accepted before with exit 0
    ("--engine ''", _nothing, ["plan", "llama-3.1-8b", "--engine", ""], ["workload.engine", "empty"]),
    ("--precision ' '", _nothing, ["plan", "llama-3.1-8b", "--precision", " "], ["workload.precision", "empty"]),
    ("--gpu ''", _nothing, ["plan", "llama-3.1-8b", "--gpu", ""], ["hardware.gpu", "empty"]),
    ("--tokens 1e308", _nothing, ["plan", "llama-3.1-8b", "--task", "pretrain", "--tokens", "1e308"],
     ["training.tokens_to_train"]),
    ("--mtbf-h 1e300", _nothing, ["plan", "llama-3.1-8b", "--task", "pretrain", "--mtbf-h", "1e300"],
     ["hardware.mtbf_hours"]),
    ("--spec-k 1000000", _nothing, ["serve", "llama-3.1-8b", "--spec-k", "1000000"], ["--spec-k"]),
    ("--min-tok-s 1e300", _nothing, ["serve", "llama-3.1-8b", "--min-tok-s", "1e300"], ["--min-tok-s"]),
    ("plan file: hidden_size 1e12", _write("p.toml", "[model]\nhidden_size = 1000000000000\nnum_layers = 2\n"
                                                     "num_heads = 4\nintermediate_size = 8\nvocab_size = 8\n"),
     ["plan", "--file", "{tmp}/p.toml"], ["model.hidden_size"]),
    # diagnose and probe faults
    ("diagnose --pid -1", _nothing, ["diagnose", "--pid", "-1"], ["--pid"]),
    ("diagnose a file that is not executable", _executable("job.sh", "echo hi\n", 0o644),
     ["diagnose", "--", "{tmp}/job.sh"], ["cannot run", "chmod +x"]),
    ("diagnose an executable without a shebang", _executable("job.bin", "\x00\x01garbage", 0o755),
     ["diagnose", "--", "{tmp}/job.bin"], ["cannot run"]),
    ("probe --history, corrupt database", _corrupt_history, ["probe", "--history"], ["history", "move it aside"]),
    ("plan --machine local, corrupt database", _corrupt_history, ["plan", "llama-3.1-8b", "--machine", "local"],
     ["history", "move it aside"]),
    ("MLRIG_CALIBRATION_DIR names nothing", lambda tmp: {"MLRIG_CALIBRATION_DIR": str(tmp / "none")},
     ["validate"], ["MLRIG_CALIBRATION_DIR", "not a folder"]),
]


def run(argv: list[str], tmp: Path, env: dict[str, str], encoding: str = "utf-8") -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLRIG_HOME": str(tmp / "mlrig-home"),
                "XDG_CONFIG_HOME": str(tmp / "cfg"), **env}
    args = [a.replace("{tmp}", str(tmp)) for a in argv]
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, encoding=encoding,
                          timeout=120, env=full_env, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("name", "setup", "argv", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, name: str, setup: Setup, argv: list[str],
                                      words: list[str]) -> None:
    r = run(argv, tmp_path, setup(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("note: no GPU")]
    assert len(lines) == 1 and lines[0].startswith("mlrig: error: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("argv", [["plan", "llama-3.1-8b"], ["models"], ["serve", "llama-3.1-8b"],
                                  ["gpus"], ["plan", "llama-3.1-8b", "--task", "pretrain"]])
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_output_degrades_on_narrow_terminals(tmp_path: Path, argv: list[str], encoding: str) -> None:
    """PYTHONIOENCODING=ascii made rich raise UnicodeEncodeError on ✔ · ± × —: symbols now degrade."""
    r = run(argv, tmp_path, {"PYTHONIOENCODING": encoding}, encoding=encoding)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    if argv == ["plan", "llama-3.1-8b"] and encoding == "ascii":
        assert "ok fits" in r.stdout and " - bf16 - " in r.stdout  # ✔ -> ok, · -> -
