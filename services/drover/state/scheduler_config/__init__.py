"""The scheduler config family: the cluster's one SchedulerConfig.

Read: GetSchedulerConfig (a row of :data:`drover.state.core.query_specs.QUERIES`,
the defaults until one is written). Written: SetSchedulerConfig
(:mod:`.rpcs`, planned by :mod:`.core.config`: a check-and-set on
``cas_index``). Its ``pause_eval_broker`` is what DeleteEvaluations checks
(:func:`drover.state.core.rules.broker_paused`).
"""
