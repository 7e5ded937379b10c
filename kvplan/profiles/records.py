"""Validated profiles as plain immutable records, so that a cached profile needs no pydantic.

A record is built only from data the pydantic models validated (see :mod:`kvplan.profiles.cache`);
it offers the same attributes and derived methods as :class:`~kvplan.profiles.spec.Device` and
:class:`~kvplan.profiles.spec.Model`, plus ``model_copy(update=…)`` and ``model_dump()``.
"""

from __future__ import annotations

import json

from kvplan.profiles.methods import ModelMethods


class _Record:
    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", dict(data))

    def __getattr__(self, name: str):
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other):
        if isinstance(other, _Record):
            return type(other) is type(self) and other._data == self._data
        if hasattr(other, "model_dump"):  # the pydantic object this record was made from
            return other.model_dump(mode="json") == self.model_dump()
        return NotImplemented

    def __hash__(self):
        return hash(json.dumps(self._data, sort_keys=True, default=str))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self._data.items() if k != "sources")
        return f"{type(self).__name__}({fields})"

    def model_copy(self, update: dict | None = None):
        return type(self)({**self._data, **(update or {})})

    def model_dump(self) -> dict:
        return {k: (v.model_dump() if isinstance(v, _Record) else v) for k, v in self._data.items()}


class DeviceRecord(_Record):
    __slots__ = ()
    # Device fields added after records were first cached: a record without them reads the pydantic default.
    DEFAULTS = {"compute_efficiency": 1.0, "decode_latency": 0.0, "gpu_working_set": None, "gpu_memory": None,
                "gpu_memory_bandwidth": None, "app_memory_limit": None, "app_memory_limit_increased": None}

    def __init__(self, data: dict):
        super().__init__({**self.DEFAULTS, **data})


class MlaRecord(_Record):
    __slots__ = ()


class StateRecord(_Record):
    __slots__ = ()


class EncoderRecord(_Record):
    __slots__ = ()


class AudioEncoderRecord(_Record):
    __slots__ = ()


class ModelRecord(_Record, ModelMethods):
    __slots__ = ()
    # Model fields added after records were first cached: a record without them reads the pydantic default.
    DEFAULTS = {"state": None, "shared_kv_layers": 0, "hidden_size_per_layer_input": None,
                "vocab_size_per_layer_input": None, "encoder": None, "global_head_dim": None,
                "mtp_layers": 0, "mtp_weights": None, "audio_encoder": None}

    def __init__(self, data: dict):
        mla = data.get("mla")
        if isinstance(mla, dict):
            data = {**data, "mla": MlaRecord(mla)}
        state = data.get("state")
        if isinstance(state, dict):
            data = {**data, "state": StateRecord(state)}
        encoder = data.get("encoder")
        if isinstance(encoder, dict):
            data = {**data, "encoder": EncoderRecord(encoder)}
        audio = data.get("audio_encoder")
        if isinstance(audio, dict):
            data = {**data, "audio_encoder": AudioEncoderRecord(audio)}
        super().__init__({**self.DEFAULTS, **data})


RECORDS = {"device": DeviceRecord, "model": ModelRecord}
