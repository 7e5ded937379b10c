"""Writing output files whole: a temporary file in the same folder, renamed into place.

A failure at any point (a full disk, an exception while rendering, Ctrl-C) leaves the
previous file, or none, never a partial one. An output never replaces a file this run read as
input (:mod:`kvplan.files.inputs`). A symbolic link stays a link: the file it points to is
replaced. A path that is not a regular file (a named pipe, ``/dev/stdout``) is written into
directly, since it cannot be replaced whole.

A command's outputs are all or nothing (:class:`OutputBatch`): inside a batch each file is written to its temporary
file as usual, but the renames wait until the command has finished, and then happen together; a failure anywhere
(the third of three plots on a full disk, a plot folder that cannot be made after the report was rendered) removes
every temporary file and every folder the batch made, so no output of a failed command appears.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pathlib import Path

from kvplan.errors import OutputError
from kvplan.files.inputs import inputs_read


STDOUT = "-"  # ``-o -``: standard output, as Unix tools read it


def is_stdout(path: str | os.PathLike | None) -> bool:
    return path is not None and str(path) == STDOUT


def check_extension(path: str | os.PathLike, allowed: Iterable[str], what: str = "output",
                    stdout_means: str | None = None) -> str:
    """Return the lower-case extension of ``path`` (without the dot) or raise OutputError; ``-`` (standard
    output) has ``stdout_means`` when given (a plot written to a pipe is a PNG)."""
    allowed = tuple(allowed)
    if is_stdout(path) and stdout_means is not None:
        return stdout_means
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


def check_writable(path: str | os.PathLike, binary: bool = False) -> Path:
    """Fail early, before any work, when ``path`` cannot be written (``-``: binary bytes to a terminal)."""
    if is_stdout(path):
        batch = _BATCH.get()
        if batch is not None:
            batch.stdout_claimed = True
        if binary and _stdout_is_terminal():
            raise OutputError("-: this output is binary and standard output is a terminal: pipe it "
                              "(-o - | display) or give a file name")
        return Path(STDOUT)
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


class OutputBatch:
    """The files written while it is open (:func:`write_atomic`, :func:`make_folder`) appear together at
    :meth:`commit`, or not at all: leaving it uncommitted (an exception, a failed command) removes them.

    Use as ``with OutputBatch() as batch: …; batch.commit()``. Batches do not nest: an inner one joins the outer.
    """

    def __init__(self):
        self._pending: list[tuple[Path, Path, bool]] = []  # (temporary, target, the target existed before)
        self._folders: list[Path] = []
        self._after: list[Callable[[], None]] = []
        self._token = None
        self.done = False
        self.stdout_claimed = False  # an output goes to standard output (-o -): the command prints nothing else

    def __enter__(self) -> OutputBatch:
        if _BATCH.get() is None:
            self._token = _BATCH.set(self)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._token is None:
            return
        _BATCH.reset(self._token)
        if not self.done:
            self.abort()

    def add(self, tmp: Path, target: Path) -> None:
        self._pending.append((tmp, target, target.exists()))

    def made_folder(self, folder: Path) -> None:
        self._folders.append(folder)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the files are in place (a ``wrote …`` note), not before."""
        self._after.append(callback)

    def commit(self) -> None:
        """Rename every temporary file into place; if one rename fails (rare: each is within one folder), remove the
        files it made that did not exist before and the temporary files left, and raise OutputError. A file that
        existed and was already replaced keeps its new content."""
        if self._token is None or self.done:
            return
        moved: list[tuple[Path, bool]] = []
        for tmp, target, existed in self._pending:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                for path, had in moved:
                    if not had:
                        with contextlib.suppress(OSError):
                            path.unlink()
                self.abort()  # the renamed temporaries are gone already; the others are removed
                raise OutputError(f"{target}: cannot write: {exc.strerror or exc}") from None
            moved.append((target, existed))
        self._pending, self.done = [], True
        for callback in self._after:
            callback()

    def abort(self) -> None:
        """Remove every temporary file and every folder this batch made (deepest first, when empty)."""
        for tmp, _target, _existed in self._pending:
            with contextlib.suppress(OSError):
                tmp.unlink()
        for folder in reversed(self._folders):
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._pending, self._folders, self.done = [], [], True


_BATCH: ContextVar[OutputBatch | None] = ContextVar("kvplan_output_batch", default=None)


def current_batch() -> OutputBatch | None:
    return _BATCH.get()


def stdout_claimed() -> bool:
    """True when an output of the running command goes to standard output (``-o -``, ``--json -``)."""
    batch = _BATCH.get()
    return batch is not None and batch.stdout_claimed


def make_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` (and missing parents); inside a batch, the folders it made go again if the batch fails."""
    p = Path(folder)
    missing = []
    probe = p.absolute()
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot create the folder: {exc.strerror or exc}") from None
    batch = _BATCH.get()
    if batch is not None:
        for made in reversed(missing):
            batch.made_folder(made)
    return p


# Every temporary file made, until remove_temporaries(): the CLI turns SIGTERM into an exception, which may fall
# between a file's creation and the try/finally that would remove it; the CLI removes what is left as it exits.
_MADE: set[Path] = set()


def _temporary_file(**where) -> Path:
    """A new private temporary file (``tempfile.mkstemp``), closed, and noted in :data:`_MADE` before any signal
    can interrupt (SIGTERM and SIGHUP are held while it is made, where the platform can hold them)."""
    import signal

    mask = getattr(signal, "pthread_sigmask", None)
    held = {getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)} if mask else set()
    if held:
        previous = mask(signal.SIG_BLOCK, held)
    try:
        fd, name = tempfile.mkstemp(**where)
        os.close(fd)
        _MADE.add(Path(name))
        return Path(name)
    finally:
        if held:
            mask(signal.SIG_SETMASK, previous)


def remove_temporaries() -> None:
    """Remove every temporary file of this process still on disk (one renamed into place is no longer there)."""
    for path in list(_MADE):
        with contextlib.suppress(OSError):
            path.unlink()
    _MADE.clear()


def _stdout_is_terminal() -> bool:
    import sys

    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _to_stdout(produce: Callable[[Path], None], binary: bool) -> Path:
    """``produce`` into a private temporary file, whose bytes go to standard output (when the batch commits)."""
    import sys

    check_writable(STDOUT, binary)
    tmp = None
    try:
        tmp = _temporary_file(prefix=".kvplan-stdout.", suffix=".tmp")
        produce(tmp)
        data = tmp.read_bytes()
    except OSError as exc:
        raise OutputError(f"-: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def emit() -> None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    batch = _BATCH.get()
    if batch is not None:
        batch.after_commit(emit)
    else:
        emit()
    return Path(STDOUT)


def write_atomic(path: str | os.PathLike, produce: Callable[[Path], None], binary: bool = False) -> Path:
    """Call ``produce(tmp_path)`` to write a temporary file, then rename it to ``path`` (inside an
    :class:`OutputBatch`, when the batch commits). ``-`` is standard output; ``binary`` output (a PNG) is not
    written to a terminal."""
    if is_stdout(path):
        return _to_stdout(produce, binary)
    target = check_writable(path)
    if _is_stream(target):
        try:
            produce(target)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return target
    batch = _BATCH.get()
    tmp = None
    try:
        tmp = _temporary_file(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        produce(tmp)
        # mkstemp makes the file private (0600): keep the mode of the file replaced, else the one open() would give
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        if batch is not None:
            batch.add(tmp, target)
            tmp = None  # the batch renames it, or removes it
        else:
            os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
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
        if is_stdout(path):
            p = Path(STDOUT)  # standard output, not a file named '-'
            if p in seen:
                raise OutputError("-: standard output given for more than one output")
            seen.add(p)
            continue
        p = Path(path).resolve()
        if p in inputs:
            raise OutputError(f"{path}: would overwrite an input file of this command")
        if p in seen:
            raise OutputError(f"{path}: given as more than one output")
        seen.add(p)
