"""Readers that turn another tool's model description into a kvplan model profile.

Every file reader lives here, apart from the engine (pvlib's ``iotools`` idea): ``hf``
reads a Hugging Face ``config.json``, ``gguf`` a GGUF file's header. Both produce an
:class:`~kvplan.importers.common.ImportedProfile`, whose YAML text is validated as a
:class:`~kvplan.profiles.spec.Model` before anyone sees it.
"""
