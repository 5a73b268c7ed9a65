# swarm client image: CPU only, no torch. Runs `swarm run workflow.py` against a gateway.
#
#   docker build -f infra/client.Dockerfile -t swarmrl-client .
#   docker run --rm -v "$PWD/workflow.py:/work/workflow.py:ro" swarmrl-client \
#       run /work/workflow.py --gateway http://gateway:8400 --run my-run
#
# The project's own dependencies include torch (for the gateway), so the project is
# installed with --no-deps and the client gets only what `swarm` imports
# (infra/client-requirements.txt, checked against swarm/ by tests/unit/test_infra.py).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/swarmrl
COPY infra/client-requirements.txt /opt/swarmrl/infra/client-requirements.txt
RUN pip install -r infra/client-requirements.txt

COPY pyproject.toml README.md /opt/swarmrl/
COPY trainer /opt/swarmrl/trainer
COPY gateway /opt/swarmrl/gateway
COPY swarm /opt/swarmrl/swarm
COPY experiments_db /opt/swarmrl/experiments_db
COPY researcher /opt/swarmrl/researcher
COPY prompts /opt/swarmrl/prompts
# setuptools builds the wheel from every package listed in pyproject; only `swarm` is used here.
RUN pip install --no-deps . \
    && python -c "import swarm.cli, swarm.runner, swarm.episode, swarm.tasks" \
    && ! python -c "import torch" 2>/dev/null

RUN useradd --create-home --uid 1000 swarm
USER swarm
WORKDIR /work
ENTRYPOINT ["swarm"]
CMD ["--help"]
