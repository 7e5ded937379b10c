"""Every option the CLI declares, in one package (imported module by module, so a command pulls in only what it uses).

- :mod:`~kvplan.cli.options.declarations`: the single-valued options shared by the commands (``--device``,
  ``--ctx``, the cache knobs …) and the parsers that name the option in their errors;
- :mod:`~kvplan.cli.options.formats`: the one output-format enum and the one chooser (``--format`` / ``-o``);
- :mod:`~kvplan.cli.options.groups`: the option-group mechanism (a set of options spliced into a command);
- :mod:`~kvplan.cli.options.knob_groups`: the groups of knobs (cache, policy, runtime) and turning them into
  :class:`~kvplan.plan.Knobs`;
- :mod:`~kvplan.cli.options.policy`, :mod:`~kvplan.cli.options.runtime`: the KV-policy and runtime options;
- :mod:`~kvplan.cli.options.planning`: repeatable devices and models, ``--output`` (sweep, compare, fit, plot);
- :mod:`~kvplan.cli.options.fieldnames`: the flag table, field → flag, and a field error worded with flags;
- :mod:`~kvplan.cli.options.once`: a single-valued option given twice is an error.
"""
