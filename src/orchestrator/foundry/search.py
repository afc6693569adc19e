"""The Foundry driver: check the inputs, open the cluster, run gepa's search, write the results.

Everything is checked before a run starts (the suite, every ``eval.json``, the Guild, the deployment,
the budget against one evaluation of the seed, the cluster). gepa is synchronous: it runs in a thread
(``trio.to_thread``), calls the adapter there (which waits on Dask) and calls the reflection model,
which hops back into this trio loop. ``OUT/foundry.json`` records the options so ``--resume OUT``
continues the same search; gepa's own state is ``OUT/gepa/``.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import trio

from orchestrator.config import load_settings
from orchestrator.foundry.adapter import (
    BenchInput,
    FoundryAdapter,
    Instance,
    RanComponentSelector,
    SeededBatchSampler,
    SeededParetoSelector,
)
from orchestrator.foundry.candidate import Candidate, GuildLayout, candidate_id, read_layout
from orchestrator.foundry.cluster import Cluster, ClusterError, Stopped
from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.inprocess import sim_env
from orchestrator.foundry.job import pack_tree
from orchestrator.foundry.reflection import ReflectionEndpoint, ReflectionModel
from orchestrator.foundry.report import new_out_dir
from orchestrator.foundry.results import (
    Lineage,
    Status,
    Summary,
    build_summary,
    write_best_guild,
    write_candidate,
    write_summary,
)
from orchestrator.foundry.runner import EVAL_FILE, SOLUTION_FILE, Benchmark, copy_benchmark, discover, load_benchmarks
from orchestrator.fsutil import atomic_write
from orchestrator.llm import timeouts_from_env
from orchestrator.vocabulary import DEFAULT_EFFORT

__all__ = ["DEFAULT_BUDGET", "FoundryError", "FoundryOptions", "FoundryStopped", "Recorded", "resumed", "run_foundry"]

OPTIONS_FILE = "foundry.json"
#: the most benchmark runs a search spends when ``--budget`` is not given
DEFAULT_BUDGET = 100
#: examples gepa shows the reflection model per proposal
MINIBATCH = 3


class FoundryError(Exception):
    """The search cannot start as asked; ``problems`` names each finding (exit code 2)."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class FoundryStopped(Exception):
    """The search stopped early (the reflection model is down); ``summary`` is what was written."""

    def __init__(self, message: str, summary: Summary, out: Path) -> None:
        self.summary = summary
        self.out = out
        super().__init__(message)


class Recorded(msgspec.Struct, kw_only=True, rename="camel"):
    """``foundry.json``: what ``--resume`` needs to continue the same search."""

    suite: str
    guild: str
    deployment: str
    only: list[str]
    budget: int
    repeats: int
    seed: int
    sim_solutions: bool
    effort: str
    run_timeout: float
    reflection_api_base: str | None
    reflection_model: str | None


@dataclass
class FoundryOptions:
    suite: Path
    guild_dir: Path
    deployment_file: Path
    env: Mapping[str, str]
    budget: int = DEFAULT_BUDGET
    repeats: int = 1
    workers: int = 1
    scheduler: str | None = None
    reflection_api_base: str | None = None
    reflection_model: str | None = None
    sim_solutions: bool = False
    out: Path | None = None
    resume: Path | None = None
    only: list[str] = field(default_factory=list)
    seed: int = 0
    effort: str = DEFAULT_EFFORT
    run_timeout: float = 1800.0
    #: how long an existing scheduler (and its first worker) may take to answer
    connect_seconds: float = 10.0
    #: with ``resume``: a ``--budget`` given again, which replaces the recorded one (only ever raised)
    resume_budget: int | None = None


def _record(options: FoundryOptions) -> Recorded:
    return Recorded(
        suite=str(options.suite),
        guild=str(options.guild_dir),
        deployment=str(options.deployment_file),
        only=list(options.only),
        budget=options.budget,
        repeats=options.repeats,
        seed=options.seed,
        sim_solutions=options.sim_solutions,
        effort=options.effort,
        run_timeout=options.run_timeout,
        reflection_api_base=options.reflection_api_base,
        reflection_model=options.reflection_model,
    )


def resumed(options: FoundryOptions) -> FoundryOptions:
    """``options`` with the search's own settings read back from ``RESUME/foundry.json``."""
    assert options.resume is not None
    path = options.resume / OPTIONS_FILE
    try:
        recorded = msgspec.json.decode(path.read_bytes(), type=Recorded)
    except FileNotFoundError:
        raise FoundryError(
            f"--resume {options.resume}: no {OPTIONS_FILE} there (not a Foundry results folder)"
        ) from None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FoundryError(f"{path}: cannot be read: {exc}") from None
    budget = recorded.budget if options.resume_budget is None else options.resume_budget
    if budget < recorded.budget:
        raise FoundryError(
            f"--budget {budget} is below the resumed search's own budget of {recorded.budget}: a resumed "
            "search can be given more runs, never fewer (leave --budget out to keep it)"
        )
    return FoundryOptions(
        suite=Path(recorded.suite),
        guild_dir=Path(recorded.guild),
        deployment_file=Path(recorded.deployment),
        env=options.env,
        budget=budget,
        repeats=recorded.repeats,
        workers=options.workers,
        scheduler=options.scheduler,
        reflection_api_base=options.reflection_api_base or recorded.reflection_api_base,
        reflection_model=options.reflection_model or recorded.reflection_model,
        sim_solutions=recorded.sim_solutions,
        out=options.resume,
        resume=options.resume,
        only=recorded.only,
        seed=recorded.seed,
        effort=recorded.effort,
        run_timeout=recorded.run_timeout,
        connect_seconds=options.connect_seconds,
        resume_budget=budget,
    )


def _bench_input(bench: Benchmark) -> BenchInput:
    with tempfile.TemporaryDirectory(prefix=f"foundry-pack-{bench.name}-") as tmp:
        copy_benchmark(bench.path, Path(tmp))
        files = pack_tree(Path(tmp))
    script = (bench.path / SOLUTION_FILE).read_bytes() if bench.script is not None else None
    return BenchInput(bench.name, files, (bench.path / EVAL_FILE).read_bytes(), script)


def _endpoint(options: FoundryOptions, benchmarks: list[Benchmark]) -> ReflectionEndpoint:
    """Load the Guild and deployment (``ConfigError``) and resolve the reflection model's endpoint."""
    env = dict(options.env)
    script = next((b.script for b in benchmarks if b.script is not None), None)
    if script is not None:
        env = sim_env(env, script, "http://127.0.0.1:9/v1")  # each sim run's endpoint is only known per run
    settings = load_settings(options.guild_dir, options.deployment_file, env)
    model = settings.deployment.model
    if options.sim_solutions and options.reflection_api_base is None:
        raise FoundryError(
            "--sim-solutions scripts the runs' model only: name the reflection model with --reflection-api-base URL"
        )
    return ReflectionEndpoint(
        api_base=options.reflection_api_base or model.api_base,
        model=options.reflection_model or (None if options.sim_solutions else model.name) or "default",
        api_key=settings.api_key,
        temperature=model.generation.temperature,
    )


class _FileLogger:
    """gepa's log lines go to ``OUT/gepa/log.txt`` (gepa's own logger would tee this process's stdout)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path

    def log(self, message: str, *args: Any, **kwargs: Any) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(f"{message}\n")


class _Watcher:
    """gepa callbacks: lineage for the running summary, metric calls used (the budget's), the best mean so far."""

    def __init__(self, lineage: Lineage, on_change: Callable[[], None]) -> None:
        self.lineage = lineage
        self.metric_calls = 0
        self.best = 0.0
        self.on_change = on_change
        #: called (from gepa's thread) after each full evaluation of a candidate
        self.on_candidate: Callable[[], None] = lambda: None

    def on_budget_updated(self, event: Mapping[str, Any]) -> None:
        self.metric_calls = int(event["metric_calls_used"])
        self.on_change()

    def on_run(self) -> None:
        """A run finished: gepa counts the seed's only once they all did, so count each one meanwhile."""
        self.metric_calls += 1
        self.on_change()

    def on_valset_evaluated(self, event: Mapping[str, Any]) -> None:
        index = int(event["candidate_idx"])
        parents = [p for p in event.get("parent_ids") or [] if p is not None]
        while len(self.lineage.candidates) <= index:
            self.lineage.candidates.append({})
            self.lineage.parents.append(None)
        self.lineage.candidates[index] = dict(event["candidate"])
        self.lineage.parents[index] = int(parents[0]) if parents else None
        self.best = max(self.best, float(event["average_score"]))
        self.on_candidate()
        self.on_change()


def _restore(gepa_dir: Path, seed: Candidate) -> tuple[Lineage, int, float]:
    """The lineage, metric calls and best mean of an interrupted search (gepa's saved state), or the seed's."""
    if not (gepa_dir / "gepa_state.bin").is_file():
        return Lineage([seed], [None]), 0, 0.0
    from gepa.core.state import GEPAState

    state = GEPAState.load(str(gepa_dir))
    parents = [next((p for p in ps if p is not None), None) for ps in state.parent_program_for_candidate]
    best = max((float(s) for s in state.program_full_scores_val_set), default=0.0)
    return Lineage([dict(c) for c in state.program_candidates], parents), int(state.total_num_evals), best


@dataclass
class _Search:
    options: FoundryOptions
    out: Path
    layout: GuildLayout
    names: list[str]
    cache: EvalCache
    adapter: FoundryAdapter
    watcher: _Watcher
    #: gepa's thread and the trio thread (on Ctrl-C) both write the results
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self, status: Status, message: str | None = None) -> Summary:
        lineage = self.watcher.lineage
        problems = {}
        for candidate in lineage.candidates:
            if candidate:
                problems[candidate_id(candidate)] = self.adapter.problems_of(candidate)
        known = Lineage(
            [c for c in lineage.candidates if c],
            [p for c, p in zip(lineage.candidates, lineage.parents, strict=True) if c],
        )
        return build_summary(
            lineage=known,
            benchmarks=self.names,
            repeats=self.options.repeats,
            cache=self.cache,
            problems=problems,
            status=status,
            head={
                "suitePath": str(self.options.suite),
                "guildPath": str(self.options.guild_dir),
                "budget": self.options.budget,
                "seed": self.options.seed,
            },
            metric_calls=self.watcher.metric_calls,
            message=message,
        )

    def write(self, status: Status, message: str | None = None) -> Summary:
        with self.lock:
            return self._write(status, message)

    def _write(self, status: Status, message: str | None) -> Summary:
        summary = self.summary(status, message)
        for candidate in self.watcher.lineage.candidates:
            if candidate:
                write_candidate(self.out, candidate, self.layout.seed, self.adapter.problems_of(candidate))
        write_best_guild(self.out, self.adapter.guild_dir(summary.best_candidate))
        write_summary(self.out, summary)
        return summary


def _optimize(search: _Search, reflection: ReflectionModel, instances: list[Instance]) -> int:
    """Run gepa's search; the metric calls it counted in all (a resumed search's included)."""
    import gepa

    options = search.options
    result = gepa.optimize(
        seed_candidate=dict(search.layout.seed),
        trainset=instances,
        valset=instances,
        adapter=search.adapter,
        reflection_lm=reflection,
        candidate_selection_strategy=SeededParetoSelector(options.seed),
        batch_sampler=SeededBatchSampler(options.seed, MINIBATCH),
        module_selector=RanComponentSelector(search.layout),
        max_metric_calls=options.budget,
        run_dir=str(search.out / "gepa"),
        logger=_FileLogger(search.out / "gepa" / "log.txt"),
        callbacks=[search.watcher],
        stop_callbacks=[lambda _state: reflection.failure is not None or search.adapter.cluster.stopping],
        track_best_outputs=False,
        display_progress_bar=False,
        seed=options.seed,
        raise_on_exception=True,
    )
    return int(result.total_metric_calls or 0)


async def run_foundry(
    options: FoundryOptions, *, on_progress: Callable[[int, float], None] = lambda _done, _best: None
) -> tuple[Summary, Path]:
    """Run (or resume) the search; the final summary and the results folder.

    Raises ``FoundryError`` / ``SuiteError`` / ``ConfigError`` before anything runs, ``FoundryStopped``
    when the reflection model is down (a resumable state is left), ``KeyboardInterrupt`` after Ctrl-C
    (the same).
    """
    if options.resume is not None:
        options = resumed(options)
    benchmarks = load_benchmarks(discover(options.suite, options.only), sim_solutions=options.sim_solutions)
    endpoint = _endpoint(options, benchmarks)
    layout = read_layout(options.guild_dir)
    seed_runs = len(benchmarks) * options.repeats
    if options.budget < seed_runs:
        raise FoundryError(
            f"--budget {options.budget} is below one evaluation of the seed: {len(benchmarks)} benchmark(s) × "
            f"{options.repeats} repeat(s) = {seed_runs} runs (give at least {seed_runs}, better {seed_runs * 3})"
        )
    if options.resume is None and options.out is not None and (options.out / OPTIONS_FILE).exists():
        raise FoundryError(
            f"--out {options.out} already holds a Foundry search: continue it with --resume, or pick another"
        )
    out = options.resume or new_out_dir(options.suite, options.out)
    atomic_write(out / OPTIONS_FILE, msgspec.json.format(msgspec.json.encode(_record(options)), indent=2))
    inputs = {b.name: _bench_input(b) for b in benchmarks}
    deployment = options.deployment_file.read_bytes()
    try:
        cluster = await trio.to_thread.run_sync(
            lambda: Cluster.open(
                workers=options.workers, scheduler=options.scheduler, connect_seconds=options.connect_seconds
            )
        )
    except ClusterError as exc:
        raise FoundryError(str(exc)) from None
    cache = EvalCache(out)
    lineage, metric_calls, best = _restore(out / "gepa", layout.seed)
    token = trio.lowlevel.current_trio_token()

    def changed() -> None:  # from gepa's thread
        trio.from_thread.run_sync(on_progress, watcher.metric_calls, watcher.best, trio_token=token)

    watcher = _Watcher(lineage, changed)
    watcher.metric_calls, watcher.best = metric_calls, best
    adapter = FoundryAdapter(
        layout=layout,
        benchmarks=inputs,
        deployment=deployment,
        effort=options.effort,
        run_timeout=options.run_timeout,
        cache=cache,
        cluster=cluster,
        candidates_dir=out / "candidates",
        on_run=watcher.on_run,
    )
    search = _Search(options, out, layout, [b.name for b in benchmarks], cache, adapter, watcher)
    watcher.on_candidate = lambda: search.write("running")
    reflection = ReflectionModel(endpoint, out / "reflections", timeouts_from_env(options.env))
    instances = [Instance(b.name, r) for b in benchmarks for r in range(options.repeats)]
    adapter.problems_of(layout.seed)
    search.write("running")
    try:
        watcher.metric_calls = await trio.to_thread.run_sync(
            _optimize, search, reflection, instances, abandon_on_cancel=True
        )
    except (KeyboardInterrupt, trio.Cancelled, Stopped):
        cluster.stop()
        search.write("interrupted", f"interrupted; continue with --resume {out}")
        raise
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(cluster.close, abandon_on_cancel=True)
    if reflection.failure is not None:
        message = f"stopped: {reflection.failure}; continue with --resume {out}"
        raise FoundryStopped(message, search.write("stopped", message), out)
    return search.write("finished"), out
