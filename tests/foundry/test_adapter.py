"""The gepa adapter: invalid candidates are never run, reflection sees only the roles that ran, and the
sampling strategies are functions of the seed and the iteration."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gepa.core.adapter import EvaluationBatch
from tests.helpers import write_guild

from orchestrator.foundry.adapter import (
    FoundryAdapter,
    Instance,
    RanComponentSelector,
    SeededBatchSampler,
    Trajectory,
)
from orchestrator.foundry.candidate import candidate_id, read_layout
from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.job import RunOutcome
from orchestrator.foundry.trace import RoleTrace


class NoCluster:
    """A cluster that must not be used."""

    stopping = False

    def run(self, jobs: Any, on_done: Any) -> None:
        raise AssertionError("nothing should run")


def _adapter(tmp_path: Path) -> FoundryAdapter:
    guild = write_guild(tmp_path / "seed", {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]})
    return FoundryAdapter(
        layout=read_layout(guild),
        benchmarks={},
        deployment=b"{}",
        effort="standard",
        run_timeout=60,
        cache=EvalCache(tmp_path / "out"),
        cluster=NoCluster(),  # type: ignore[arg-type]
        candidates_dir=tmp_path / "out" / "candidates",
    )


def test_a_candidate_that_does_not_load_scores_zero_with_the_problems_and_never_runs(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path)
    candidate = dict(adapter.layout.seed) | {"prompt:prompts/coder.md": ""}
    batch = adapter.evaluate([Instance("b", 0), Instance("b", 1)], candidate, capture_traces=True)
    assert batch.scores == [0.0, 0.0]
    assert batch.outputs[0].error_kind == "invalid_guild"
    dataset = adapter.make_reflective_dataset(candidate, batch, ["prompt:prompts/coder.md"])
    assert "the text is blank" in dataset["prompt:prompts/coder.md"][0]["Feedback"]


def test_cached_runs_are_not_run_again(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path)
    seed = adapter.layout.seed
    adapter.cache.put(candidate_id(seed), "b", 0, RunOutcome(status="pass"))
    assert adapter.evaluate([Instance("b", 0)], dict(seed)).scores == [1.0]


def _trajectory(*roles: str, status: str = "fail") -> Trajectory:
    traces = [RoleTrace(role=r, task=f"task of {r}", lines=[f"{r} did things"]) for r in roles]
    outcome = RunOutcome(status=status, roles=traces, reasons=["stdout does not contain 'OK'"], exit_code=1)  # type: ignore[arg-type]
    return Trajectory(Instance("b", 0), outcome)


def test_each_component_sees_only_the_roles_that_use_it(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path)
    batch = EvaluationBatch(outputs=[], scores=[0.0], trajectories=[_trajectory("lead")])
    components = ["prompt:prompts/lead.md", "prompt:prompts/coder.md", "tool:finish", "tool:run_shell"]
    dataset = adapter.make_reflective_dataset(dict(adapter.layout.seed), batch, components)
    (lead,) = dataset["prompt:prompts/lead.md"]
    assert lead["Inputs"] == {"benchmark": "b", "role": "lead", "task": "task of lead"}
    assert lead["Generated Outputs"] == "lead did things"
    assert "Validation command exit code: 1" in lead["Feedback"] and "'OK'" in lead["Feedback"]
    assert dataset["prompt:prompts/coder.md"] == []  # the coder did not run
    assert len(dataset["tool:finish"]) == 1 and dataset["tool:run_shell"] == []


def test_the_selector_takes_turns_over_what_ran_prompts_first(tmp_path: Path) -> None:
    selector = RanComponentSelector(_adapter(tmp_path).layout)
    trajectories = [_trajectory("coder"), _trajectory("lead", "coder")]
    assert selector.relevant(trajectories) == [
        "prompt:prompts/coder.md",
        "prompt:prompts/lead.md",
        "tool:run_shell",
        "tool:finish",
        "tool:agent",
    ]
    picks = [selector(SimpleNamespace(i=i), trajectories, [], 0, {}) for i in range(6)]
    assert [p[0] for p in picks][:3] == ["prompt:prompts/coder.md", "prompt:prompts/lead.md", "tool:run_shell"]
    assert picks[5] == picks[0]
    assert selector.relevant([_trajectory()]) == ["prompt:prompts/lead.md", "prompt:prompts/coder.md"]


def test_minibatches_depend_on_the_seed_and_iteration_only() -> None:
    loader = SimpleNamespace(all_ids=lambda: list(range(8)))

    def batches(seed: int) -> list[list[int]]:
        sampler = SeededBatchSampler(seed, 3)
        return [sampler.next_minibatch_ids(loader, SimpleNamespace(i=i)) for i in range(5)]

    assert batches(1) == batches(1)
    assert batches(1) != batches(2)
    assert all(len(b) == 3 for b in batches(1))
    assert SeededBatchSampler(1, 3).next_minibatch_ids(loader, SimpleNamespace(i=3)) == batches(1)[3]
