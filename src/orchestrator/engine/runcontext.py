"""The narrow view of one run that the engine's lower layers work through.

``RunContext`` holds what the turn limits (``limits.py``), the tool-call layer (``toolcalls.py``) and the
handler interludes (``interludes.py``) need of a run — its settings, workspace, state, log, redactor,
the registry of live role instances, the checkpoint, the budget maths, the human backend and the
operator's request queue — and nothing that drives it. The ``Run`` (``run.py``) owns one and is the
only thing that runs a role; a lower layer that needs a role run gets an instruction back to the role
loop (``toolcalls.Delegate``) or a typed callable (``interludes.RunRole``), never the ``Run``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trio

from orchestrator.config import Settings
from orchestrator.config.secrets import Redactor
from orchestrator.conversation import Message
from orchestrator.engine import events as ev
from orchestrator.engine.checkpoint import Checkpointer
from orchestrator.engine.context import effective_budget
from orchestrator.engine.effort import effort_directive, join_directive
from orchestrator.engine.human import HumanBackend
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.state import RoleFrame, RunState
from orchestrator.llm import FunctionTool
from orchestrator.runlog.writer import RunLog

__all__ = ["WRITE_TOOLS", "LiveRole", "RunContext"]

#: A role declaring any of these can change the workspace (``write_plan`` and ``edit_context`` cannot).
WRITE_TOOLS = frozenset({"write_file", "run_shell", "typecheck", "test"})


@dataclass
class LiveRole:
    """A role instance that is running or suspended: its frame and the cancel scope it runs in."""

    frame: RoleFrame
    scope: trio.CancelScope


class RunContext:
    """One run's settings, state, log, live-role registry, checkpoint and budget maths.

    Mutable run-wide bookkeeping lives here too, each field written by one layer and read by another:
    ``aborted`` (plan modifications), ``decisions`` (``trigger_interrupt`` → the loop check),
    ``checkpoint_suppressed`` (interludes) and ``queue_tracked`` (the host).
    """

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Path,
        state: RunState,
        log: RunLog,
        redactor: Redactor,
        interrupts: InterruptQueue,
        human: HumanBackend | None,
        checkpointer: Checkpointer | None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.state = state
        self.log = log
        #: scrubs tool results (toolcalls.py) and endpoint errors (run.py)
        self.redactor = redactor
        self.interrupts = interrupts
        self.human = human
        self._checkpointer = checkpointer
        #: instance id → live role; an entry exists exactly while ``Run.run_role`` runs that frame
        self.registry: dict[str, LiveRole] = {}
        #: instance ids a plan modification cut (a frame not yet registered is cut as it registers)
        self.aborted: set[str] = set()
        #: handler instance id → (action, reason) recorded by ``trigger_interrupt``
        self.decisions: dict[str, tuple[str, str]] = {}
        #: > 0 while a handler interlude is on the stack: its effects land in the next write.
        self.checkpoint_suppressed = 0
        #: Set by the host for queue-dispatched runs: an ``ask_human`` before any writing role started
        #: parks the run (``needs_clarification``) instead of waiting. Never persisted: a resumed run waits.
        self.queue_tracked = False
        guild = settings.guild
        self._role_tools: dict[str, list[FunctionTool]] = {
            name: [
                FunctionTool(name=t, description=guild.tools[t].description, parameters=guild.tools[t].parameters)
                for t in role.tools
                if t in guild.tools
            ]
            for name, role in guild.roles.items()
        }

    def role_tools(self, role: str) -> list[FunctionTool]:
        """The tool schemas a role's requests carry."""
        return self._role_tools.get(role, [])

    @property
    def budget(self) -> int:
        """The effective context budget: ``min(contextWindow − maxTokens, learnedCeiling)``."""
        model = self.settings.deployment.model
        return effective_budget(model.context_window or 0, model.generation.max_tokens, self.state.learned_ceiling)

    def checkpoint(self) -> None:
        """Write the run's resumable state now (no-op without a checkpointer or inside an interlude)."""
        if self._checkpointer is not None and not self.checkpoint_suppressed:
            self._checkpointer.write(self.state)

    def cancelled(self, frame: RoleFrame) -> bool:
        """True once this frame's scope was cancelled (a plan modification): stop before new work."""
        if frame.instance_id in self.aborted:
            return True
        live = self.registry.get(frame.instance_id)
        return live is not None and live.scope.cancel_called

    def new_frame(
        self, role: str, depth: int, task: str, parent: RoleFrame | None, *, entry: bool | None = None
    ) -> RoleFrame:
        """Mint an instance id and build the frame's opening conversation.

        Only the entry role (by default: the frame without a parent) gets the effort directive.
        """
        self.state.registry_counter += 1
        definition = self.settings.guild.roles[role]
        if WRITE_TOOLS.intersection(definition.tools):
            self.state.write_started = True
        prompt = definition.system_prompt
        effort = None
        if parent is None if entry is None else entry:
            effort = self.state.effort
            # One system message: templates such as Qwen3.5's refuse a system message after the first.
            prompt = join_directive(prompt, effort_directive(effort))
        history = [Message(role="system", content=prompt), Message(role="user", content=task)]
        return RoleFrame(
            instance_id=f"{role}-{depth}-{self.state.registry_counter}",
            role=role,
            depth=depth,
            task=task,
            parent_id=parent.instance_id if parent else None,
            parent_role=parent.role if parent else None,
            effort=effort,
            history=history,
            preamble=len(history),
        )

    def push_frame(self, frame: RoleFrame) -> None:
        """Put a new frame on the chain, checkpoint, then log its ``role_start``.

        The checkpoint comes first so a restart never mints the frame's id twice (inside an interlude
        the write is suppressed, as for every other effect of the interlude).
        """
        self.state.frames.append(frame)
        self.checkpoint()
        self.log.emit(ev.role_start(frame))
