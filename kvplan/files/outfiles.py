"""Writing output files whole: a temporary file in the same folder, renamed into place.

A failure at any point (a full disk, an exception while rendering, Ctrl-C) leaves the
previous file, or none, never a partial one. An output never replaces a file this run read as
input (:mod:`kvplan.files.inputs`). A symbolic link stays a link: the file it points to is
replaced. A path that is not a regular file (a named pipe, ``/dev/stdout``) is written into
directly, since it cannot be replaced whole.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from kvplan.errors import OutputError
from kvplan.files.inputs import inputs_read


def check_extension(path: str | os.PathLike, allowed: Iterable[str], what: str = "output") -> str:
    """Return the lower-case extension of ``path`` (without the dot) or raise OutputError."""
    allowed = tuple(allowed)
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in allowed:
        shown = ", ".join(f".{a}" for a in allowed)
        raise OutputError(f"{path}: unknown {what} extension {('.' + suffix) if suffix else '(none)'!s}; use {shown}")
    return suffix


def _is_stream(p: Path) -> bool:
    """An existing path that is not a regular file or a folder (after links): a pipe, a terminal, a socket."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early, before any work, when ``path`` cannot be written."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{path}: is a directory")
    if _is_stream(p):
        if not os.access(p, os.W_OK):
            raise OutputError(f"{path}: is not writable")
        return p
    if p.resolve() in inputs_read():
        raise OutputError(f"{path}: would overwrite an input file of this command")
    target = Path(os.path.realpath(p)) if p.is_symlink() else p  # a link stays: its file is the output
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"{path}: folder {str(folder)!r} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{path}: file is not writable")
    return target


def write_atomic(path: str | os.PathLike, produce: Callable[[Path], None]) -> Path:
    """Call ``produce(tmp_path)`` to write a temporary file, then rename it to ``path``."""
    target = check_writable(path)
    if _is_stream(target):
        try:
            produce(target)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return target
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        produce(tmp)
        # mkstemp makes the file private (0600): keep the mode of the file replaced, else the one open() would give
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def check_outputs(sources, paths) -> None:
    """Refuse an output path given twice, or one that would overwrite an input file: one of ``sources`` or
    any file this run has read so far (profiles, policy files)."""
    seen: set[Path] = set()
    inputs = {Path(source).resolve() for source in sources} | inputs_read()
    for path in paths:
        p = Path(path).resolve()
        if p in inputs:
            raise OutputError(f"{path}: would overwrite an input file of this command")
        if p in seen:
            raise OutputError(f"{path}: given as more than one output")
        seen.add(p)
