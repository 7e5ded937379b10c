"""The errors kvplan raises for user mistakes.

Only the CLI turns these into messages and exit codes; library callers catch
:class:`KvplanError` (or the precise subclass) like any other exception.
"""

from __future__ import annotations


class KvplanError(Exception):
    """Base of every error caused by the user's input (exit code 2 in the CLI)."""


class QuantityError(KvplanError, ValueError):
    """A quantity string (size, rate, count, tokens) that cannot be understood."""


class ProfileError(KvplanError, ValueError):
    """A profile or configuration file that is invalid.

    ``problems`` holds one ``file:line: field: message`` string per problem, so a
    file with several mistakes is reported in one go.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class NotFoundError(KvplanError, LookupError):
    """A profile name, alias or path that does not resolve to a profile."""


class UsageError(KvplanError, ValueError):
    """An option value or combination of options that makes no sense."""


class OutputError(KvplanError, OSError):
    """An output file that cannot be written (bad path, unknown extension)."""
