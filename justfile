# Recipes for the Adaptive Orchestrator. Run them through ./dev, which sets up .venv first.

set shell := ["bash", "-eu", "-o", "pipefail", "-c"]

py := ".venv/bin/python"
bin := ".venv/bin"

# list the recipes
default:
    @{{bin}}/just --list

# the whole test suite (what CI runs), on one xdist worker per core; extra arguments go to pytest
# (`-n 0`: serial). Long suites keep a representative subset here and a recipe of their own below.
test *ARGS: browser (real-model "--best-effort")
    {{bin}}/ruff check src tests bench fuzz
    {{bin}}/ruff format --check --quiet src tests bench fuzz
    {{bin}}/pytest -q -n auto --dist loadgroup --durations=10 {{ARGS}}

# Debian's Chromium for the browser tests (installed when missing and possible; else those tests skip)
browser:
    #!/usr/bin/env bash
    set -u
    if [ -x /usr/bin/chromium ]; then exit 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "just browser: installing Debian's chromium for the browser tests" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
            || echo "just browser: chromium could not be installed; the browser tests will skip" >&2
    else
        echo "just browser: no /usr/bin/chromium (install Debian's chromium); the browser tests will skip" >&2
    fi

# build llama-server + fetch SmolLM2 into ~/.cache/orchestrator for tests/realmodel (once ~10 min; --check)
real-model *ARGS:
    {{py}} tests/realmodel/llama_cache.py {{ARGS}}

# lint and format check
lint:
    {{bin}}/ruff check src tests bench fuzz
    {{bin}}/ruff format --check src tests bench fuzz

# serve the web UI and API on this directory against the configured model (http://127.0.0.1:8765)
serve *ARGS:
    {{py}} -m orchestrator serve {{ARGS}}

# the service on the built-in simulated model, with a demo run (--once: just the run, in the terminal)
demo *ARGS:
    {{py}} -m orchestrator demo {{ARGS}}

# one run in-process against the configured endpoint: just run "your task"
run *ARGS:
    {{py}} -m orchestrator run {{ARGS}}

# resume the most recent unfinished run in a workspace from its checkpoint
resume *ARGS:
    {{py}} -m orchestrator resume {{ARGS}}

# the simulated Responses-API model: just sim --script FILE --port 8080
sim *ARGS:
    {{py}} -m orchestrator sim-model {{ARGS}}

# print the resolved configuration or the errors
check *ARGS:
    {{py}} -m orchestrator check {{ARGS}}

# every benchmark in bench/, each printing a ratio against a side-by-side baseline
bench:
    for f in bench/*.py bench/log_window/run.py; do echo "== $f"; {{py}} "$f"; done

# property-based fuzzing of the parsers (longer than the fuzz tests inside ./dev test)
fuzz *ARGS:
    HYPOTHESIS_PROFILE=fuzz {{bin}}/pytest -q fuzz {{ARGS}}

# the crash harness: SIGKILL a run N times at random instants and resume it (default 50)
crash N="50":
    CRASH_KILLS={{N}} {{bin}}/pytest -q tests/crash -p no:randomly -s

# the Foundry's crash test: SIGKILL the driver N times at random points, resume each time (default 20)
foundry-crash N="20" SEED="24":
    FOUNDRY_KILLS={{N}} FOUNDRY_KILL_SEED={{SEED}} {{bin}}/pytest -q tests/foundry/test_foundrycli.py -k killed_at_random -p no:randomly -s

# every benchmark of benchmarks/ on its scripted sim-model solution (no real model needed)
bench-suite *ARGS:
    {{py}} -m orchestrator.foundry benchmarks --sim-solutions {{ARGS}}

# the Foundry: search for Guild prompts that score better with your model (docs/foundry.md)
foundry *ARGS:
    {{py}} -m orchestrator foundry {{ARGS}}

# the service load test: 200 concurrent loopback clients polling during a scripted run (60 s)
load *ARGS:
    {{py}} bench/load/run.py {{ARGS}}

# the service read-path benchmark alone (1k vs 1M-event logs, 100 WebSocket subscribers; --profile for hot spots)
log-window *ARGS:
    {{py}} bench/log_window/run.py {{ARGS}}

# the workflow server's per-tool latency over stdio (real corpus when present) and corpus load time
mcp-bench *ARGS:
    {{py}} bench/mcp_calls.py {{ARGS}}

# the workflow server (MCP over stdio, or --transport http) on the project's own workflows/: just mcp --workspace DIR
mcp *ARGS:
    {{py}} -m orchestrator mcp {{ARGS}}

# build the sdist and the wheel into dist/ (what users install; `./dev test tests/packaging` smoke-tests it)
wheel:
    {{bin}}/uv build --out-dir dist

# copy the packaged Guild and deployment file into a workspace to edit: just init DIR [--force] [--workflows]
init *ARGS:
    {{py}} -m orchestrator init {{ARGS}}
