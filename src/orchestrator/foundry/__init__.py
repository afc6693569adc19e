"""Benchmarks and the suite runner (``orchestrator bench``).

A benchmark is a folder: the starting files, a ``README.md``, the judge's ``eval.json`` and, for runs
without a real model, a scripted ``sim-solution.json``. See ``docs/benchmarks.md``.

Modules: ``evalspec`` (``eval.json`` checks), ``validate`` (the deterministic verdict), ``runner`` (the
suite), ``inprocess`` / ``remote`` (where a task runs), ``report`` (``summary.json`` and the table),
``progress`` (the stderr line), ``compare`` (Guilds compared over repeats), ``cli`` (the command).

The Foundry (``orchestrator foundry``, ``docs/foundry.md``): ``search`` (the driver), ``adapter`` (gepa's
adapter), ``candidate``, ``job`` (one run as a Dask task), ``cluster``, ``evalcache``, ``reflection``,
``trace``, ``stats``, ``results``, ``foundrycli``.
"""
