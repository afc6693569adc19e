# The orchestration service. Build: docker build --build-arg BUILD_SHA=$(git rev-parse HEAD) -t orchestrator .
# Run:   docker run -p 8080:80 -v "$PWD:/workspace" -e ORCHESTRATOR_API_BASE=http://host.docker.internal:8080/v1 orchestrator
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY guild ./guild
COPY deployment ./deployment
COPY tests ./tests
COPY fuzz ./fuzz
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir -e '.[dev]'
# The build is gated on the test suite (engine, config, sim, unit, fuzz; the browser tests need Chromium).
RUN /opt/venv/bin/pytest -q -x tests/unit tests/config tests/sim tests/engine fuzz

FROM python:3.11-slim
ARG BUILD_SHA=""
RUN useradd --create-home --uid 10001 orchestrator && mkdir /workspace && chown orchestrator /workspace
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
COPY guild ./guild
COPY deployment ./deployment
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir . \
 && /opt/venv/bin/python -c "import json, datetime, os, orchestrator, pathlib; \
p = pathlib.Path(orchestrator.__file__).parent / '_build_info.json'; \
p.write_text(json.dumps({'sha': os.environ.get('BUILD_SHA') or None, 'builtAt': datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}))"
ENV BUILD_SHA=${BUILD_SHA} \
    ORCHESTRATOR_GUILD_DIR=/app/guild \
    ORCHESTRATOR_DEPLOYMENT_FILE=/app/deployment/deployment.json \
    PATH=/opt/venv/bin:$PATH
USER orchestrator
VOLUME ["/workspace"]
EXPOSE 80
ENTRYPOINT ["orchestrator", "serve", "--workspace", "/workspace", "--host", "0.0.0.0", "--port", "80"]
