# ruff: noqa: F811  (the start-form fixtures of test_web.py, imported by name)
"""The UI's start form takes the user's own workflow: an absolute path on the UI's machine
that imports and has a held-out split, handed to `researcher start --workflow`."""

from __future__ import annotations

from pathlib import Path

from tests.unit.researcher.test_web import client, engine, gateway, spawned  # noqa: F401

# read as `researcher start --workflow` reads it: the workflow's PARAMS may be the factor
FORM = {"question": 'does the system prompt "Think first." help my agent?', "budget": "5m",
        "model": "tiny", "seeds": "1"}  # fmt: skip
AGENT = """
PARAMS = {"system_prompt": "Answer."}

def tasks(split="train"):
    return [] if split == "{empty}" else [{"id": f"{split}-0"}]

async def rollout(task, episode):
    return 1.0
"""


def test_a_start_form_with_a_workflow_passes_its_absolute_path_to_the_researcher(
    client,
    spawned,
    tmp_path: Path,
):
    agent = tmp_path / "my_agent.py"
    agent.write_text(AGENT.replace("{empty}", "nothing"))
    response = client.post("/studies", follow_redirects=False,
                           data=FORM | {"workflow": str(agent)})  # fmt: skip
    assert response.status_code == 303, response.text
    [command] = spawned
    assert command[command.index("--workflow") + 1] == str(agent.resolve())


def test_a_question_about_the_workflows_params_is_read_with_them(client, spawned, tmp_path: Path):
    agent = tmp_path / "my_agent.py"
    agent.write_text(AGENT.replace("{empty}", "nothing"))
    about_params = FORM
    unread = client.post("/studies", data=about_params)  # without the workflow: no factor
    assert unread.status_code == 422 and spawned == []
    read = client.post("/studies", follow_redirects=False,
                       data=about_params | {"workflow": str(agent)})  # fmt: skip
    assert read.status_code == 303, read.text


def test_a_workflow_that_is_relative_or_has_no_test_split_is_refused_inline(
    client,
    spawned,
    tmp_path: Path,
):
    train_only = tmp_path / "train_only.py"
    train_only.write_text(AGENT.replace("{empty}", "test"))
    page = client.post("/studies", data=FORM | {"workflow": str(train_only)})
    assert page.status_code == 422 and "yielded no tasks" in page.text
    page = client.post("/studies", data=FORM | {"workflow": "my_agent.py"})
    assert page.status_code == 422 and "absolute path" in page.text
    assert 'name="workflow"' in page.text and spawned == []


def test_extra_environment_variables_for_clients_are_checked_and_passed_as_client_env(
    client, spawned, tmp_path: Path, monkeypatch
):
    # `researcher start --client-env NAME`: a variable the workflow reads that clients do
    # not get by default; the form checks the names as the CLI does and passes them on
    assert 'name="client_env"' in client.get("/").text
    agent = tmp_path / "judge.py"
    agent.write_text("import os\nURL = os.environ['ACME_JUDGE_URL'] + os.environ['ACME_REGION']\n"
                     + AGENT.replace("{empty}", "nothing"))  # fmt: skip
    monkeypatch.setenv("ACME_JUDGE_URL", "http://judge.invalid")
    monkeypatch.setenv("ACME_REGION", "eu")
    form = FORM | {"workflow": str(agent)}
    lacking = client.post("/studies", data=form)
    assert lacking.status_code == 422 and "--client-env ACME_JUDGE_URL" in lacking.text
    assert "extra environment variables for clients" in lacking.text
    started = client.post("/studies", follow_redirects=False,
                          data=form | {"client_env": " ACME_JUDGE_URL,ACME_REGION  ACME_REGION"})  # fmt: skip
    assert started.status_code == 303, started.text
    [command] = spawned
    assert command[command.index("--workflow") :][2:] == [
        "--client-env", "ACME_JUDGE_URL", "--client-env", "ACME_REGION"
    ]  # fmt: skip
    never = client.post("/studies", data=FORM | {"client_env": "ACME_REGION, OPENAI_API_KEY"})
    assert never.status_code == 422 and (
        "extra environment variable OPENAI_API_KEY: never passed to a client" in never.text
    )
    assert 'value="ACME_REGION, OPENAI_API_KEY"' in never.text  # kept to correct
    not_a_name = client.post("/studies", data=FORM | {"client_env": "ACME_REGION=eu"})
    assert not_a_name.status_code == 422
    assert "extra environment variable &#39;ACME_REGION=eu&#39;: not the name of" in not_a_name.text
    assert len(spawned) == 1
