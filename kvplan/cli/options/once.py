"""Single-valued options given once: ``check -d pixel8 -d iphone-15-pro`` is an error, not the last device.

click keeps the last value of a repeated option without a word. :class:`OnceCommand` refuses a
single-valued option (or switch) given more than once; options declared as lists (``sweep -d a -d b``)
and counters keep accepting repetition. :func:`install` makes it the class of every command of an app,
so no command declares it itself.
"""

from __future__ import annotations

from typer.core import TyperCommand

from kvplan.cli.options.unset import skip_unset


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


class OnceCommand(TyperCommand):
    """A typer command whose single-valued options may be given once (exit 2, "--device given twice …")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        skip_unset(self.params)

    def make_parser(self, ctx):
        """click's parser, whose parse also refuses a repeated single-valued option (one parse, not two)."""
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_once(args):
            opts, rest, order = parse(args=args)  # order: each option as often as given
            if not ctx.resilient_parsing:
                _refuse_repeats(ctx, order)
            return opts, rest, order

        parser.parse_args = parse_once
        return parser


def _refuse_repeats(ctx, order) -> None:
    seen: dict[str, int] = {}
    for param in order:
        if param.param_type_name == "option" and not (param.multiple or param.count):
            seen[param.name] = seen.get(param.name, 0) + 1
            if seen[param.name] == 2:
                name = max(param.opts, key=len)  # --device, not -d
                takes = "give it once" if param.is_flag else "it takes one value"
                ctx.fail(f"{name} given {_times(2)}; {takes}")


def install(app) -> None:
    """Make :class:`OnceCommand` the class of every command of the typer ``app`` and of its sub-apps."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer's default; a command with a class of its own keeps it
            info.cls = OnceCommand
    for group in app.registered_groups:
        install(group.typer_instance)
