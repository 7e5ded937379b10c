"""The command-line interface, laid out as hatch lays out its own: ``app`` (the typer app and the one error path),
one module or package per command (``check/``, ``sweep/``, ``calibrate/`` hold their helpers), ``options/`` (every
option, the option groups, the output formats, the flag table) and ``terminal`` (all output)."""
