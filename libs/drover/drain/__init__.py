"""Node drains, Nomad's model: the ``migrate`` block's defaults
(:mod:`.migrate`) and a drain strategy's deadline rule (:mod:`.strategy`).
Pure; shared by the state service, the drainer, the worker and the sim."""
