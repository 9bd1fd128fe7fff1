# The image every Kubeflow step runs in. Two stages: `build` installs the runtime lock
# (requirements-runtime.lock: the pipeline's packages only, no test or benchmark tools) into
# /opt/venv with scripts/install.sh, the script scripts/setup.sh runs for .venv; the final
# stage copies that venv and the schema and runs as an unprivileged user.
#   docker build -t REGISTRY/tfx-audio:TAG .
#   docker build --target with-model -t REGISTRY/tfx-audio:TAG-w2v2 .   (bakes ./models/wav2vec2-base,
#       a save_pretrained directory, in at /models/wav2vec2-base: kubeflow.yaml's trainer.wav2vec2.pretrained)
FROM python:3.10.15-slim-bookworm AS build
# A C compiler for pesq, which the index has only as a source distribution (scripts/install.sh builds it).
# The build stage is discarded, so the compiler never reaches the image; its version is Debian bookworm's.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements-runtime.lock setup.py ./
COPY scripts/install.sh scripts/
COPY pipeline/ pipeline/
COPY components/ components/
RUN PYTHON=python3.10 bash scripts/install.sh /opt/venv requirements-runtime.lock package

FROM python:3.10.15-slim-bookworm AS runtime-base
ENV PATH=/opt/venv/bin:$PATH \
    TF_USE_LEGACY_KERAS=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/venv /opt/venv
COPY schemas/ /app/schemas/
RUN useradd --create-home --uid 10001 tfx
WORKDIR /app
USER 10001
# TFX's container entrypoint for Kubeflow V2 launches each component.
ENTRYPOINT ["python", "-m", "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"]

FROM runtime-base AS with-model
COPY --chown=10001 models/wav2vec2-base/ /models/wav2vec2-base/

# The default target: the runtime without model weights (mount them at /models on the cluster).
FROM runtime-base AS runtime
