"""The ``kvplan`` application: global options, command registration, and error handling.

Every command runs inside :class:`KvplanGroup.invoke`, the one place where user
errors become ``kvplan: error: …`` with exit code 2 and bugs become exit code 3
(with the traceback only under ``--debug`` or ``KVPLAN_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from kvplan.cli import terminal
from kvplan.cli.terminal import ExitCode
from kvplan.errors import KvplanError

HELP = """Will this model, at this context, fit on this device — and how fast will it decode?

Closed-form KV-cache and memory planning for on-device LLMs. Exit codes: 0 fits / passed,
1 does not fit / failed, 2 bad input or usage, 3 internal error."""


class KvplanGroup(TyperGroup):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KvplanError as exc:
            if terminal.debug_enabled():
                raise
            terminal.display_error(str(exc))
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            if _is_click_exception(exc) or terminal.debug_enabled():
                raise
            terminal.display_error(f"internal error: {type(exc).__name__}: {exc}")
            terminal.display_error("this is a bug in kvplan; rerun with KVPLAN_DEBUG=1 and report the traceback")
            raise typer.Exit(ExitCode.INTERNAL) from None


def _is_click_exception(exc: Exception) -> bool:
    # Usage errors from the vendored click carry their own exit code 2 and message.
    return type(exc).__module__.startswith(("typer", "click"))


app = typer.Typer(cls=KvplanGroup, help=HELP, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        import kvplan

        terminal.display_text(f"kvplan {kvplan.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks (same as KVPLAN_DEBUG=1).")] = False,
) -> None:
    if debug:
        os.environ["KVPLAN_DEBUG"] = "1"


def _register() -> None:
    from kvplan.cli import check

    app.command("check", help=check.HELP)(check.check)
    from kvplan.cli import imports, profiles

    app.add_typer(profiles.app, name="profiles", help=profiles.HELP)
    app.add_typer(imports.app, name="import", help=imports.HELP)
    from kvplan.cli import gate

    app.command("gate", help=gate.HELP)(gate.gate)
    from kvplan.cli import report

    app.command("report", help=report.HELP)(report.report)
    from kvplan.cli import plot

    app.add_typer(plot.plot_app, name="plot", help=plot.HELP)
    from kvplan.cli import compare, fit, sweep

    app.command("sweep", help=sweep.HELP)(sweep.sweep)
    app.command("compare", help=compare.HELP)(compare.compare)
    app.command("fit", help=fit.HELP)(fit.fit)


_register()


def main() -> None:
    try:
        app()
    except KvplanError as exc:  # raised outside a command (e.g. in an option callback)
        terminal.display_error(str(exc))
        sys.exit(ExitCode.BAD_INPUT)
