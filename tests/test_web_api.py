"""`mlrig web`'s JSON API: the same JSON as the CLI's --json, clear 4xx errors, and the safety rules."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("multipart")

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from mlrig.web import create_app

BASE = "http://127.0.0.1:8765"
CATALOG = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "models"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(), base_url=BASE)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection attempt from the server side fails the test: the web app sends nothing anywhere."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"outgoing connection to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def cli_json(*args: str) -> Any:
    from mlrig.cli import app

    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


# ---- the API returns exactly what the CLI prints --------------------------------------------------

SAME_AS_CLI = [
    ("/api/plan?model=llama-3.1-8b&gpu=RTX%204090&precision=q4_k_m&context=8192",
     ["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m", "--context", "8192"]),
    ("/api/plan?model=llama-3.1-70b&gpu=RTX%203090&count=2&precision=q4_k_m&engine=vllm&limits=false",
     ["plan", "llama-3.1-70b", "--gpu", "RTX 3090", "-n", "2", "--precision", "q4_k_m", "--engine", "vllm",
      "--no-limits"]),
    ("/api/plan?model=mistral-7b&gpu=RTX%204090&method=qlora&lora_rank=16&seq_len=4096",
     ["plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--lora-rank", "16", "--seq-len", "4096"]),
    ("/api/plan?model=llama-3.1-8b&gpu=H100%20SXM&count=8&task=pretrain&tokens=1e11&storage_gb_s=5",
     ["plan", "llama-3.1-8b", "--gpu", "H100 SXM", "-n", "8", "--task", "pretrain", "--tokens", "1e11",
      "--storage-gb-s", "5"]),
    ("/api/compare?model=llama-3.1-8b&gpu=RTX%204090&gpu=RTX%203090&precision=q4_k_m&precision=bf16",
     ["compare", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu", "RTX 3090", "-q", "q4_k_m", "-q", "bf16"]),
    ("/api/compare?model=llama-3.1-8b&gpu=RTX%204090&gpu=NoSuchGPU",  # one bad variant: reported in its row
     ["compare", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu", "NoSuchGPU"]),
    ("/api/serve?model=llama-3.1-8b&gpu=L40S&min_tok_s=20&draft_model=llama-3.2-1b",
     ["serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "20", "--draft-model", "llama-3.2-1b"]),
    ("/api/serve?model=llama-3.1-70b&gpu=RTX%204090",  # does not fit
     ["serve", "llama-3.1-70b", "--gpu", "RTX 4090"]),
    ("/api/recommend?model=llama-3.1-8b&precision=q4_k_m&min_tok_s=15&budget=4000",
     ["recommend", "--model", "llama-3.1-8b", "--precision", "q4_k_m", "--min-tok-s", "15", "--budget", "4000"]),
    ("/api/cost?buy=RTX%204090&hours_per_month=60&spot=true&tokens_per_s=100",
     ["cost", "--buy", "RTX 4090", "--hours-per-month", "60", "--spot", "--tokens-per-s", "100"]),
    ("/api/fit?model=llama-3.1-8b&precision=q4_k_m&vendor=NVIDIA",
     ["fit", "llama-3.1-8b", "--precision", "q4_k_m", "--vendor", "NVIDIA"]),
    ("/api/gpus?vendor=NVIDIA&min_memory=40", ["gpus", "--vendor", "NVIDIA", "--min-memory", "40"]),
    ("/api/models?search=qwen", ["models", "--search", "qwen"]),
]


@pytest.mark.parametrize(("url", "argv"), SAME_AS_CLI, ids=[u.split("?")[0] + str(i) for i, (u, _) in
                                                             enumerate(SAME_AS_CLI)])
def test_api_returns_the_cli_json(client: TestClient, url: str, argv: list[str]) -> None:
    r = client.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == cli_json(*argv)


def test_plan_body_is_the_plan_file(client: TestClient, tmp_path: Path) -> None:
    plan = {"model": "qwen2.5-7b", "workload": {"precision": "int4", "engine": "vllm", "context_tokens": 16384},
            "hardware": {"gpu": "A100-SXM4-40GB"}}
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(plan))
    r = client.post("/api/plan", json=plan)
    assert r.status_code == 200, r.text
    assert r.json() == cli_json("plan", "--file", str(f))


def test_plan_upload_config_matches_cli_on_the_file(client: TestClient, tmp_path: Path) -> None:
    src = CATALOG / "Qwen--Qwen2.5-0.5B.json"
    folder = tmp_path / "Qwen--Qwen2.5-0.5B"
    folder.mkdir()
    shutil.copy(src, folder / "config.json")
    r = client.post("/api/plan/upload?gpu=RTX%203060&precision=q8_0",
                    files={"config": ("Qwen--Qwen2.5-0.5B.json", src.read_bytes(), "application/json")})
    assert r.status_code == 200, r.text
    assert r.json() == cli_json("plan", str(folder / "config.json"), "--gpu", "RTX 3060", "--precision", "q8_0")


def test_plan_upload_gguf_header_only(client: TestClient, tmp_path: Path) -> None:
    """A GGUF upload cut after its header, with the whole file's size given, reads as the whole file."""
    pytest.importorskip("gguf")
    from test_model_files import write_gguf

    p = tmp_path / "tiny.gguf"
    write_gguf(p)
    whole = p.read_bytes()
    from mlrig.catalog.readers.gguf import read_gguf

    head = whole[:read_gguf(p).data_offset]  # metadata + tensor table, no tensor data
    assert len(head) < len(whole)
    expected = cli_json("plan", str(p), "--gpu", "RTX 4090")
    r = client.post("/api/plan/upload?gpu=RTX%204090", files={"weights": ("tiny.gguf", head)},
                    data={"weights_size": str(len(whole))})
    assert r.status_code == 200, r.text
    assert r.json() == expected
    # without the size, the cut file is (rightly) truncated, and the error names the upload, not a temp path
    r = client.post("/api/plan/upload?gpu=RTX%204090", files={"weights": ("tiny.gguf", head)})
    assert r.status_code == 400
    assert "truncated" in r.json()["error"] and "/tmp" not in r.json()["error"]


def test_diagnose_timeline_and_report(client: TestClient) -> None:
    from mlrig.diagnose.models import DiagnoseReport, Summary

    csv_text = ("t_s,cpu_percent_mean,iowait_percent,gpu0_util_percent,gpu0_throttle_reasons\n"
                "0.0,10.5,,90,\n1.0,20.5,1.5,95,hw_slowdown\n2.0,30.0,2.0,,\n")
    r = client.post("/api/diagnose", files={"file": ("timeline.csv", csv_text.encode())})
    assert r.status_code == 200, r.text
    tl = r.json()["timeline"]
    assert tl["rows"] == 3 and tl["t_s"] == [0.0, 1.0, 2.0]
    assert tl["series"]["cpu_percent_mean"] == [10.5, 20.5, 30.0]
    assert tl["series"]["iowait_percent"] == [None, 1.5, 2.0] and tl["series"]["gpu0_util_percent"] == [90, 95, None]
    assert tl["text"]["gpu0_throttle_reasons"] == ["", "hw_slowdown", ""]
    summary = Summary(duration_s=2, n_samples=3, logical_cpus=2, cpu_percent_mean=20, cpu_percent_max_core_mean=30,
                      tree_cpu_percent_mean=50, tree_cpu_percent_max_worker_mean=0, n_procs_max=1,
                      iowait_percent_mean=1.0, disk_read_mb_s_mean=0, disk_write_mb_s_mean=0, proc_io_mb_s_mean=0,
                      ram_used_gib_max=1, ram_total_gib=8, swap_mb_s_mean=0)
    report = DiagnoseReport(command=["python", "train.py"], interval_s=1.0, summary=summary, findings=[])
    r = client.post("/api/diagnose", files={"file": ("report.json", report.model_dump_json().encode())})
    assert r.status_code == 200, r.text
    assert r.json()["report"] == report.model_dump(mode="json")


# ---- bad input: a clear 4xx naming the field, never a 5xx -----------------------------------------

BAD = [
    ("get", "/api/plan", 422, "model"),
    ("get", "/api/plan?model=llama-3.1-8b&batch=abc", 422, "batch"),
    ("get", "/api/plan?model=llama-3.1-8b&batch=-1", 400, "batch"),
    ("get", "/api/plan?model=llama-3.1-8b&context=0", 400, "context"),
    ("get", "/api/plan?model=llama-3.1-8b&gpu=NoSuchGPU", 400, "gpu"),
    ("get", "/api/plan?model=llama-3.1-8b&task=train", 422, "task"),
    ("get", "/api/plan?model=llama-3.1-8b&tokens=nan", 422, "tokens"),
    ("get", "/api/plan?model=llama-3.1-8b&tp=4", 400, "tp"),
    ("get", "/api/plan?model=llama-3.1-8b&frobnicate=1", 422, "frobnicate"),
    ("get", "/api/plan?model=" + "x" * 201, 422, "model"),
    ("get", "/api/plan?model=llama-9000", 400, "model"),
    ("get", "/api/compare?model=llama-3.1-8b&" + "&".join(f"gpu=g{i}" for i in range(65)), 422, "gpu"),
    ("get", "/api/serve?model=llama-3.1-8b&min_tok_s=0", 400, "min_tok_s"),
    ("get", "/api/serve?model=llama-3.1-8b&concurrency=1,x", 400, "concurrency"),
    ("get", "/api/serve?model=llama-3.1-8b&draft_model=/etc/passwd", 400, "draft_model"),
    ("get", "/api/recommend?model=llama-3.1-8b&years=0", 400, "years"),
    ("get", "/api/recommend?model=llama-3.1-8b&hours_per_day=25", 400, "hours_per_day"),
    ("get", "/api/recommend?model=llama-3.1-8b&objective=fastest", 422, "objective"),
    ("get", "/api/cost?buy=RTX%204090", 400, "hours_per_month"),
    ("get", "/api/cost?hours_per_month=-5", 400, "hours_per_month"),
    ("get", "/api/fit", 400, None),
    ("get", "/api/gpus?hw_class=toaster", 400, "hw_class"),
    ("get", "/api/models?max_params=-1", 400, "max_params"),
]


@pytest.mark.parametrize(("method", "url", "status", "field"), BAD, ids=[b[1][:60] for b in BAD])
def test_bad_input_is_a_clear_4xx(client: TestClient, method: str, url: str, status: int, field: str | None) -> None:
    r = client.request(method, url)
    assert r.status_code == status, r.text
    body = r.json()
    assert isinstance(body["error"], str) and body["error"] and "Traceback" not in body["error"]
    assert "\n" not in body["error"]
    if field is not None:
        assert body["field"] == field


def test_bad_bodies(client: TestClient) -> None:
    r = client.post("/api/plan", json=["not", "a", "plan"])
    assert r.status_code == 422
    r = client.post("/api/plan", json={"model": "llama-3.1-8b", "workload": {"batchsize": 4}})
    assert r.status_code == 400 and "unknown field" in r.json()["error"]
    r = client.post("/api/plan", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    r = client.post("/api/plan", json={"model": {"name": "x" * 5000}})
    assert r.status_code == 400 and "too long" in r.json()["error"]
    r = client.post("/api/plan/upload", files={"weights": ("w.bin", b"\x00" * 64)})
    assert r.status_code == 400 and r.json()["field"] == "weights"
    r = client.post("/api/plan/upload", files={"weights": ("model.safetensors", b"\x02" + b"\x00" * 7 + b"{}")})
    assert r.status_code == 400 and r.json()["field"] == "config"
    r = client.post("/api/plan/upload", files={"config": ("config.json", b"[1, 2]")})
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    r = client.post("/api/plan/upload")
    assert r.status_code == 400 and r.json()["field"] == "config"
    for payload in (b"\xff\xfe\x00binary", b"", b"a,b\n1,2\n", b'{"command": 5}'):
        r = client.post("/api/diagnose", files={"file": ("x", payload)})
        assert r.status_code == 400, payload
        assert r.json()["field"] == "file"


def test_model_names_never_reach_the_disk_or_the_hub(client: TestClient, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """Paths and unknown HF ids are refused before the planner's path and Hub branches can run."""
    import mlrig.catalog.hub
    import mlrig.catalog.readers

    def boom(*a: Any, **k: Any) -> None:
        raise AssertionError("the web app must not read a model path or ask the Hub")

    monkeypatch.setattr(mlrig.catalog.readers, "load_model_path", boom)
    monkeypatch.setattr(mlrig.catalog.hub, "fetch_hf_config", boom)
    cfg = tmp_path / "config.json"
    shutil.copy(CATALOG / "Qwen--Qwen2.5-0.5B.json", cfg)
    for name in (str(cfg), str(tmp_path), "~/.ssh/id_rsa", "../../etc/passwd", "some-org/some-model",
                 "./config.json", "C:\\models\\x.gguf"):
        for url in (f"/api/plan?model={name}", f"/api/compare?model={name}", f"/api/serve?model={name}",
                    f"/api/recommend?model={name}", f"/api/fit?model={name}"):
            r = client.get(url)
            assert r.status_code == 400, (url, r.text)
            assert r.json()["field"] == "model" and "not in the built-in catalog" in r.json()["error"]
        r = client.post("/api/plan", json={"model": {"name": name}})
        assert r.status_code == 400 and r.json()["field"] == "model.name"


def test_allow_hub_lets_hf_ids_through_to_the_hub_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import mlrig.catalog.hub
    from mlrig.errors import MlrigError

    asked: list[str] = []

    def fake(repo: str) -> None:
        asked.append(repo)
        raise MlrigError(f"{repo}: offline in tests")

    monkeypatch.setattr(mlrig.catalog.hub, "fetch_hf_config", fake)
    c = TestClient(create_app(allow_hub=True), base_url=BASE)
    assert c.get("/api/plan?model=some-org/some-model").status_code == 400
    assert asked == ["some-org/some-model"]
    assert c.get("/api/plan?model=../etc/passwd").status_code == 400  # still no paths
    assert asked == ["some-org/some-model"]


def test_host_header_origin_and_size_limits(client: TestClient) -> None:
    ok = "/api/plan?model=llama-3.1-8b&gpu=RTX%204090"
    assert client.get(ok).status_code == 200
    assert client.get(ok, headers={"host": "localhost:8765"}).status_code == 200
    # DNS rebinding: a page on attacker.example resolving to 127.0.0.1 sends its own name as Host
    assert client.get(ok, headers={"host": "attacker.example:8765"}).status_code == 400
    assert client.get("/plan", headers={"host": "attacker.example"}).status_code == 400
    # a form posted from another origin (or a sandboxed frame) is refused
    r = client.post("/api/plan", json={"model": "llama-3.1-8b"}, headers={"origin": "http://attacker.example"})
    assert r.status_code == 403
    r = client.post("/api/plan", json={"model": "llama-3.1-8b"}, headers={"origin": "null"})
    assert r.status_code == 403
    r = client.post("/api/plan", json={"model": "llama-3.1-8b"}, headers={"origin": BASE})
    assert r.status_code == 200
    # bodies over the cap: by Content-Length, and streamed without one
    r = client.post("/api/plan", content=b"{" + b" " * 300_000 + b"}", headers={"content-type": "application/json"})
    assert r.status_code == 413 and "limit" in r.json()["error"]

    def chunks() -> Any:
        for _ in range(40):
            yield b" " * 10_000

    r = client.post("/api/plan", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    big = b"\x00" * (40 * 2**20)
    r = client.post("/api/plan/upload", files={"weights": ("big.gguf", big)})
    assert r.status_code == 413


def test_security_headers_and_no_external_assets(client: TestClient) -> None:
    r = client.get("/plan?model=llama-3.1-8b&gpu=RTX%204090")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    html = r.text
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html and "//cdn" not in html
    assert client.get("/docs").status_code == 404  # Swagger UI would load its JS from a CDN
    assert client.get("/static/style.css").status_code == 200


def test_openapi_schema_names_the_cli_result_models(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    for p in ("/api/plan", "/api/compare", "/api/serve", "/api/recommend", "/api/cost", "/api/fit",
              "/api/gpus", "/api/models", "/api/diagnose", "/api/plan/upload"):
        assert p in paths
    comps = schema["components"]["schemas"]
    assert {"PlanResponse", "MemoryBreakdown", "Performance", "Recommendation", "CostResponse",
            "ErrorResponse"} <= set(comps)
    plan_params = {p["name"] for p in paths["/api/plan"]["get"]["parameters"]}
    assert {"model", "gpu", "precision", "context", "batch", "engine", "task", "limits"} <= plan_params


def test_pages_render_and_show_errors_in_page(client: TestClient) -> None:
    for url in ("/", "/plan", "/compare", "/serve", "/recommend", "/cost", "/diagnose"):
        r = client.get(url)
        assert r.status_code == 200, url
        assert "<form" in r.text or url == "/", url
    r = client.get("/plan?model=llama-9000&gpu=RTX+4090")
    assert r.status_code == 400 and 'role="alert"' in r.text and "llama-9000" in r.text
    r = client.get("/serve?model=llama-3.1-8b&min_tok_s=abc")
    assert r.status_code == 400 and "min_tok_s" in r.text
    r = client.get("/plan?model=llama-3.1-8b&gpu=RTX+4090&precision=q4_k_m&batch=&context=")  # blanks = defaults
    assert r.status_code == 200 and 'data-chart="stacked-bar"' in r.text


def test_plan_page_renders_bands_and_any_validation_object(client: TestClient,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The result may carry a top-level `validation` object per figure: shown as given, whatever its fields."""
    import mlrig.web.service

    real = mlrig.web.service.plan

    def with_validation(q: Any, **kw: Any) -> dict[str, Any]:
        out = real(q, **kw)
        out["validation"] = {"decode_tok_s": {"rows": 304, "median_error": 0.068, "p90_error": 0.2,
                                              "scope": "llama.cpp CUDA"},
                             "ttft_ms": "not validated"}
        return out

    monkeypatch.setattr(mlrig.web.service, "plan", with_validation)
    r = client.get("/plan?model=llama-3.1-8b&gpu=RTX+4090&precision=q4_k_m")
    assert r.status_code == 200
    html = r.text
    cli = cli_json("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m")
    assert f"±{cli['performance']['error_band']['decode_tok_s'] * 100:.0f}%" in html
    assert "rows: 304; median_error: 0.068; p90_error: 0.2; scope: llama.cpp CUDA" in html
    assert "not validated" in html and 'id="validation"' in html


def test_diagnose_page_shows_a_report(client: TestClient) -> None:
    from mlrig.diagnose.models import DiagnoseReport, Finding, Summary

    summary = Summary(duration_s=60, n_samples=60, logical_cpus=8, cpu_percent_mean=12.5, cpu_percent_max_core_mean=99,
                      tree_cpu_percent_mean=100, tree_cpu_percent_max_worker_mean=0, n_procs_max=1,
                      iowait_percent_mean=None, disk_read_mb_s_mean=0, disk_write_mb_s_mean=0, proc_io_mb_s_mean=0,
                      ram_used_gib_max=3, ram_total_gib=32, swap_mb_s_mean=0)
    finding = Finding(kind="input-pipeline", severity="critical", summary="GPU 0 waits on the data loader <script>",
                      remedies=["more DataLoader workers"], rule="util < 50 % while one core is saturated")
    report = DiagnoseReport(command=["python", "train.py"], interval_s=1.0, summary=summary, findings=[finding])
    r = client.post("/diagnose", files={"file": ("report.json", report.model_dump_json().encode())})
    assert r.status_code == 200
    assert "input-pipeline" in r.text and "more DataLoader workers" in r.text
    assert "&lt;script&gt;" in r.text and "<script>" not in r.text.split("</head>")[1]  # escaped
    r = client.post("/diagnose", files={"file": ("x.csv", b"nope,1\n")})
    assert r.status_code == 400 and 'role="alert"' in r.text and "t_s" in r.text


def test_plan_page_lists_the_fixes_when_it_does_not_fit(client: TestClient) -> None:
    r = client.get("/plan?model=llama-3.1-8b&gpu=RTX+3060+12GB&context=32768")
    assert r.status_code == 200
    assert "To make it fit" in r.text and "<code>--precision q6_k</code>" in r.text and "<code>-n " in r.text
    fits = client.get("/plan?model=llama-3.1-8b&gpu=RTX+4090&precision=q4_k_m")
    assert 'id="fixes"' not in fits.text
    api = client.get("/api/plan?model=llama-3.1-8b&gpu=RTX+3060+12GB&context=32768").json()
    assert [f["flags"] for f in api["fixes"]][:1] == ["--precision q6_k"]
