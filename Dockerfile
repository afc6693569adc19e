# The orchestration service as a container image.
#
# NOT BUILT IN CI: base images cannot be pulled where the tests run. tests/packaging/test_container.py
# checks what can be checked without building: every path copied exists and is packaged, every
# orchestrator command parses, the port, user and health check agree. See README "Container".
#
# Build: docker build --build-arg BUILD_SHA=$(git rev-parse HEAD) -t orchestrator .
# Run:   docker run -p 127.0.0.1:8765:8765 -e ORCHESTRATOR_TOKEN -v "$PWD:/workspace" \
#          -e ORCHESTRATOR_API_BASE=http://host.docker.internal:8080/v1 orchestrator

# --- stage 1: build the wheel (the same wheel `./dev test` smoke-tests) ---------------------------
FROM python:3.11-slim AS build
ARG BUILD_SHA=""
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md MANIFEST.in ./
COPY src ./src
# src/orchestrator/defaults/{guild,deployment,workflows} are symlinks to these three folders.
COPY guild ./guild
COPY deployment ./deployment
COPY workflows ./workflows
# The image's commit and build time ride inside the wheel (/api/config reports them).
RUN python -c "import json, os, datetime; open('src/orchestrator/_build_info.json', 'w').write(json.dumps({'sha': os.environ.get('BUILD_SHA') or None, 'builtAt': datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}))" \
 && python -m pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# --- stage 2: the runtime holds the installed wheel and nothing else of the source ------------------
FROM python:3.11-slim
# The default "[otel]" lets the service send its runs as traces (set OTEL_EXPORTER_OTLP_ENDPOINT; off
# otherwise: docs/observability.md). EXTRAS="[cluster]" adds Dask instead, for Foundry workers
# (docker-compose.foundry.yml), which do not trace; EXTRAS="" leaves both out.
ARG EXTRAS="[otel]"
RUN useradd --create-home --uid 10001 orchestrator && mkdir /workspace && chown orchestrator /workspace
COPY --from=build /dist /dist
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir "$(echo /dist/*.whl)${EXTRAS}" && rm -rf /dist
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1
USER orchestrator
WORKDIR /workspace
VOLUME ["/workspace"]
# An unprivileged port, so runtimes that do not grant low ports to non-root users run it as is.
EXPOSE 8765
# Liveness: /healthz needs no token (200 {"ok": true}; 503 while the configuration is invalid).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=4)"]
# 0.0.0.0 inside the container only: publish it on the host's loopback (-p 127.0.0.1:8765:8765).
ENTRYPOINT ["orchestrator", "serve", "--workspace", "/workspace", "--host", "0.0.0.0", "--port", "8765"]
