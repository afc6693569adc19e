"""The service read-path benchmark (``run.py`` is its entry point; see bench/README.md).

Its modules: ``synthetic`` (the synthetic run log), ``children`` (the ``serve`` and ``sim-model``
processes), ``measure`` (CPU time, CPU pressure, timed requests), ``read_path`` (section (a)),
``subscribers`` (section (b)). Other benches import them as ``log_window.<module>`` with ``bench/``
on ``sys.path``.
"""
