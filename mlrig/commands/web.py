"""`mlrig web`: the planner in a browser (needs the optional extra: pip install "mlrig[web]")."""

from __future__ import annotations

from typing import Annotated

import typer

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def web_cmd(
    host: Annotated[str, typer.Option(
        "--host", help="address to listen on (default: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8765,
    open_browser: Annotated[bool, typer.Option("--open", help="open the page in the default browser")] = False,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="also accept this Host header (a name others use to reach it; repeatable)")] = None,
    allow_hub: Annotated[bool, typer.Option(
        "--allow-hub", help="look up HF ids missing from the catalog on the Hugging Face Hub (sends the id there)")
    ] = False,
) -> None:
    """Serve the pages (plan, compare, serve, recommend, cost, diagnose) and the JSON API on http://HOST:PORT.

    Listens on 127.0.0.1 unless told otherwise. Works offline; reads no files by path (models come from
    the catalog or an upload) and sends nothing anywhere."""
    import sys

    from mlrig.errors import MlrigError

    if not 0 < port < 65536:
        raise MlrigError(f"--port must be between 1 and 65535, got {port}")
    try:
        import uvicorn

        from mlrig.web import create_app
        from mlrig.web.app import LOCAL_HOSTS
        from mlrig.web.service import sandbox_cwd
    except ImportError as exc:
        raise MlrigError(f"`mlrig web` needs the web extra ({exc.name} is missing): "
                         "pip install 'mlrig[web]'") from None
    allowed = [*LOCAL_HOSTS, *(allow_host or [])]
    if host not in LOOPBACK:
        if host not in ("0.0.0.0", "::", ""):
            allowed.append(host)
        print(f"mlrig web: warning: listening on {host}, not only on this machine: anyone who can reach it can use "
              "it. It answers only Host headers it knows (" + ", ".join(allowed) + "); add names with --allow-host.",
              file=sys.stderr)
    sandbox_cwd()  # no relative name can reach a file from here on
    app = create_app(allowed_hosts=allowed, allow_hub=allow_hub)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else \
        f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", server_header=False,
                            proxy_headers=False, limit_concurrency=64, timeout_keep_alive=5)
    server = uvicorn.Server(config)
    if open_browser:
        import threading
        import time
        import webbrowser

        def _open() -> None:
            for _ in range(200):  # up to 20 s for the socket to be listening
                if server.started:
                    webbrowser.open(url)
                    return
                time.sleep(0.1)

        threading.Thread(target=_open, daemon=True).start()
    print(f"mlrig web: serving on {url} (Ctrl-C to stop)", file=sys.stderr)
    server.run()


def register(app: typer.Typer) -> None:
    app.command("web")(web_cmd)
