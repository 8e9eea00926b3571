"""The `mlrig` command line. Heavy modules are imported inside commands, so `--help` is instant.

Each module in `mlrig/commands/` defines `register(app)`. `main()` registers only the module that
owns the command on the command line (`COMMAND_MODULES`): building typer's parameter objects for all
of the ~17 commands costs about 60 ms that `mlrig plan` should not pay (`benchmarks/startup.py`).
`--help`, no command, or an unknown name registers them all, so help and "no such command" errors
(with click's suggestions) are unchanged. `mlrig.cli.app` is the full application, for tests.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

# Top-level command name -> the module under mlrig/commands/ that registers it.
# tests/test_cli.py checks this map against what the modules actually register.
COMMAND_MODULES: dict[str, str] = {
    "build": "advisor", "recommend": "advisor", "report": "advisor",
    "cost": "cost",
    "prices": "prices",
    "compare": "compare",
    "eval": "eval",
    "fit": "fit",
    "gpus": "gpus",
    "inspect": "models", "models": "models",
    "plan": "plan",
    "diagnose": "probe", "monitor": "probe", "probe": "probe",
    "serve": "serve",
    "sweep": "sweep",
    "trace": "trace",
    "validate": "validate",
    "web": "web",
}


def build_app(command: str | None = None) -> typer.Typer:
    """The CLI with the module owning `command` registered, or every command when it is None/unknown."""
    import importlib

    application = typer.Typer(
        name="mlrig",
        help="Will it fit, how fast, what to buy: plan GPU memory, speed and cost for ML workloads.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
        pretty_exceptions_enable=False,
        # click's plain help: two columns that wrap at the terminal's width and never cut an option name
        # (typer's rich panels squeeze long names like --gpu-memory-utilization to "--gpu-memory-util…")
        rich_markup_mode=None,
    )

    # An explicit callback keeps `mlrig` a command group even when only one command is registered
    # (typer otherwise promotes a lone command to the root, and `mlrig plan X` would parse "plan" as X).
    @application.callback()
    def _root(
        version: bool = typer.Option(False, "--version", help="print mlrig's version and exit",
                                     callback=_print_version, is_eager=True),
    ) -> None:
        pass

    wanted = COMMAND_MODULES.get(command or "")
    names = [wanted] if wanted else sorted(set(COMMAND_MODULES.values()))
    for name in names:
        importlib.import_module(f"mlrig.commands.{name}").register(application)
    _attach_examples(application)
    return application


def _print_version(value: bool) -> None:
    """`mlrig --version`: the installed distribution's version (package metadata), then exit."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"mlrig {version('mlrig')}")
        except PackageNotFoundError:  # running from a source tree that was never installed
            typer.echo("mlrig (not installed: no package metadata)")
        raise typer.Exit()


def _attach_examples(application: typer.Typer, prefix: str = "") -> None:
    """Each registered command's --help ends with its examples (mlrig/commands/_examples.py)."""
    from mlrig.commands._examples import epilog

    for info in application.registered_commands:
        name = f"{prefix}{info.name}"
        info.epilog = info.epilog or epilog(name)
    for group in application.registered_groups:
        if group.typer_instance is not None and group.name:
            _attach_examples(group.typer_instance, f"{prefix}{group.name} ")


def __getattr__(name: str) -> Any:
    """`from mlrig.cli import app` gives the full application (built on first use, then cached)."""
    if name == "app":
        application = build_app()
        globals()["app"] = application
        return application
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 2, never a traceback.

    Click (inside typer) already turns usage errors into exit status 2 and `typer.Exit` into its code.
    """
    from mlrig.errors import MlrigError

    command = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        build_app(command)()
    except MlrigError as exc:
        print(f"mlrig: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("mlrig: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
