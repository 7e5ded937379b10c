"""Talking to the Hugging Face Hub, through ``huggingface_hub`` only (no HTTP of our own).

Everything the library does for its own downloads applies: its cache (``HF_HUB_CACHE`` /
``HF_HOME``, default ``~/.cache/huggingface/hub``), the token (``HF_TOKEN`` or ``hf auth login``),
offline mode (``HF_HUB_OFFLINE=1``: cache only) and a mirror (``HF_ENDPOINT``). The library is
imported inside the functions, never at kvplan's start-up. Its exceptions become one-line kvplan
errors that name the repository and what to do (:func:`hub_errors`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from kvplan.errors import KvplanError, NotFoundError, UsageError

CONFIG_FILE = "config.json"
SAFETENSORS_INDEX = "model.safetensors.index.json"
# bytes per value of the safetensors dtypes (the safetensors format's names)
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
               "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1}
_TORCH_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}


class HubAccessError(KvplanError):
    """The Hub (or its cache) could not give what was asked: network, offline mode, server errors."""


def endpoint() -> str:
    """The Hub in use: ``HF_ENDPOINT`` as huggingface_hub read it, else https://huggingface.co."""
    try:
        from huggingface_hub import constants

        return constants.ENDPOINT
    except ImportError:
        return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set, read the way huggingface_hub reads it — without importing it."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        value = os.environ.get(var)
        if value:
            return value.strip().upper() in ("1", "ON", "YES", "TRUE")
    return False


def require_hub():
    try:
        import huggingface_hub
    except ImportError:
        raise UsageError("Hugging Face Hub models (hf:ORG/NAME) need the 'huggingface_hub' package: "
                         "pip install huggingface_hub") from None
    return huggingface_hub


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _is_network_error(exc: BaseException) -> bool:
    """A connection/timeout error of whichever HTTP client huggingface_hub uses (httpx2, httpx or requests)."""
    names = _names(exc)
    return bool(names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError", "TransportError",
                         "ConnectionError", "Timeout", "ProxyError", "ReadTimeout", "RemoteProtocolError"}) \
        and "OfflineModeIsEnabled" not in names


@contextlib.contextmanager
def hub_errors(repo_id: str, revision: str | None = None, filename: str | None = None, label: str | None = None):
    """Turn huggingface_hub's exceptions into one-line kvplan errors naming the repo (``label``: as the user
    wrote it) and the remedy."""
    rev = f"@{revision}" if revision else ""
    what = label or f"hf:{repo_id}{rev}"
    try:
        yield
    except KvplanError:
        raise
    except Exception as exc:  # classified by name: the classes live in huggingface_hub (imported lazily)
        names = _names(exc)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if "GatedRepoError" in names:
            raise NotFoundError(f"{what}: gated repository — accept its licence on the model page, then set "
                                "HF_TOKEN to a token of that account (or run 'hf auth login')") from None
        if "DisabledRepoError" in names:
            raise NotFoundError(f"{what}: the repository is disabled on the Hub") from None
        if "RevisionNotFoundError" in names:
            raise NotFoundError(f"{what}: no revision {revision or 'main'!r} in the repository "
                                "(use a branch, tag or commit that exists)") from None
        if "RepositoryNotFoundError" in names:
            raise NotFoundError(f"{what}: repository not found — check the name; if it is private, set "
                                "HF_TOKEN to a token that can read it") from None
        if "LocalEntryNotFoundError" in names or "OfflineModeIsEnabled" in names:
            if offline():
                raise HubAccessError(f"{what}: not in the local Hugging Face cache and HF_HUB_OFFLINE is set — "
                                     "run once online (or unset HF_HUB_OFFLINE)") from None
            raise HubAccessError(f"{what}: cannot reach {endpoint()} and the file is not cached — check the "
                                 "network (or HF_ENDPOINT), then retry") from None
        if "EntryNotFoundError" in names:
            raise NotFoundError(f"{what}: the repository has no {filename or 'such file'}"
                                + (" — is it a GGUF repository? name a quant: hf:ORG/NAME:Q4_K_M"
                                   if filename == CONFIG_FILE else "")) from None
        if isinstance(exc, FileNotFoundError):  # HfFileSystem's own translation of a missing path
            raise NotFoundError(f"{what}: no {filename or 'such file'} in the repository") from None
        if _is_network_error(exc):
            raise HubAccessError(f"{what}: cannot reach {endpoint()} ({type(exc).__name__}) — check the network "
                                 "or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use what is cached") from None
        if "HfHubHTTPError" in names or status is not None:
            hint = " — set HF_TOKEN" if status in (401, 403) else ""
            raise HubAccessError(f"{what}: the Hub answered HTTP {status}{hint}") from None
        if "HFValidationError" in names:
            raise UsageError(f"{what}: {str(exc).splitlines()[0]}") from None
        raise


# --- repository information --------------------------------------------------------------------

@dataclass(frozen=True)
class RepoSnapshot:
    """One revision of a repository as model_info describes it."""

    repo_id: str
    commit: str
    files: tuple[str, ...]
    safetensors: dict | None = None  # {"parameters": {dtype: count}, "total": n} when the Hub reports it
    gated: object = None


def repo_snapshot(repo_id: str, revision: str | None = None, *, token=None, label: str | None = None) -> RepoSnapshot:
    """model_info of ``repo_id`` at ``revision``: the commit, the file list, the safetensors summary."""
    hub = require_hub()
    with hub_errors(repo_id, revision, label=label):
        info = hub.HfApi(token=token).model_info(repo_id, revision=revision)
    files = tuple(s.rfilename for s in info.siblings or ())
    st = info.safetensors
    summary = None
    if st is not None:
        params = dict(getattr(st, "parameters", None) or st.get("parameters") or {})
        total = getattr(st, "total", None) or st.get("total")
        if params or total:
            summary = {"parameters": params, "total": int(total or sum(params.values()))}
    if not info.sha:
        raise HubAccessError(f"hf:{repo_id}: the Hub gave no commit for revision {revision or 'main'!r}")
    return RepoSnapshot(repo_id, info.sha, files, summary, info.gated)


def download_config(repo_id: str, revision: str | None, *, token=None, label: str | None = None
                    ) -> tuple[dict, Path, str]:
    """config.json through the Hugging Face cache: (parsed config, local path, commit of the snapshot).

    ``revision`` as the user wrote it (None: ``main``), not the commit it resolves to: then
    ``hf_hub_download`` also records ``refs/<revision>`` → commit, which a later offline call
    (``HF_HUB_OFFLINE=1``) needs to find the snapshot. Asked by commit, it records no ref.
    """
    hub = require_hub()
    with hub_errors(repo_id, revision, CONFIG_FILE, label):
        path = Path(hub.hf_hub_download(repo_id, CONFIG_FILE, revision=revision, token=token))
    from kvplan.files import jsonio

    try:
        config = jsonio.loads(path.read_text(encoding="utf-8"))
    except jsonio.JsonError as exc:
        raise HubAccessError(f"hf:{repo_id}: config.json line {exc.line}: {exc.worded}") from None
    except (OSError, ValueError) as exc:
        raise HubAccessError(f"hf:{repo_id}: config.json is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HubAccessError(f"hf:{repo_id}: config.json is not a JSON object")
    return config, path, path.parent.name  # …/snapshots/<commit>/config.json


def cache_index(snapshot: RepoSnapshot, *, token=None, label: str | None = None) -> bool:
    """Put ``model.safetensors.index.json`` of a sharded repository into the Hugging Face cache.

    A few KB to a few hundred KB; with it, an offline call never answered by kvplan's own cache still
    has an exact parameter count for a single-dtype checkpoint (:func:`cached_index_params`). False
    when the repository has no index.
    """
    if SAFETENSORS_INDEX not in snapshot.files:
        return False
    hub = require_hub()
    if isinstance(hub.try_to_load_from_cache(snapshot.repo_id, SAFETENSORS_INDEX, revision=snapshot.commit), str):
        return True  # get_safetensors_metadata fetched it already: not even a HEAD request
    with hub_errors(snapshot.repo_id, snapshot.commit, SAFETENSORS_INDEX, label):
        hub.hf_hub_download(snapshot.repo_id, SAFETENSORS_INDEX, revision=snapshot.commit, token=token)
    return True


@dataclass
class ParamCount:
    """An exact parameter count and where it came from."""

    total: int
    by_dtype: dict = field(default_factory=dict)
    how: str = ""

    @property
    def dtype(self) -> str | None:
        """The dtype holding most parameters (BF16, F16, …)."""
        return max(self.by_dtype, key=self.by_dtype.get) if self.by_dtype else None


def _by_dtype_text(by_dtype: dict) -> str:
    return ", ".join(f"{d} {n:,}" for d, n in sorted(by_dtype.items(), key=lambda kv: -kv[1]))


def safetensors_params(snapshot: RepoSnapshot, *, token=None, label: str | None = None) -> ParamCount | None:
    """The exact parameter count of a safetensors repository, or None when it has no safetensors weights.

    The Hub's own summary from model_info when present (no further request), else
    ``get_safetensors_metadata``: the headers of model.safetensors or of every shard in the index,
    read by range requests (never the weights).
    """
    if snapshot.safetensors:
        by = {str(k): int(v) for k, v in snapshot.safetensors["parameters"].items()}
        total = int(snapshot.safetensors["total"])
        return ParamCount(total, by, f"safetensors metadata (the Hub's model_info summary): {total:,}"
                          + (f" ({_by_dtype_text(by)})" if by else ""))
    if not any(f.endswith(".safetensors") for f in snapshot.files):
        return None
    hub = require_hub()
    with hub_errors(snapshot.repo_id, snapshot.commit, label=label):
        try:
            meta = hub.HfApi(token=token).get_safetensors_metadata(snapshot.repo_id, revision=snapshot.commit)
        except Exception as exc:  # NotASafetensorsRepoError, SafetensorsParsingError
            if {"NotASafetensorsRepoError", "SafetensorsParsingError"} & _names(exc):
                return None
            raise
    by = {str(k): int(v) for k, v in meta.parameter_count.items()}
    total = sum(by.values())
    files = len(meta.files_metadata)
    return ParamCount(total, by, f"safetensors metadata (headers of {files} file{'s' * (files != 1)}, read by "
                                 f"get_safetensors_metadata): {total:,} ({_by_dtype_text(by)})")


def cached_index_params(repo_id: str, commit: str, config: dict) -> ParamCount | None:
    """Offline fallback: ``total_size`` of a cached model.safetensors.index.json / bytes per value of the
    config's dtype — exact when every tensor has that dtype. None when the index is not cached."""
    hub = require_hub()
    try:
        cached = hub.try_to_load_from_cache(repo_id, SAFETENSORS_INDEX, revision=commit)
    except Exception:  # noqa: BLE001 - a cache lookup only; anything odd means "not cached"
        return None
    if not isinstance(cached, str):
        return None
    try:
        from kvplan.files import jsonio

        total_size = int(jsonio.loads(Path(cached).read_text(encoding="utf-8"))["metadata"]["total_size"])
    except (OSError, ValueError, KeyError, TypeError):  # JsonError is a ValueError
        return None
    dtype_name = config.get("torch_dtype") or config.get("dtype") or (config.get("text_config") or {}).get("torch_dtype")
    dtype = _TORCH_DTYPES.get(str(dtype_name))
    if not dtype or total_size % DTYPE_BYTES[dtype]:
        return None
    total = total_size // DTYPE_BYTES[dtype]
    return ParamCount(total, {dtype: total}, f"{SAFETENSORS_INDEX} (cached) total_size {total_size:,} bytes / "
                                             f"{DTYPE_BYTES[dtype]} bytes per {dtype} value = {total:,} "
                                             "(exact if every tensor is " + dtype + ")")
