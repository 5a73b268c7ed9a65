"""Micro-batching: padded, split batches give the same per-token logprobs as one
sequence at a time, and the loss mask selects the trained tokens."""

from __future__ import annotations

import torch

from trainer.policy.batching import TrainItem, build_micro_batches, group_rows
from trainer.policy.logprobs import completion_logprobs
from trainer.types import Sample


def make_sample(prompt, completion, loss_mask=None):
    return Sample("e", "p", prompt, completion, [0.0] * len(completion), 0, loss_mask)


def test_micro_batches_respect_the_token_budget():
    items = [TrainItem(make_sample([1] * n, [2] * n), 1.0) for n in (3, 10, 5, 40, 7)]
    chunks = group_rows(items, micro_batch_tokens=64)
    for chunk in chunks:
        assert len(chunk) == 1 or len(chunk) * max(i.length for i in chunk) <= 64
    assert sorted(i.length for c in chunks for i in c) == [6, 10, 14, 20, 80]


def test_padded_micro_batches_give_the_logprobs_of_single_sequences(tiny_loaded):
    model = tiny_loaded.model
    g = torch.Generator().manual_seed(0)

    def ids(n):
        return torch.randint(0, 40000, (n,), generator=g).tolist()

    samples = [
        make_sample(ids(5), ids(7)),
        make_sample(ids(12), ids(3), loss_mask=[1, 0, 1]),
        make_sample(ids(2), ids(9)),
    ]
    items = [TrainItem(s, 1.0) for s in samples]
    batches = build_micro_batches(items, micro_batch_tokens=32, pad_id=0)
    assert len(batches) > 1
    with torch.no_grad():
        batched = torch.cat([completion_logprobs(model, b) for b in batches])
        expected = []
        for item in sorted(items, key=lambda i: i.length):
            s = item.sample
            logits = model(torch.tensor([s.prompt_token_ids + s.completion_token_ids])).logits[0]
            lp = torch.log_softmax(logits[len(s.prompt_token_ids) - 1 : -1], -1)
            lp = lp.gather(1, torch.tensor(s.completion_token_ids)[:, None])[:, 0]
            mask = torch.tensor(s.loss_mask or [1] * len(lp), dtype=torch.bool)
            expected.append(lp[mask])
    assert batched.shape[0] == 7 + 2 + 9
    assert torch.allclose(batched, torch.cat(expected), atol=1e-5)
