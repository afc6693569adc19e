"""One module per group of MCP tools, plus the per-call helpers they share.

Registering a tool
    A tools module exports ``ToolSpec(name, description, schema, handler)`` constants; ``server.TOOL_TABLE``
    lists them, one line per tool. ``schema`` is an explicit JSON schema built with ``params.params(...)``
    (``string``, ``integer``, ``boolean``, ``number``, ``arr``, ``obj``; ``SESSION_INDEX`` and ``AGENT_ID``
    are the shared parameter schemas; ``closed=True`` refuses unknown keys). The server validates the
    arguments against it *before* the handler runs (``InvalidParams: …``) and passes them with ``None``
    values dropped.

Handlers
    ``handler(call: McpCall) -> McpReply`` is a plain synchronous function (no awaits), so one call's
    read-modify-write of a session file never interleaves with another call's. Raise a ``WorkflowError``
    (``orchestrator.workflow.errors``) to fail without effect: the agent sees ``isError`` with
    ``"<CODE>: <message>"``. Anything else is an internal error (logged with its traceback).

``context.McpCall`` (one MCP tool call to this server)
    ``call.args``, ``call.tool``, ``call.state`` (the ``ServerState``), ``call.agent_id`` (argument or
    ``None``), ``call.warn(text)`` (validation warning: lands in ``_meta.validation`` and the trace),
    ``call.validation()``, ``call.corpus()``, ``call.open(index=None, *, lock=False) -> SessionCall``
    (locate the ``session_index`` argument; ``lock=True`` refuses with ``CHECKPOINT_ACTIVE`` —
    ``Active checkpoint '<id>' …`` — while a checkpoint is open, the checkpoint lock), ``call.adopt(handle)``
    (a session the handler created), ``call.json(payload, meta)`` / ``call.yaml(payload, meta)`` for
    session-less results.

``context.SessionCall`` (a located session inside a call; a working copy until ``save``)
    Identity: ``s.index``, ``s.state`` (the ``SessionFile``), ``s.handle`` (store handle), ``s.depth``,
    ``s.transient``, ``s.folder``, ``s.planning_folder`` (``None`` for transients),
    ``s.planning_folder_path`` (agent-facing host path), ``s.agent_id`` (call's, else the session's),
    ``s.parent()`` (embedding parent, as stored), ``s.server`` (``ServerState``).
    Corpus: ``s.workflow()`` (warns once on version drift; ``Workflow not found``), ``s.activity(id)``
    (``Activity not found: <id>``).
    Changes: ``s.update(**fields)``, ``s.record(type, activity=…, step=…, checkpoint=…, data=…)`` (history
    event stamped by the server clock), ``s.set_variable(name, value, source, activity=…)`` (bag write +
    ``variable_set`` with the declared-type check and warning), ``s.delivered(key, scope=None)`` /
    ``s.remember_delivery({key: hash}, scope=None)`` (the per-agent delivery ledger),
    ``s.refuse_if_locked()``.
    Persistence: ``s.save(top_edit=None)`` writes once (seq + 1, ts = now) into the sealed top-level file;
    ``top_edit(top) -> top`` may adjust other sessions in the same file (e.g. a parent's child entry).
    ``s.reload()`` re-reads from disk (discarding unsaved changes) just before a late save.
    Results: ``s.json(payload, **meta_extra)``, ``s.yaml(payload, **meta_extra)``, ``s.text(text,
    **meta_extra)`` — each carries ``_meta {session_index, validation: {status, warnings}, **extra}``.

``context.ServerState``
    ``settings`` (``WorkflowSettings``), ``corpus()`` (reloaded when files change), ``memo(key, compute)``
    (corpus-derived values, cleared on reload), ``store`` (``SessionStore``), ``traces`` (``TraceStore``),
    ``key`` (``LazyKey``), ``log`` (``JsonLog``: ``info/warn/error(msg, **fields)`` on stderr),
    ``now()`` (unix seconds), ``host_path(path)``.

Helpers: ``context.content_hash(text)`` (16 hex of SHA-256), ``context.type_check(declared, value)``,
``render.to_json`` / ``render.to_yaml``, ``batch.batch_block(...)``.

Modules: ``cold`` (discover, list_workflows, health_check), ``sessions`` (start_session, dispatch_child;
``seeding`` builds new session files and embedded children, ``bootstrap`` picks a client workflow),
``navigation`` (get_workflow, next_activity; ``manifests`` holds its advisory checks), ``status``
(get_workflow_status, inspect_session, record_usage, get_trace; ``inspect_views`` the projections),
``checkpoints`` and ``delivery`` (the checkpoint and content tools).
"""
