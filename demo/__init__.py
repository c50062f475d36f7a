"""obs.demo: seeded generators of the runs `obs demo`, the tests and the bench use.

``obs.demo.rollouts`` writes an IFEval+GRPO run's iteration dumps,
``obs.demo.agent`` a multi-turn agent's run (rollouts, eval logs, console
log) and ``obs.demo.histories`` tracker exports with planted patterns. The
same seed gives the same bytes. Nothing here is used to land real data: the
ingest package never imports it.
"""
