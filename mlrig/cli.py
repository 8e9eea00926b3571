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


# The order `mlrig --help` lists the modules' commands in: a new user's path (will it fit, how fast, side by
# side, how many users, what to buy), then the catalogs, batch work, measurement and the rest.
HELP_ORDER = ("plan", "fit", "compare", "serve", "advisor", "cost", "prices", "models", "gpus", "eval", "sweep",
              "trace", "validate", "probe", "web")


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
    names = [wanted] if wanted else [*HELP_ORDER, *sorted(set(COMMAND_MODULES.values()) - set(HELP_ORDER))]
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


# What the output's symbols become on a terminal that cannot show them (PYTHONIOENCODING=ascii, a
# latin-1 locale): readable ASCII rather than a UnicodeEncodeError traceback.
_ASCII_FALLBACK = {"✔": "ok", "✘": "x", "·": "-", "…": "...", "±": "+/-", "×": "x", "—": "-", "–": "-",
                   "→": "->", "←": "<-", "≥": ">=", "≤": "<=", "≈": "~", "α": "a", "°": " deg", "µ": "u",
                   "‘": "'", "’": "'", "“": '"', "”": '"', "•": "*", "÷": "/"}


def _degrade(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(_ASCII_FALLBACK.get(ch, "?") for ch in bad), exc.end


def _safe_streams() -> None:
    """Let stdout/stderr degrade characters their encoding lacks instead of raising."""
    import codecs

    codecs.register_error("mlrig-degrade", _degrade)
    for stream in (sys.stdout, sys.stderr):
        enc = getattr(stream, "encoding", None) or "utf-8"
        try:
            "✔·…±×—→≥".encode(enc)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="mlrig-degrade")


def repeated_option(application: typer.Typer | Any, args: list[str]) -> str | None:
    """The complaint when an option that takes one value is given twice (`plan --gpu H100 --gpu A100`,
    `plan --precision bf16 --precision q4_k_m`, `--eager --cuda-graphs`): click keeps the last and drops the
    others without a word, so the answer is about something other than what the user asked. Any spelling
    counts (`-g X --gpu=Y`, `-n2`). Options that collect values (`compare --gpu`, `fit -m`), the workload
    flags `recommend` / `report` / `cost` read after each `--model` (not this command's own options), a
    flag repeated as itself (`--json --json`: no conflict) and words after `--` (`diagnose -- CMD`) are
    left alone. `application`: the typer app, or the click command built from it (`main` builds it once)."""
    words = args[: args.index("--")] if "--" in args else args
    if sum(1 for w in words if w.startswith("-") and w != "-") < 2:
        return None
    # typer carries its own copy of click: its classes are read by duck typing, not isinstance
    cmd: Any = typer.main.get_command(application) if isinstance(application, typer.Typer) else application
    path: list[str] = []
    for w in words:  # descend to the subcommand (`build suggest`)
        sub = getattr(cmd, "commands", {}).get(w) if not w.startswith("-") else None
        if sub is None:
            break
        cmd, path = sub, [*path, w]
    words = words[len(path):]
    # each option word -> the option it names (the value words that follow are skipped)
    by_name: dict[str, Any] = {}
    for p in cmd.params:
        if p.param_type_name == "option":
            by_name.update({o: p for o in [*p.opts, *p.secondary_opts]})
    seen: dict[str, list[str]] = {}  # option name -> the spellings given, in order
    params: dict[str, Any] = {}
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        name, attached = (w.split("=", 1)[0], True) if w.startswith("--") and "=" in w else (w, False)
        if name not in by_name and len(w) > 2 and w[0] == "-" and w[1] != "-" and w[:2] in by_name:
            name, attached = w[:2], True  # `-n2`: a short option with its value attached
        p = by_name.get(name)
        if p is None:
            continue
        if not p.is_flag and not attached:
            i += p.nargs if p.nargs > 0 else 1  # its value(s)
        if p.multiple or getattr(p, "count", False):
            continue
        seen.setdefault(p.name, []).append(name)
        params[p.name] = p
    for key, given in seen.items():
        p = params[key]
        if len(given) < 2 or (p.is_flag and len({name in p.secondary_opts for name in given}) == 1):
            continue  # `--json --json`, `--eager --eager`: the same switch twice, no conflict
        flag = max(p.opts, key=len)
        where = f"mlrig {' '.join(path)}".strip()
        if flag == "--gpu":
            hint = ("give several as one comma-separated value: --gpu A,B" if "comma" in (p.help or "")
                    else "to put GPUs side by side: mlrig compare MODEL --gpu A --gpu B")
            return f"--gpu given {len(given)} times; {where} takes one GPU ({hint})"
        if p.is_flag:
            both = " and ".join(dict.fromkeys(given))
            return f"{both} both given; {where} takes one of them: drop the other"
        return f"{flag} given {len(given)} times; {where} takes one value: give it once"
    return None


# Flags other tools spell differently (vLLM, llama.cpp, HF Trainer, axolotl, torchrun, DeepSpeed), as new users
# type them: the unknown flag -> (the mlrig option that must exist in the command, how mlrig spells it). click's
# "Possible options" are close spellings only: '--lora' suggested --load and --lora-rank, not --method lora.
FOREIGN_FLAGS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("--lora", "--use-lora", "--peft"), ("--method", "--method lora")),
    **dict.fromkeys(("--qlora", "--use-qlora"), ("--method", "--method qlora")),
    **dict.fromkeys(("--full-finetune", "--full"), ("--method", "--method full")),
    **dict.fromkeys(("--lora-r", "--rank", "--lora-dim", "--r"), ("--lora-rank", "--lora-rank N")),
    **dict.fromkeys(("--batch-size", "--bs", "--micro-batch", "--micro-batch-size", "--per-device-train-batch-size",
                     "--train-batch-size"), ("--batch", "--batch N (-b)")),
    **dict.fromkeys(("--max-seq-len", "--max-seq-length", "--seq-length", "--seqlen", "--sequence-len",
                     "--cutoff-len", "--max-length"), ("--seq-len", "--seq-len N for training, --context N for "
                                                       "inference")),
    **dict.fromkeys(("--ctx-size", "--ctx", "--n-ctx", "--context-length", "--context-size", "--num-ctx"),
                    ("--context", "--context N (-c; 8192 or 8k)")),
    **dict.fromkeys(("--num-gpus", "--gpus", "--ngpu", "--n-gpus", "--nproc-per-node", "--gpu-count"),
                    ("--count", "-n N (--count) with --gpu NAME, or --gpu '2x NAME'")),
    **dict.fromkeys(("--tensor-parallel-size", "--tp-size", "--tensor-parallel"), ("--tp", "--tp N")),
    **dict.fromkeys(("--pipeline-parallel-size", "--pp-size"), ("--pp", "--pp N")),
    **dict.fromkeys(("--dtype", "--torch-dtype", "--quantization", "--quantize", "--bits"),
                    ("--precision", "--precision X (-q, --quant): bf16, fp8, awq, q4_k_m, nf4, ...")),
    "--load-in-4bit": ("--precision", "--precision nf4 (QLoRA: --method qlora)"),
    "--load-in-8bit": ("--precision", "--precision int8"),
    **dict.fromkeys(("--deepspeed", "--fsdp", "--zero-stage"), ("--zero", "--zero 3 (FSDP full shard), --zero 2")),
    **dict.fromkeys(("--8bit-adam", "--adam8bit", "--adamw-8bit", "--optim"),
                    ("--optimizer", "--optimizer adamw-8bit (or adamw, sgd, adafactor)")),
    "--gradient-checkpointing": ("--checkpointing", "--checkpointing"),
}


def one_line_usage_error(exc: Any) -> str:
    """A click usage error (unknown option, bad value, missing argument) as one line with the fix, where click
    prints its usage, a hint and the error over four lines. An option another tool spells differently names
    mlrig's spelling (FOREIGN_FLAGS) where the command has it."""
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "mlrig"
    message = exc.format_message().rstrip(".")
    name = getattr(exc, "option_name", None)
    command = getattr(ctx, "command", None)
    if name in FOREIGN_FLAGS and command is not None and message.startswith("No such option"):
        needs, spelled = FOREIGN_FLAGS[name]
        if any(needs in p.opts for p in command.params):
            return f"No such option: {name}; mlrig spells it {spelled} (see `{path} --help`)"
    return f"{message} (see `{path} --help`)"


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 2, never a traceback.

    Click (inside typer) already turns usage errors into exit status 2 and `typer.Exit` into its code.
    """
    import errno

    # typer's own copy of click from 0.26 (pyproject pins >=0.26; typer.Abort is public, these are not)
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    from mlrig import interrupts
    from mlrig.errors import MlrigError

    _safe_streams()
    interrupts.install()
    command = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        click_command: Any = typer.main.get_command(build_app(command))
        twice = repeated_option(click_command, sys.argv[1:])
        if twice:
            raise MlrigError(twice)
        # standalone_mode=False: click's errors come here, to be printed as one line (below)
        status = click_command.main(args=sys.argv[1:], prog_name="mlrig", standalone_mode=False)
        sys.exit(status if isinstance(status, int) else 0)
    except MlrigError as exc:
        print(f"mlrig: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except NoArgsIsHelpError as exc:  # `mlrig`, `mlrig build`: the help, as click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except ClickException as exc:
        print(f"mlrig: error: {one_line_usage_error(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:  # end of input at a prompt
        print("mlrig: aborted", file=sys.stderr)
        sys.exit(1)
    except interrupts.STOP as exc:
        print(f"mlrig: interrupted ({interrupts.describe(exc)})", file=sys.stderr)
        sys.exit(interrupts.exit_status(exc))
    except BrokenPipeError:  # `mlrig models | head`: the reader left; not an error worth a traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG):
            raise
        print(f"mlrig: error: cannot write: {exc.strerror}; free some space or write elsewhere", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
