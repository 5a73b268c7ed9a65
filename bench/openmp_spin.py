"""One process, two engines: 8 greedy 24-token completions on engine A alone, beside an
idle engine B that has computed, and after B shut down (libgomp spin regimes;
docs/engine.md, "Spinning on a busy machine").

    GOMP_SPINCOUNT=1000 .venv/bin/python bench/openmp_spin.py tiny|smollm2-135m
"""

import asyncio
import sys
import time

from trainer.config import EngineConfig, ModelConfig
from trainer.engine.torch_engine import TorchEngine, reserve_cores_for_engine
from trainer.model import load_model
from trainer.tokenizer import HFChatTokenizer
from trainer.types import SamplingParams

name = sys.argv[1]
threads = reserve_cores_for_engine()
cfg = EngineConfig(threads=threads)


def engine():
    loaded = load_model(ModelConfig(name=name))
    return TorchEngine(loaded.model.eval(), HFChatTokenizer(loaded.tokenizer), cfg)


prompt = list(range(100, 140))
params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)


async def burst(e, k=8):
    t = time.perf_counter()
    await asyncio.gather(*(e.generate(prompt, params) for _ in range(k)))
    return time.perf_counter() - t


async def main():
    a = engine()
    await burst(a)
    await burst(a)

    def r(label, xs):
        print(
            f"{label}: {min(xs):.3f} s (min of {len(xs)}), median {sorted(xs)[len(xs) // 2]:.3f}",
            flush=True,
        )

    alone = [await burst(a) for _ in range(5)]
    r("A alone", alone)
    b = engine()
    await burst(b)  # B's worker now has an OpenMP team too
    two = [await burst(a) for _ in range(5)]
    r("A with an idle B that has computed", two)
    b.shutdown()
    del b
    import gc

    gc.collect()
    time.sleep(1)
    after = [await burst(a) for _ in range(5)]
    r("A after B shut down", after)


asyncio.run(main())
