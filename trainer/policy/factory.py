"""`TorchPolicyFactory`: builds a trainable policy — master weights, the engine's inference
copy, the engine, the tokenizer and the trainer — from a model name or a checkpoint.

- master: float32 (full parameters; with the torch backend and a narrower compute dtype,
  plus a compute copy in that dtype that forward and backward run on, unless
  `compute_copy=False`: then bf16 autocast over the masters), or float32 LoRA adapters
  (peft) on a frozen float32 base; `resume_from` restores the weights (the checkpoint's full model, or its `adapter/`
  on `base_model`), the optimizer state and the version.
- engine copy: the master's weights cast to the engine dtype (`auto`: bf16 where the CPU
  or GPU is fast at it), served by a `TorchEngine` running on `engine_threads` threads.
- update backend (`trainer.optim`): torch's fused AdamW (`optimizer="torch"`, default) or
  a DeepSpeed engine at ZeRO `zero_stage` (`optimizer="deepspeed"`, stage 0 unless given);
  built after the engine copy, so ZeRO never touches the served weights.
- `load_engine`: an engine alone (no master, no optimizer) serving weights on disk in the
  engine dtype — an ended run's final policy, reloaded on demand (`gateway.runs.ended_policies`).
- loading runs in a helper thread (`asyncio.to_thread`, one torch thread) so the event
  loop keeps serving.

Knows nothing of HTTP or the gateway; returns the torch-free `Policy` record.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import torch
from peft import LoraConfig as PeftLoraConfig
from peft import PeftModel, get_peft_model

from trainer.checkpoint import (
    adapter_dir,
    has_optimizer_state,
    read_master_weights,
    read_optimizer_state,
    read_trainer_state,
)
from trainer.config import DType, EngineConfig, EngineKind, LoraConfig, ModelConfig, OptimizerKind
from trainer.engine.torch_engine import TorchEngine
from trainer.engine.weights import TrainableEngine
from trainer.model import MODEL_LOADING, load_model, resolve_dtype
from trainer.optim import build_update_backend
from trainer.policy.master import FullMaster, LoraMaster
from trainer.policy.threads import single_threaded
from trainer.policy.trainer import TorchPolicyTrainer, master_forward
from trainer.tokenizer import HFChatTokenizer
from trainer.types import Policy, ServedModel

DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _dtype_name(dtype: torch.dtype) -> DType:
    return str(dtype).removeprefix("torch.")  # type: ignore[return-value]


class TorchPolicyFactory:
    """Implements `trainer.types.PolicyFactory` for in-process torch policies."""

    def __init__(
        self,
        engine_config: EngineConfig | None = None,
        engine_threads: int | None = None,
        engine_dtype: DType = "auto",
        compute_dtype: DType = "auto",
        device: str = "cpu",
        allow_download: bool = False,
        engine: EngineKind = "torch",
        optimizer: OptimizerKind = "torch",
        zero_stage: int | None = None,
        compute_copy: bool = True,
    ):
        config = engine_config or EngineConfig()
        if engine_threads is not None:
            config = config.model_copy(update={"threads": engine_threads})
        self.engine_config = config
        self.engine_dtype = resolve_dtype(engine_dtype, device)
        self.compute_dtype = resolve_dtype(compute_dtype, device)
        self.device = device
        self.allow_download = allow_download
        self.engine_kind = engine
        self.optimizer_kind = optimizer
        self.zero_stage = zero_stage
        self.compute_copy = compute_copy and optimizer == "torch"

    async def create(
        self,
        *,
        served_name: str,
        base_model: str,
        lora: dict[str, Any] | None,
        seed: int,
        resume_from: str | None = None,
    ) -> Policy:
        return await asyncio.to_thread(
            single_threaded,
            self.build,
            served_name=served_name,
            base_model=base_model,
            lora=lora,
            seed=seed,
            resume_from=resume_from,
        )

    def build(
        self,
        *,
        served_name: str,
        base_model: str,
        lora: dict[str, Any] | LoraConfig | None,
        seed: int,
        resume_from: str | None = None,
    ) -> Policy:
        """The synchronous body of `create` (scripts and benchmarks call it directly)."""
        lora_config = LoraConfig.model_validate(lora) if lora is not None else None
        state = read_trainer_state(resume_from) if resume_from else None
        full_weights_from = resume_from if resume_from and lora_config is None else base_model
        loaded = load_model(self._model_config(full_weights_from, "float32"))
        if full_weights_from == resume_from and (masters := read_master_weights(resume_from)):
            loaded.model.load_state_dict(masters)  # the saved weights are narrower (bf16)
        served_model = copy.deepcopy(loaded.model).to(self.engine_dtype).eval()
        served_model.requires_grad_(False)

        if lora_config is None:
            master: FullMaster | LoraMaster = FullMaster(
                loaded.model,
                load_reference=lambda: (
                    load_model(
                        self._model_config(base_model, _dtype_name(self.compute_dtype))
                    ).model
                ),
                compute_dtype=self.compute_dtype if self.compute_copy else None,
            )
        else:
            master = LoraMaster(self._peft_model(loaded.model, lora_config, seed, resume_from))
            master.copy_into(served_model)

        backend = build_update_backend(
            self.optimizer_kind,
            model=master.model,
            parameters=master.trainable_parameters(),
            forward=master_forward(master),
            zero_stage=self.zero_stage,
            compute_pairs=master.compute_pairs(),
        )
        tokenizer = HFChatTokenizer(loaded.tokenizer)
        engine = self._build_engine(served_model, tokenizer, state["version"] if state else 0)
        trainer = TorchPolicyTrainer(
            master=master,
            engine=engine,
            hf_tokenizer=loaded.tokenizer,
            compute_dtype=self.compute_dtype,
            backend=backend,
            identity={
                "served_name": served_name,
                "base_model": base_model,
                "lora": lora_config.model_dump() if lora_config else None,
                "seed": seed,
            },
            steps=state["steps"] if state else 0,
            # an export checkpoint (no optimizer.pt: an ended run's, or an older kept one)
            # resumes its weights with a fresh optimizer
            optimizer_state=read_optimizer_state(resume_from)
            if resume_from and has_optimizer_state(resume_from)
            else None,
        )
        return Policy(
            served=ServedModel(name=served_name, tokenizer=tokenizer, engine=engine),
            trainer=trainer,
        )

    async def load_engine(
        self, source: str, version: int, tokenizer: HFChatTokenizer
    ) -> TrainableEngine:
        """An engine serving the weights in `source` (a checkpoint directory or a model
        name) at weights version `version`, with `tokenizer` (the policy's)."""
        return await asyncio.to_thread(
            single_threaded, self.build_engine, source, version, tokenizer
        )

    def build_engine(
        self, source: str, version: int, tokenizer: HFChatTokenizer
    ) -> TrainableEngine:
        """The synchronous body of `load_engine`."""
        loaded = load_model(self._model_config(source, _dtype_name(self.engine_dtype)))
        loaded.model.requires_grad_(False)
        return self._build_engine(loaded.model.eval(), tokenizer, version)

    def _build_engine(
        self, served_model: torch.nn.Module, tokenizer: HFChatTokenizer, version: int
    ) -> TrainableEngine:
        if self.engine_kind == "vllm":
            from trainer.engine.vllm_engine import build_vllm_engine  # CUDA only

            return build_vllm_engine(
                served_model, tokenizer, self.engine_config, initial_version=version
            )
        return TorchEngine(served_model, tokenizer, self.engine_config, initial_version=version)

    def _model_config(self, name: str, dtype: DType) -> ModelConfig:
        return ModelConfig(
            name=name, dtype=dtype, device=self.device, allow_download=self.allow_download
        )

    @staticmethod
    def _peft_model(
        base: torch.nn.Module, config: LoraConfig, seed: int, resume_from: str | None
    ) -> PeftModel:
        if resume_from:
            with MODEL_LOADING:  # transformers' loading state is process-wide (trainer.model)
                return PeftModel.from_pretrained(base, adapter_dir(resume_from), is_trainable=True)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return get_peft_model(
                base,
                PeftLoraConfig(
                    r=config.r,
                    lora_alpha=config.alpha,
                    lora_dropout=config.dropout,
                    target_modules=config.target_modules or DEFAULT_LORA_TARGETS,
                    task_type="CAUSAL_LM",
                ),
            )
