"""Checking profile files without stopping at the first problem (``kvplan profiles validate``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kvplan.errors import FieldText, ProfileError


@dataclass(frozen=True)
class FileResult:
    path: str
    kind: str | None
    name: str | None
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "name": self.name, "ok": not self.problems,
                "errors": list(self.problems)}


def kind_of_data(data: object) -> str | None:
    """Tell a device from a model by its keys; None when the keys say neither (or both)."""
    if not isinstance(data, dict):
        return None
    device = bool({"ram", "memory_bandwidth", "os_reserve", "flash_read"} & set(data))
    model = bool({"layers", "attention_heads", "kv_heads", "head_dim"} & set(data))
    return "device" if device and not model else "model" if model and not device else None


def validate_file(path: str | Path, kind: str | None = None) -> FileResult:
    """Validate one file as ``kind`` (or the kind its keys tell); every problem is collected."""
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device, Model
    from kvplan.files.yamlio import load_yaml

    name = str(path)
    try:
        doc = load_yaml(path)
    except ProfileError as exc:
        return FileResult(name, kind, None, exc.problems)
    sniffed = kind_of_data(doc.data)
    if kind and sniffed and sniffed != kind:
        return FileResult(name, kind, None, [f"{name}: this is a {sniffed} profile, but a {kind} profile is "
                                             "needed here"])
    kind = kind or sniffed
    if kind is None:
        return FileResult(name, None, None, [FieldText("kind", f"{doc.where(())}: (document): cannot tell a device "
                                                       "from a model by its keys; give {kind=device} or {kind=model}")])
    cls = Device if kind == "device" else Model
    try:
        profile = validate_document(cls, doc, what=f"{kind} profile")
    except ProfileError as exc:
        raw = doc.data.get("name") if isinstance(doc.data, dict) else None
        return FileResult(name, kind, raw if isinstance(raw, str) else None, exc.problems)
    return FileResult(name, kind, profile.name, [])
