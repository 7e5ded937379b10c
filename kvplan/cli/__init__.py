"""The command-line interface: one module per command, all output through :mod:`terminal`."""
