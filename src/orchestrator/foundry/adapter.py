"""The gepa adapter: a candidate's benchmark runs on the cluster, and what reflection sees of them.

gepa's data set is every (benchmark, repeat) pair, so one gepa metric call is one benchmark run and
``--budget`` counts runs. ``evaluate`` materializes the candidate's Guild (a candidate that does not
load is scored 0, with the loader's problems as its feedback, and never run), takes finished runs
from the durable cache, submits the rest to the cluster and waits for them. ``make_reflective_dataset``
gives each component the traces of the roles that use it: a role prompt sees its role's turns, a tool
description sees the turns of the roles that list the tool; a role that did not run adds nothing.

The strategies passed to gepa are stateless functions of ``--seed`` and gepa's iteration number, so a
resumed search samples what the interrupted one would have.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gepa.core.adapter import EvaluationBatch
from gepa.strategies.candidate_selector import ParetoCandidateSelector

from orchestrator.foundry.candidate import PROMPT_PREFIX, GuildLayout, candidate_id, materialize
from orchestrator.foundry.cluster import Cluster
from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.job import RunJob, RunOutcome, encode_job, pack_tree
from orchestrator.foundry.trace import RoleTrace

__all__ = [
    "BenchInput",
    "FoundryAdapter",
    "Instance",
    "RanComponentSelector",
    "SeededBatchSampler",
    "SeededParetoSelector",
    "Trajectory",
]


@dataclass(frozen=True)
class Instance:
    """One gepa data instance: a benchmark and the index of one of its repeats."""

    benchmark: str
    repeat: int


@dataclass(frozen=True)
class BenchInput:
    """What a worker needs of one benchmark (its files already without the judge's)."""

    name: str
    files: dict[str, bytes]
    eval_json: bytes
    sim_script: bytes | None


@dataclass
class Trajectory:
    instance: Instance
    outcome: RunOutcome


def _feedback(outcome: RunOutcome) -> str:
    lines = [f"Outcome: {outcome.status}"]
    if outcome.error_kind:
        lines.append(f"Error kind: {outcome.error_kind}")
    lines += [f"Reason: {reason}" for reason in outcome.reasons]
    if outcome.exit_code is not None:
        lines.append(f"Validation command exit code: {outcome.exit_code}")
    if outcome.output_tail:
        lines.append(f"Validation output (tail):\n{outcome.output_tail}")
    return "\n".join(lines)


def _turns(trace: RoleTrace) -> str:
    return "\n".join(trace.lines) or "(no turn recorded)"


class FoundryAdapter:
    """gepa's ``GEPAAdapter`` for a Guild; ``evaluate`` is called from gepa's thread."""

    propose_new_texts = None  # gepa's default proposer: the answer's fenced block is the new text

    def __init__(
        self,
        *,
        layout: GuildLayout,
        benchmarks: Mapping[str, BenchInput],
        deployment: bytes,
        effort: str,
        run_timeout: float,
        cache: EvalCache,
        cluster: Cluster,
        candidates_dir: Path,
        on_run: Callable[[], None] = lambda: None,
    ) -> None:
        self.layout = layout
        self.benchmarks = benchmarks
        self.deployment = deployment
        self.effort = effort
        self.run_timeout = run_timeout
        self.cache = cache
        self.cluster = cluster
        self.candidates_dir = candidates_dir
        self.on_run = on_run
        self._problems: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def guild_dir(self, cid: str) -> Path:
        return self.candidates_dir / cid / "guild"

    def problems_of(self, candidate: Mapping[str, str]) -> list[str]:
        """Materialize the candidate's Guild once (``candidates/<id>/guild``); the loader's problems."""
        cid = candidate_id(candidate)
        if cid not in self._problems:
            self._problems[cid] = materialize(self.layout, candidate, self.guild_dir(cid))
        return self._problems[cid]

    def _job(self, cid: str, instance: Instance, guild_files: dict[str, bytes]) -> bytes:
        bench = self.benchmarks[instance.benchmark]
        return encode_job(
            RunJob(
                candidate=cid,
                benchmark=bench.name,
                repeat=instance.repeat,
                guild_files=guild_files,
                bench_files=bench.files,
                eval_json=bench.eval_json,
                deployment=self.deployment,
                sim_script=bench.sim_script,
                effort=self.effort,
                run_timeout=self.run_timeout,
            )
        )

    def outcomes(self, candidate: Mapping[str, str], batch: Sequence[Instance]) -> list[RunOutcome]:
        """Every instance's outcome: from the cache, else run on the cluster (and then cached)."""
        cid = candidate_id(candidate)
        problems = self.problems_of(candidate)
        if problems:
            invalid = RunOutcome(status="error", error_kind="invalid_guild", reasons=list(problems))
            return [invalid for _ in batch]
        missing = sorted({i for i in batch if self.cache.get(cid, i.benchmark, i.repeat) is None}, key=_order)
        if missing:
            guild_files = pack_tree(self.guild_dir(cid))
            names = {f"{cid}-{i.benchmark}-{i.repeat}": i for i in missing}

            def done(name: str, outcome: RunOutcome) -> None:
                instance = names[name]
                with self._lock:
                    self.cache.put(cid, instance.benchmark, instance.repeat, outcome)
                self.on_run()

            self.cluster.run([(name, self._job(cid, i, guild_files)) for name, i in names.items()], done)
        found = [self.cache.get(cid, i.benchmark, i.repeat) for i in batch]
        return [o if o is not None else RunOutcome(status="error", reasons=["no outcome"]) for o in found]

    def evaluate(
        self, batch: list[Instance], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[Trajectory, RunOutcome]:
        outcomes = self.outcomes(candidate, batch)
        trajectories = [Trajectory(i, o) for i, o in zip(batch, outcomes, strict=True)] if capture_traces else None
        return EvaluationBatch(outputs=outcomes, scores=[o.score for o in outcomes], trajectories=trajectories)

    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: EvaluationBatch[Trajectory, RunOutcome],
        components_to_update: list[str],
    ) -> dict[str, list[dict[str, Any]]]:
        dataset: dict[str, list[dict[str, Any]]] = {}
        for component in components_to_update:
            records: list[dict[str, Any]] = []
            for trajectory in eval_batch.trajectories or []:
                records.extend(self._records(component, trajectory))
            dataset[component] = records
        return dataset

    def _records(self, component: str, trajectory: Trajectory) -> list[dict[str, Any]]:
        outcome = trajectory.outcome
        bench = trajectory.instance.benchmark
        if outcome.error_kind == "invalid_guild" or not outcome.roles:
            return [
                {"Inputs": {"benchmark": bench}, "Generated Outputs": "(nothing ran)", "Feedback": _feedback(outcome)}
            ]
        records = []
        for trace in outcome.roles:
            if component not in self.layout.role_components.get(trace.role, []):
                continue
            records.append(
                {
                    "Inputs": {"benchmark": bench, "role": trace.role, "task": trace.task},
                    "Generated Outputs": _turns(trace),
                    "Feedback": _feedback(outcome),
                }
            )
        return records


def _order(instance: Instance) -> tuple[str, int]:
    return instance.benchmark, instance.repeat


class RanComponentSelector:
    """One component per proposal, round robin over those of the roles that ran (prompts first).

    When nothing ran (a Guild that did not load, a run that never started) every role prompt is a
    choice. The turn is gepa's iteration number, so a resumed search picks as the first one would.
    """

    def __init__(self, layout: GuildLayout) -> None:
        self.layout = layout

    def relevant(self, trajectories: Sequence[Trajectory]) -> list[str]:
        roles: list[str] = []
        for trajectory in trajectories:
            for trace in trajectory.outcome.roles:
                if trace.role in self.layout.role_components and trace.role not in roles:
                    roles.append(trace.role)
        keys = [k for role in roles for k in self.layout.role_components[role]]
        if not keys:
            keys = [components[0] for components in self.layout.role_components.values()]
        unique = list(dict.fromkeys(keys))
        return [k for k in unique if k.startswith(PROMPT_PREFIX)] + [
            k for k in unique if not k.startswith(PROMPT_PREFIX)
        ]

    def __call__(
        self,
        state: Any,
        trajectories: list[Trajectory],
        subsample_scores: list[float],
        candidate_idx: int,
        candidate: dict[str, str],
    ) -> list[str]:
        keys = self.relevant(trajectories)
        return [keys[max(int(state.i), 0) % len(keys)]]


class SeededBatchSampler:
    """Minibatches from a per-epoch shuffle seeded by ``--seed``: a function of the iteration alone."""

    def __init__(self, seed: int, size: int) -> None:
        self.seed = seed
        self.size = size

    def next_minibatch_ids(self, loader: Any, state: Any) -> list[Any]:
        ids = list(loader.all_ids())
        size = min(self.size, len(ids))
        start = max(int(state.i), 0) * size
        epoch, offset = divmod(start, len(ids))
        order = list(ids)
        random.Random(f"{self.seed}:{epoch}").shuffle(order)
        return [order[(offset + j) % len(order)] for j in range(size)]


class SeededParetoSelector:
    """gepa's Pareto candidate selection, its random choice seeded by ``--seed`` and the iteration."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def select_candidate_idx(self, state: Any) -> int:
        rng = random.Random(f"{self.seed}:{state.i}")
        return ParetoCandidateSelector(rng=rng).select_candidate_idx(state)
