"""Episodes: creation, key binding, path binding, auth, and the recorded trace."""

from __future__ import annotations

import pytest

from tests.unit.gateway.conftest import assert_openai_error, chat_body, engine_of

ADMIN = "sk-admin-secret"


def create_episode(client, headers=None, **fields) -> dict:
    response = client.post("/swarm/episodes", json={"task_id": "t-1", **fields}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def test_created_episode_has_a_secret_key_and_an_openai_base_url(client):
    episode = create_episode(client, group_id="g")
    assert episode["api_key"].startswith("sk-ep-") and len(episode["api_key"]) > 30
    assert episode["base_url"] == "http://testserver/v1"
    assert episode["policy_versions"] == {"fake-model": 0} and episode["group_id"] == "g"


def test_public_base_url_setting_is_used(make_client):
    client = make_client()
    client.app.state.gateway.settings.public_base_url = "https://gw.example/"
    assert create_episode(client)["base_url"] == "https://gw.example/v1"


def test_a_call_with_the_episode_key_is_recorded_with_tokens_logprobs_and_version(client):
    episode = create_episode(client)
    engine_of(client).weights_version = 3
    body = chat_body("record me", logprobs=True, top_logprobs=2)
    reply = client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    assert reply.status_code == 200

    trace = client.get(f"/swarm/episodes/{episode['episode_id']}").json()
    assert trace["status"] == "open" and trace["task_id"] == "t-1"
    (call,) = trace["calls"]
    prompt_ids, _ = engine_of(client).requests[-1]
    assert call["prompt_token_ids"] == prompt_ids
    assert len(call["completion_token_ids"]) == reply.json()["usage"]["completion_tokens"]
    assert len(call["logprobs"]) == len(call["completion_token_ids"])
    assert len(call["top_logprobs"][0]) == 2
    assert call["version"] == 3 and set(call["versions"]) == {3}
    assert call["finish_reason"] == "stop" and call["kind"] == "chat"
    assert call["completion_text"] == "echo: record me"
    assert "".join(call["token_texts"]) == "echo: record me"
    assert call["prompt_text"].startswith("<s><|user|>record me")
    assert call["started_at"] <= call["first_token_at"] <= call["finished_at"]


def test_the_trace_spells_every_prompt_and_timeline_token_with_its_own_text_piece(client):
    episode = create_episode(client)
    client.post("/v1/chat/completions", json=chat_body("hi"), headers=bearer(episode["api_key"]))

    trace = client.get(f"/swarm/episodes/{episode['episode_id']}").json()
    (call,) = trace["calls"]
    assert call["prompt_token_texts"][:3] == ["<s>", "<", "|"]  # a char per token, BOS named
    assert "".join(call["prompt_token_texts"]) == call["prompt_text"]
    assert len(call["prompt_token_texts"]) == len(call["prompt_token_ids"])
    (timeline,) = trace["timelines"]["fake-model"]
    assert len(timeline["token_texts"]) == len(timeline["token_ids"])
    assert "".join(timeline["token_texts"]).startswith(call["prompt_text"] + "echo: hi")


def test_a_call_to_a_model_no_longer_served_has_no_prompt_token_texts(client):
    episode = create_episode(client)
    client.post("/v1/chat/completions", json=chat_body("hi"), headers=bearer(episode["api_key"]))
    client.app.state.gateway.models.remove("fake-model")

    trace = client.get(f"/swarm/episodes/{episode['episode_id']}").json()
    assert trace["calls"][0]["prompt_token_texts"] is None
    assert trace["timelines"]["fake-model"][0]["token_texts"] is None


def test_each_choice_and_each_call_gets_the_next_index(client):
    episode = create_episode(client)
    headers = bearer(episode["api_key"])
    client.post("/v1/chat/completions", json=chat_body(n=2), headers=headers)
    client.post("/v1/completions", json={"model": "fake-model", "prompt": "p"}, headers=headers)
    calls = client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]
    assert [(c["index"], c["choice_index"], c["kind"]) for c in calls] == [
        (0, 0, "chat"),
        (1, 1, "chat"),
        (2, 0, "completions"),
    ]
    assert calls[2]["prompt_text"] == "p"


def test_a_streamed_call_is_recorded_before_done(client):
    episode = create_episode(client)
    body = chat_body(stream=True)
    client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    (call,) = client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]
    assert call["completion_text"] == "echo: hello"


def test_a_call_under_the_episode_path_is_recorded(client):
    episode = create_episode(client)
    url = f"/episodes/{episode['episode_id']}/v1/chat/completions"
    assert client.post(url, json=chat_body(), headers=bearer("sk-none")).status_code == 200
    assert len(client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]) == 1


def test_calls_without_an_episode_key_are_not_recorded(client):
    episode = create_episode(client)
    client.post("/v1/chat/completions", json=chat_body())
    client.post("/v1/chat/completions", json=chat_body(), headers=bearer("sk-none"))
    assert client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"] == []


def test_an_unknown_episode_key_is_a_401(client):
    response = client.post(
        "/v1/chat/completions", json=chat_body(), headers=bearer("sk-ep-not-a-real-key")
    )
    assert_openai_error(response, 401, "invalid_api_key")


def test_a_key_of_episode_a_under_episode_b_is_a_401(client):
    a, b = create_episode(client), create_episode(client)
    url = f"/episodes/{b['episode_id']}/v1/chat/completions"
    response = client.post(url, json=chat_body(), headers=bearer(a["api_key"]))
    assert_openai_error(response, 401, "invalid_api_key")
    assert client.get(f"/swarm/episodes/{b['episode_id']}").json()["calls"] == []


def test_an_unknown_episode_in_the_path_is_a_404(client):
    response = client.post("/episodes/ep-nope/v1/chat/completions", json=chat_body())
    assert_openai_error(response, 404, "episode_not_found")


def test_an_unknown_episode_trace_is_a_404(client):
    assert_openai_error(client.get("/swarm/episodes/ep-nope"), 404, "episode_not_found")


@pytest.fixture
def guarded(make_client):
    return make_client(api_key=ADMIN)


def test_with_an_admin_key_creating_episodes_needs_it(guarded):
    assert_openai_error(guarded.post("/swarm/episodes", json={"task_id": "t"}), 401)
    response = guarded.post("/swarm/episodes", json={"task_id": "t"}, headers=bearer("sk-none"))
    assert_openai_error(response, 401)
    create_episode(guarded, headers=bearer(ADMIN))


def test_with_an_admin_key_openai_calls_need_the_admin_or_an_episode_key(guarded):
    assert_openai_error(guarded.post("/v1/chat/completions", json=chat_body()), 401)
    response = guarded.post("/v1/chat/completions", json=chat_body(), headers=bearer("sk-none"))
    assert_openai_error(response, 401, "invalid_api_key")
    assert_openai_error(guarded.get("/v1/models"), 401)
    ok = guarded.post("/v1/chat/completions", json=chat_body(), headers=bearer(ADMIN))
    assert ok.status_code == 200
    episode = create_episode(guarded, headers=bearer(ADMIN))
    key = bearer(episode["api_key"])
    assert guarded.post("/v1/chat/completions", json=chat_body(), headers=key).status_code == 200


def test_with_an_admin_key_a_trace_is_read_with_the_admin_or_its_own_key(guarded):
    episode = create_episode(guarded, headers=bearer(ADMIN))
    url = f"/swarm/episodes/{episode['episode_id']}"
    assert_openai_error(guarded.get(url), 401)
    other = create_episode(guarded, headers=bearer(ADMIN))
    assert_openai_error(guarded.get(url, headers=bearer(other["api_key"])), 401)
    assert guarded.get(url, headers=bearer(episode["api_key"])).status_code == 200
    assert guarded.get(url, headers=bearer(ADMIN)).status_code == 200


def test_healthz_needs_no_key(guarded):
    assert guarded.get("/healthz").status_code == 200


def test_a_tool_call_is_recorded_with_the_engines_finish_reason(make_client):
    reply = '<tool_call>{"name": "add", "arguments": {}}</tool_call>'
    client = make_client(reply=lambda _prompt: reply)
    episode = create_episode(client)
    tools = [{"type": "function", "function": {"name": "add"}}]
    body = chat_body(tools=tools)
    answer = client.post("/v1/chat/completions", json=body, headers=bearer(episode["api_key"]))
    assert answer.json()["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = client.get(f"/swarm/episodes/{episode['episode_id']}").json()["calls"]
    assert call["finish_reason"] == "stop" and call["completion_text"] == reply
