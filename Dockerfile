# Inference Lab in a container: installs the package (as a wheel install would: no clone at
# run time), precomputes the default grids into the image and serves every page on port 5006.
#
#   docker build -t inference-lab .
#   docker run --rm -p 5006:5006 inference-lab                  # http://localhost:5006/
#   docker run --rm -p 8080:5006 inference-lab --allow-websocket-origin lab.example.org:8080
#
# Arguments after the image name are `inference-lab serve` options (see docs/operations.md).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    INFERENCE_LAB_DATA=/var/lib/inference-lab/grids

WORKDIR /src
COPY pyproject.toml README.md ./
COPY lab ./lab
COPY sweeps ./sweeps
COPY apps ./apps
RUN pip install . \
    && rm -rf /src \
    && useradd --create-home --uid 10001 lab \
    && mkdir -p /var/lib/inference-lab \
    && chown lab /var/lib/inference-lab

USER lab
WORKDIR /home/lab
# The default grids, computed once at build time so the container answers in seconds.
RUN inference-lab sweep --scheduler threads

EXPOSE 5006
# With --prefix /lab the endpoint is /lab/liveness: give `docker run --health-cmd` to match.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:5006/liveness', timeout=4)"
ENTRYPOINT ["inference-lab", "serve", "--address", "0.0.0.0", "--port", "5006"]
CMD []
