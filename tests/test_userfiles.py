"""mlrig.userfiles and the readers built on it: every hostile input a one-line MlrigError, nothing
blocks, work and memory bounded by the input size."""

from __future__ import annotations

import io
import json
import os
import struct
import threading
from pathlib import Path

import pytest

from mlrig.catalog.readers.gguf import parse_gguf
from mlrig.catalog.readers.hf_config import arch_from_hf_config
from mlrig.catalog.readers.safetensors import index_shards, parse_safetensors_header
from mlrig.errors import MlrigError
from mlrig.userfiles import first_non_finite, load_json, load_toml, parse_json, parse_toml, read_bytes


def one_line(exc: pytest.ExceptionInfo[MlrigError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(("text", "words"), [
    ("9" * 5000, "4,300-digit limit"),
    ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
    ('{"a": NaN}', "a = nan"),
    ('{"a": {"b": [1, -Infinity]}}', "a.b[1] = -inf"),
    ('{"a": 1e999}', "a = inf"),
    ('{"a": ', "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("[" + "0," * 2000 + "0]", "over 1,000 JSON values"),
])
def test_parse_json_refuses_with_one_line(text: str | bytes, words: str) -> None:
    with pytest.raises(MlrigError) as exc:
        parse_json(text, "f.json", max_items=1000 if "values" in words else 1_000_000)
    assert words in one_line(exc) and "f.json" in str(exc.value)


@pytest.mark.parametrize(("text", "words"), [
    ("a = " + "9" * 5000, "4,300-digit limit"),
    ("a = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("[x]\ny = nan", "x.y = nan"),
    ("a = inf", "a = inf"),
    ("a = 1e999", "a = inf"),
    ("a = ", "not valid TOML"),
    (b"a = '\xc3'", "not UTF-8"),
])
def test_parse_toml_refuses_with_one_line(text: str | bytes, words: str) -> None:
    with pytest.raises(MlrigError) as exc:
        parse_toml(text, "f.toml")
    assert words in one_line(exc)


def test_bom_is_dropped_and_non_finite_allowed_on_request() -> None:
    assert parse_json(b'\xef\xbb\xbf{"a": 1}', "x") == {"a": 1}
    assert parse_toml("\ufeffa = 1", "x") == {"a": 1}
    assert parse_toml("a = nan", "x", finite=False)["a"] != parse_toml("a = nan", "x", finite=False)["a"]
    assert first_non_finite({"a": [1.0, {"b": 2}]}) is None


ODD_JSON = [b'{"a": 1, "b": [1.5, -0.0, 5e-324, 1e308, 0.1e1], "c": {"d": null, "e": true}}', b'{"a":1,"a":2}',
            b'18446744073709551616', b'[-9223372036854775809, 9223372036854775807]', b'"\\ud800"',
            b'"\\ud83d\\ude00"', b'1e400', b'[NaN]', b'{"x": -Infinity}', b'\xef\xbb\xbf{"a": 1}', b'\x80',
            b'[' * 300 + b']' * 300, b'[' * 1010 + b']' * 1010, b'{"a": 1,}', b'"a\tb"', b'\t1\r', b'',
            b'[' + b'1,' * 20 + b'1]', b'{"n": 1234567890123456789012}', b'0.000000000000000000001']


@pytest.mark.parametrize("raw", ODD_JSON)
def test_parse_json_of_bytes_equals_the_json_module_path(raw: bytes) -> None:
    """Bytes take orjson where it reads alike (`userfiles._orjson_reads_alike`); the same text as str
    takes the json module: the value (types included) or the one-line error must be the same."""
    def outcome(x: bytes | str) -> str:
        try:
            return repr(parse_json(x, "line 1", max_items=30))
        except MlrigError as exc:
            return f"error: {exc}"

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert outcome(raw).startswith("error: line 1 is not UTF-8")
        return
    assert outcome(raw) == outcome(text)


def test_named_pipe_and_device_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    errors: list[str] = []

    def attempt() -> None:
        for path in (fifo, Path("/dev/zero"), tmp_path):
            try:
                load_json(path, "plan file", max_bytes=1000)
            except MlrigError as exc:
                errors.append(str(exc))

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout=60)  # a blocking open would never return; generous for a loaded machine
    assert not t.is_alive(), "reading a named pipe blocked"
    assert len(errors) == 3
    assert "not a regular file" in errors[0] and "not a regular file" in errors[1] and "is a folder" in errors[2]


def test_size_cap_and_missing_file(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("a = 1\n" * 1000)
    with pytest.raises(MlrigError, match="over 1 KiB"):
        load_toml(big, "build file", max_bytes=1024)
    assert read_bytes(big, "x", 10_000).startswith(b"a = 1")
    with pytest.raises(MlrigError, match="not found; see the docs"):
        load_toml(tmp_path / "none.toml", "build file", max_bytes=10, missing="see the docs")


def test_mlp_only_layers_is_linear_and_checked() -> None:
    """10,000 layers, 5,000 of them dense: the set lookup makes this milliseconds (a list made it ~76 s)."""
    base = {"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 10_000,
            "vocab_size": 256, "intermediate_size": 128, "num_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "mlp_only_layers": list(range(0, 10_000, 2))}
    arch = arch_from_hf_config(base, model_id="x", hf_id=None, source="config.json")
    assert arch.first_dense_layers == 5000
    with pytest.raises(MlrigError, match="mlp_only_layers"):
        arch_from_hf_config({**base, "mlp_only_layers": [[0]]}, model_id="x", hf_id=None, source="c")


def _gguf_with_tensors(n: int) -> bytes:
    rec = struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 32, 0, 0)
    return b"GGUF" + struct.pack("<IQQ", 3, n, 0) + rec * n + b"\0" * 64


def test_gguf_caps_say_what_was_too_large() -> None:
    data = _gguf_with_tensors(100_001)
    with pytest.raises(MlrigError) as exc:
        parse_gguf(io.BytesIO(data), len(data), "x.gguf")
    assert "tensor count 100,001 exceeds the 100,000 limit" in one_line(exc)
    n = 4_000_001
    data = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 3) + b"key"
            + struct.pack("<IIQ", 9, 8, n) + b"\0" * (8 * n))
    with pytest.raises(MlrigError, match="4,000,000-string limit"):
        parse_gguf(io.BytesIO(data), len(data), "x.gguf")


def test_gguf_long_strings_are_skipped_not_kept() -> None:
    """A 1 MiB metadata string is kept as its first 4,096 bytes."""
    val = b"x" * 2**20
    kv = struct.pack("<Q", 12) + b"general.name" + struct.pack("<IQ", 8, len(val)) + val
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv + b"\0" * 64
    info = parse_gguf(io.BytesIO(data), len(data), "x.gguf")
    assert len(info.metadata["general.name"]) == 4096


def test_safetensors_header_value_budget() -> None:
    header = json.dumps({"__metadata__": {"k": [0] * 2_100_000}}).encode()
    data = struct.pack("<Q", len(header)) + header
    with pytest.raises(MlrigError, match="over 2,000,000 JSON values"):
        parse_safetensors_header(io.BytesIO(data), len(data), "m.safetensors")


@pytest.mark.parametrize("wmap", [{"a": ["x"]}, {"a": "../x"}, {"a": "x\ud800"}, {"a": ""}, {}])
def test_index_shards_rejects_bad_names(wmap: dict[str, object]) -> None:
    with pytest.raises(MlrigError):
        index_shards({"weight_map": wmap}, "index.json")


def test_calibration_dir_pointing_at_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mlrig.validation.runner import load_rows

    monkeypatch.setenv("MLRIG_CALIBRATION_DIR", str(tmp_path / "missing"))
    with pytest.raises(MlrigError) as exc:
        load_rows()
    assert "MLRIG_CALIBRATION_DIR" in one_line(exc) and "not a folder" in str(exc.value)
    # a folder whose file is not readable JSON Lines is one line naming the file and line
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "x.jsonl").write_text('{"id": 1}\n', encoding="utf-8")
    monkeypatch.setenv("MLRIG_CALIBRATION_DIR", str(tmp_path / "cal"))
    with pytest.raises(MlrigError) as exc:
        load_rows()
    assert "x.jsonl line 1" in str(exc.value)
