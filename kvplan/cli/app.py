"""The ``kvplan`` application: global options, command registration, and error handling.

Every command runs inside :class:`KvplanGroup.invoke`, the one place where user
errors become ``kvplan: error: …`` (a field error worded with the flags, :mod:`kvplan.cli.options.fieldnames`) with exit code 2 and bugs become exit code 3
(with the traceback only under ``--debug`` or ``KVPLAN_DEBUG=1``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from kvplan.cli import terminal
from kvplan.cli.options.fieldnames import cli_message
from kvplan.cli.options.once import install as install_once
from kvplan.cli.terminal import ExitCode
from kvplan.errors import KvplanError

HELP = """Will this model, at this context, fit on this device — and how fast will it decode?

Closed-form KV-cache and memory planning for on-device LLMs. Exit codes: 0 fits / passed,
1 does not fit / failed, 2 bad input or usage, 3 internal error."""


class KvplanGroup(TyperGroup):
    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Run with click's own error display replaced by one ``kvplan: error: …`` line."""
        from typer._click.exceptions import ClickException
        from typer.exceptions import Abort

        from kvplan.files.inputs import forget_inputs

        forget_inputs()  # this command's inputs only (one process may run several commands)
        terminal.prepare_streams()
        try:
            with _terminations_unwind():
                code = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                    standalone_mode=False, **extra)
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `kvplan` or `kvplan plot` alone: show the help
                exc.show()
            else:
                terminal.display_error(_one_line(exc))
            code = exc.exit_code
        except Abort:
            terminal.display_error("aborted")
            code = ExitCode.FAILED
        code = code if isinstance(code, int) else ExitCode.OK
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx):
        try:
            return self._invoke_all_or_nothing(ctx)
        except KvplanError as exc:
            if terminal.debug_enabled():
                raise
            terminal.display_error(cli_message(exc))  # a field error in the flags the user typed
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
            raise
        except OSError as exc:  # writing our own output failed: a full disk, a closed pipe
            if _is_click_exception(exc) or terminal.debug_enabled():
                raise
            if exc.errno == errno.EPIPE:
                terminal.silence_broken_pipe()
                raise typer.Exit(ExitCode.OK) from None
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            terminal.display_error(f"{where}cannot write output: {exc.strerror or exc}")
            raise typer.Exit(ExitCode.BAD_INPUT) from None
        except Exception as exc:
            if _is_click_exception(exc) or terminal.debug_enabled():
                raise
            terminal.display_error(f"internal error: {type(exc).__name__}: {exc}")
            terminal.display_error("this is a bug in kvplan; rerun with KVPLAN_DEBUG=1 and report the traceback")
            raise typer.Exit(ExitCode.INTERNAL) from None

    def _invoke_all_or_nothing(self, ctx):
        """The command, its output files put in place together when it ends with exit 0 or 1, else none of them."""
        from kvplan.files.outfiles import OutputBatch

        with OutputBatch() as batch:
            try:
                result = super().invoke(ctx)
            except typer.Exit as exc:
                if exc.exit_code in (ExitCode.OK, ExitCode.FAILED):
                    batch.commit()
                raise
            batch.commit()
            return result


# SIGTERM (a CI timeout, `kill`) and SIGHUP (the terminal closed) end the process at once by default, skipping the
# clean-up that Ctrl-C (KeyboardInterrupt) runs: a half-written temporary output would stay. Raised as SystemExit
# instead, they unwind like Ctrl-C — every `finally` removes its temporary files — and exit 128 + the signal number
# (143 for SIGTERM, 129 for SIGHUP), the status a shell reports for a process the signal ended.
_UNWOUND_SIGNALS = ("SIGTERM", "SIGHUP")


def _unwind(signum, frame):
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _terminations_unwind():
    import signal
    import threading

    previous = {}
    if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
        for name in _UNWOUND_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None and signal.getsignal(number) is signal.SIG_DFL:
                previous[number] = signal.signal(number, _unwind)
    try:
        yield
    finally:
        from kvplan.files.outfiles import remove_temporaries

        remove_temporaries()  # left by a signal that fell between making a temporary file and its try/finally
        for number, handler in previous.items():
            signal.signal(number, handler)


def _is_click_exception(exc: Exception) -> bool:
    # Usage errors from the vendored click carry their own exit code 2 and message.
    return type(exc).__module__.startswith(("typer", "click"))


def _one_line(exc) -> str:
    """A click usage error as one line, in kvplan's words rather than pydantic's."""
    message = " ".join(exc.format_message().split())
    for old, new in (("Value error, ", ""), ("Input should be ", "must be ")):
        message = message.replace(old, new)
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None and ctx.command_path else ""
    return f"{message}{where}"


def _version(value: bool) -> None:
    if value:
        import kvplan

        terminal.display_text(f"kvplan {kvplan.__version__}")
        raise typer.Exit()


def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks (same as KVPLAN_DEBUG=1).")] = False,
) -> None:
    if debug:
        os.environ["KVPLAN_DEBUG"] = "1"


# name → (module, attribute, is a sub-app). Modules are imported only for the commands an app holds.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "check": ("kvplan.cli.check", "check", False),
    "profiles": ("kvplan.cli.profiles", "app", True),
    "import": ("kvplan.cli.imports", "app", True),
    "gate": ("kvplan.cli.gate", "gate", False),
    "report": ("kvplan.cli.report", "report", False),
    "plot": ("kvplan.cli.plot", "plot_app", True),
    "sweep": ("kvplan.cli.sweep", "sweep", False),
    "compare": ("kvplan.cli.compare", "compare", False),
    "fit": ("kvplan.cli.fit", "fit", False),
    "calibrate": ("kvplan.cli.calibrate", "calibrate", False),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with just ``only`` (what one invocation needs).

    typer builds the click objects of every registered command on each start, so the console
    script registers only the command it runs; help without a command still lists them all.
    """
    from importlib import import_module

    application = typer.Typer(cls=KvplanGroup, help=HELP, no_args_is_help=True, add_completion=False,
                              pretty_exceptions_enable=False, rich_markup_mode=None,
                              context_settings={"help_option_names": ["-h", "--help"]})
    application.callback()(_main)
    for name, (module_name, attribute, is_group) in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = import_module(module_name)
        if is_group:
            application.add_typer(getattr(module, attribute), name=name, help=module.HELP)
        else:
            application.command(name, help=module.HELP)(getattr(module, attribute))
    install_once(application)  # a single-valued option given twice is an error in every command
    return application


def _requested_command(argv: list[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def __getattr__(name: str):
    # `from kvplan.cli.app import app` (tests, embedding) gets the full app, built once.
    if name == "app":
        globals()["app"] = full = build_app()
        return full
    raise AttributeError(name)


def main() -> None:
    try:
        build_app(_requested_command(sys.argv[1:]))()
    except KvplanError as exc:  # raised outside a command (e.g. in an option callback)
        terminal.display_error(cli_message(exc))
        sys.exit(ExitCode.BAD_INPUT)
