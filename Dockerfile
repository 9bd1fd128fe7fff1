# The image every Kubeflow step runs in (and a reproducible local environment).
# Same stack as scripts/setup.sh: Python 3.10, the TFX 1.16 set pinned in
# requirements.lock, installed without resolving.
FROM python:3.10-slim-bookworm

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends espeak-ng sox \
 && rm -rf /var/lib/apt/lists/*

ENV TF_USE_LEGACY_KERAS=1 \
    PYTHONUNBUFFERED=1

WORKDIR /app
COPY requirements.lock setup.py ./
RUN pip install --no-cache-dir 'uv==0.13.9' \
 && uv pip sync --system --require-hashes requirements.lock

COPY pipeline/ pipeline/
COPY components/ components/
COPY schemas/ schemas/
RUN uv pip install --system --no-deps -e .

# TFX's container entrypoint for Kubeflow V2 launches each component.
ENTRYPOINT ["python", "-m", "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"]
