"""Fixture corpora for the corpus tests (helpers only; no tests live here)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (text dedented) and return ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def technique_md(
    *,
    version: str = "1.0.0",
    capability: str = "Does one small thing.",
    inputs: str = "",
    outputs: str = "",
    protocol: str = "",
    rules: str = "",
) -> str:
    parts = [f"---\nmetadata:\n  version: {version}\n---\n", f"## Capability\n\n{capability}\n"]
    if inputs:
        parts.append(f"## Inputs\n\n{textwrap.dedent(inputs).strip()}\n")
    if protocol:
        parts.append(f"## Protocol\n\n{textwrap.dedent(protocol).strip()}\n")
    if outputs:
        parts.append(f"## Outputs\n\n{textwrap.dedent(outputs).strip()}\n")
    if rules:
        parts.append(f"## Rules\n\n{textwrap.dedent(rules).strip()}\n")
    return "\n".join(parts)


META_FILES: dict[str, str] = {
    "meta/workflow.yaml": """
        id: meta
        version: 2.0.0
        title: Shared layer
        fragments:
          rules:
            be-brief: Keep every answer short
          checkpoints:
            confirm-go:
              message: Proceed?
              options:
                - { id: go, label: Go }
                - { id: halt, label: Halt, effect: { transitionTo: wrap-up } }
    """,
    "meta/techniques/TECHNIQUE.md": technique_md(
        capability="Root contract of the shared layer.",
        inputs="### meta_root_input\n\nOnly meta techniques see this.",
    ),
    "meta/techniques/conduct.md": technique_md(
        capability="How agents behave.",
        rules="""
            ### quiet-mode
            Say little.

            ### quiet-logs
            Log little.

            ### careful
            Check twice.
        """,
    ),
    "meta/techniques/engine/TECHNIQUE.md": technique_md(
        capability="Engine operations share this contract.",
        inputs="""
            ### session_key
            The key of the running session.

            ### work_dir
            Where files go.
        """,
        protocol="""
            ### Initial
            - Load the session.

            ### Final
            - Save the session.
        """,
        rules="""
            ### engine-only-once
            Run each engine step once.
        """,
    ),
    "meta/techniques/engine/dispatch.md": technique_md(
        capability="Hand an activity to a worker.",
        inputs="""
            ### work_dir
            Overridden here: the worker's directory.
        """,
        protocol="""
            1. Pick a worker.
            2. Send the activity,
               with its bundle.
        """,
        rules="""
            ### dispatch-one-at-a-time
            One dispatch per turn.
        """,
    ),
    "meta/techniques/shared-op.md": technique_md(capability="Available to every workflow."),
    "meta/resources/guide.md": """
        ---
        name: guide
        version: 1.2.3
        ---
        # Guide

        ## First Part

        Text one.

        ### Detail

        Deeper.

        ## Second Part

        Text two.
    """,
}

ALPHA_FILES: dict[str, str] = {
    "alpha/workflow.yaml": """
        id: alpha
        version: 1.4.0
        title: Alpha flow
        description: A small test workflow.
        author: tests
        tags: [demo, review]
        initialActivity: intake
        variables:
          - { name: ticket_text, type: string, description: Raw text }
          - { name: severity_level, type: string, defaultValue: low }
          - { name: lint_enabled, type: boolean, defaultValue: false }
          - { name: target, type: string }
        rules:
          workflow:
            - ref: greet
            - Plain workflow rule
          activity:
            - Activity rule
          universal:
            - ref: be-brief
        fragments:
          rules:
            greet:
              - Say hello first
              - Then listen
          checkpoints:
            ask-size:
              message: How big is it?
              condition: { type: simple, variable: severity_level, operator: "==", value: high }
              options:
                - { id: small, label: Small, effect: { setVariable: { size_label: small } } }
                - { id: big, label: Big, effect: { transitionTo: escalate } }
        techniques:
          workflow: [engine::dispatch]
          activity: [conduct]
    """,
    "alpha/activities/01-intake.yaml": """
        id: intake
        version: 1.0.0
        name: Intake
        steps:
          - kind: technique
            technique: intake::classify
          - kind: action
            id: note
            actions:
              - { action: log, message: noted }
        transitions:
          - to: triage
            isDefault: true
    """,
    "alpha/activities/02-triage.yaml": """
        id: triage
        version: 1.1.0
        name: Triage
        bundleTechniques: { maxChars: 6000 }
        steps:
          - kind: technique
            technique:
              name: sort
              inputs: { ticket: ticket_text }
          - kind: checkpoint
            id: size-check
            ref: ask-size
          - kind: checkpoint
            id: go-check
            ref: confirm-go
          - kind: loop
            id: per-file
            loopType: forEach
            variable: current_file
            over: changed_files
            steps:
              - { kind: technique, id: lint-file, technique: summarize, when: "lint_enabled && current_file.size > 0" }
        decisions:
          - id: route
            name: Route
            branches:
              - { id: a, label: A, transitionTo: escalate, condition: { type: simple, variable: x, operator: exists } }
              - { id: b, label: B, transitionTo: wrap-up, isDefault: true }
        transitions:
          - to: escalate
            condition:
              type: and
              conditions:
                - { type: simple, variable: severity_level, operator: "==", value: high }
                - { type: not, condition: { type: simple, variable: muted, operator: "==", value: true } }
          - { to: fix, isDefault: true }
    """,
    "alpha/activities/03-escalate.yaml": "id: escalate\nversion: 1.0.0\nname: Escalate\n",
    "alpha/activities/notes.txt": "not an activity",
    "alpha/techniques/TECHNIQUE.md": technique_md(
        capability="Root contract of alpha.",
        inputs="""
            ### planning_folder_path
            Where artifacts go.

            ### ticket_text
            Root description, overridden by classify.
        """,
        protocol="""
            ### Initial
            - Read the planning folder.

            ### Final
            - Write the summary.
        """,
        rules="""
            ### cite-evidence
            Every claim cites evidence.
        """,
    ),
    "alpha/techniques/intake/TECHNIQUE.md": technique_md(
        capability="Intake group contract.",
        outputs="### intake_notes\nNotes taken at intake.",
        rules="### intake-polite\nBe polite at intake.",
    ),
    "alpha/techniques/intake/classify.md": technique_md(
        capability="Classify a ticket's severity.",
        inputs="""
            ### ticket_text
            Raw ticket body.

            ### hint_text
            *(optional)* A hint.

            #### default
            `none`

            #### shape
            Free text.
        """,
        outputs="""
            ### severity_level
            low|medium|high.

            #### artifact
            `{ticket_key}-triage.md`

            #### audience
            agent
        """,
        protocol="1. Read `{ticket_text}` and use the [rubric](../../resources/rubric.md#scale).\n"
        "2. See [guide](../../../meta/resources/guide.md).",
        rules="### severity-cited\nEvery severity cites its evidence.",
    ),
    "alpha/techniques/sort.md": technique_md(capability="Sort things.", protocol="Sort them all, in prose."),
    "alpha/techniques/triage/sort.md": technique_md(capability="Triage-local sort."),
    "alpha/techniques/summarize.md": technique_md(
        capability="Summarize.",
        rules="""
            ### tone-plain
            Plain words.

            ### tone-short
            Short words.
        """,
    ),
    "alpha/resources/rubric.md": """
        ---
        name: rubric
        metadata:
          version: 0.3.0
        ---
        ## Scale

        low, medium, high

        ```md
        ## Not A Heading
        ```

        ## Notes

        none
    """,
    "alpha/resources/field.md": "---\nname: field-notes\n---\nBody of field notes.\n",
    "alpha/resources/README.md": "ignored\n",
}

BETA_FILES: dict[str, str] = {
    "beta/workflow.yaml": """
        id: beta
        version: 0.1.0
        title: Beta borrows
        initialActivity: start
        activities:
          - 01-start.yaml
          - alpha/02-triage.yaml
          - alpha/03-escalate.yaml
          - { id: wrap-up, version: 1.0.0, name: Wrap up }
    """,
    "beta/activities/01-start.yaml": """
        id: start
        version: 1.0.0
        name: Start
        steps:
          - { kind: checkpoint, id: ok, ref: "meta::confirm-go" }
        transitions: [ { to: triage } ]
    """,
}


def fixture_corpus(root: Path, *extra: dict[str, str]) -> Path:
    """The meta + alpha + beta fixture corpus (plus ``extra`` file maps) under ``root``."""
    write_tree(root, META_FILES)
    write_tree(root, ALPHA_FILES)
    write_tree(root, BETA_FILES)
    for files in extra:
        write_tree(root, files)
    return root
