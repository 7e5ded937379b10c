"""Checking plot paths before any work, and writing figures whole (temp file renamed into place)."""

from __future__ import annotations

import os
from pathlib import Path

from kvplan.errors import OutputError
from kvplan.files.outfiles import check_extension, check_writable, make_folder, write_atomic

PLOT_EXTENSIONS = ("png", "svg", "pdf")
PNG_DPI = 150
# No dates or software versions in the files: the same plot gives the same bytes.
_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


def check_plot_path(path: str | os.PathLike) -> Path:
    """Fail before computing when ``path`` has an unknown extension or cannot be written (``-``: a PNG to standard
    output, refused when that is a terminal)."""
    fmt = check_extension(path, PLOT_EXTENSIONS, "plot", stdout_means="png")
    return check_writable(path, binary=fmt != "svg")


def check_plot_dir(folder: str | os.PathLike) -> Path:
    """A folder that exists and is writable, or that can be created (its nearest existing parent is writable)."""
    p = Path(folder)
    if p.exists():
        if not p.is_dir():
            raise OutputError(f"{folder}: is not a folder")
        if not os.access(p, os.W_OK):
            raise OutputError(f"{folder}: folder is not writable")
        return p
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise OutputError(f"{folder}: cannot create the folder ({str(parent)!r} is not writable)")
    return p


def make_plot_dir(folder: str | os.PathLike) -> Path:
    return make_folder(folder)  # removed again when the command fails (kvplan.files.outfiles.OutputBatch)


def figure_bytes(fig, fmt: str = "png") -> bytes:
    """``fig`` as the bytes of a PNG, SVG or PDF file, as :func:`save_figure` writes it."""
    import io

    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "kvplan"}):
        fig.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=_METADATA[fmt], bbox_inches="tight", pad_inches=0.15)
    return buffer.getvalue()


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Write ``fig`` to ``path`` as PNG, SVG or PDF (by extension; ``-``: a PNG to standard output), whole or not
    at all."""
    fmt = check_extension(path, PLOT_EXTENSIONS, "plot", stdout_means="png")
    import matplotlib

    def produce(tmp: Path) -> None:
        with matplotlib.rc_context({"svg.hashsalt": "kvplan"}):
            fig.savefig(tmp, format=fmt, dpi=PNG_DPI, metadata=_METADATA[fmt], bbox_inches="tight",
                        pad_inches=0.15)

    return write_atomic(path, produce, binary=fmt != "svg")
