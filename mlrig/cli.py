"""The `mlrig` command line. Heavy modules are imported inside commands, so `--help` is instant."""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="mlrig",
    help="Will it fit, how fast, what to buy: plan GPU memory, speed and cost for ML workloads.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    import importlib
    import pkgutil

    import mlrig.commands as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"mlrig.commands.{mod.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_commands()


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 2, never a traceback.

    Click (inside typer) already turns usage errors into exit status 2 and `typer.Exit` into its code.
    """
    from mlrig.errors import MlrigError

    try:
        app()
    except MlrigError as exc:
        print(f"mlrig: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("mlrig: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
