"""The `drover` command (click). Where is it:

- the entry point and the command groups: :mod:`.main`; options given
  before the subcommand: :mod:`.global_options`;
- how a command is declared: :mod:`.client` (``about`` for a command about
  one object, ``lister`` for a listing, ``client_options`` handing it one
  ``opts``), how it calls (``run``, ``unary``, ``list_allocations``) and how
  a failure becomes one line (``CommandFailed``, ``describe``);
- every output shape (table, list, ``Key = Value`` detail, watch line, JSON,
  short ids, times, yes/no): :mod:`.output`;
- id prefixes and a call about one object: :mod:`.prefix`;
- live views (``--watch``/``--monitor``): :mod:`.watch`; `job run`'s monitor:
  :mod:`.monitor`; a drain's: :mod:`.node_drain`;
- job specs read from files: :mod:`drover.jobspec.read`;
- the commands, one module per noun: :mod:`.jobs`, :mod:`.job_versions`,
  :mod:`.deployments`, :mod:`.evals`, :mod:`.nodes` (and allocations),
  :mod:`.broker`, :mod:`.operator`, :mod:`.acl`, :mod:`.system`; the servers,
  worker and simulated nodes: :mod:`.serve`, :mod:`.worker`, :mod:`.dev`,
  :mod:`.drill`.
"""
