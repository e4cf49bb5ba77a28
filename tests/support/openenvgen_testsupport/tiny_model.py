"""A tiny chat model made in the test, taught to call one tool through TRL's own prompt.

Nothing comes from a model hub: the tokenizer is trained here with `tokenizers` (byte-level
BPE, so any text encodes) and carries TRL's bundled `qwen3_chat_template`; the model is a
two-layer Qwen3 (transformers) with random weights. `teach` then runs a short supervised
loop on exactly the prompts TRL renders for `GRPOTrainer(environment_factory=...)` (the
dataset prompt with the env's reset observation appended, the env's tools in the system
turn, TRL's training chat template when the bundled one is not prefix-preserving), so that
the model answers the first turn with one given tool call and the turn after a tool
response with a short closing word. TRL's tool-call loop then parses that call and runs the
environment's method.

Seeded throughout (`torch.manual_seed`): the same inputs give the same model. Nothing is
cached: the caller keeps what `tiny_tool_caller` returns for as long as it needs it.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from transformers.utils import get_json_schema
from trl.chat_template_utils import (
    get_training_chat_template,
    is_chat_template_prefix_preserving,
    qwen3_chat_template,
)

__all__ = ["CLOSING", "TinyModel", "ToolCall", "tiny_tool_caller", "tool_methods"]

CLOSING = "ok"
"""What the taught model answers after a tool response (it then ends its turn)."""
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
"""Qwen3's tags: tokens of their own that decoding keeps (not special), as in Qwen3's tokenizer."""


@dataclass(frozen=True)
class ToolCall:
    """The call the model is taught to make: a tool's name and its arguments."""

    name: str
    arguments: dict[str, Any]

    def text(self) -> str:
        """The call as the Qwen3 template writes an assistant's tool call."""
        return f"<tool_call>\n{json.dumps({'name': self.name, 'arguments': self.arguments})}\n</tool_call>"

    def message(self) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": self.name, "arguments": self.arguments}}],
        }


@dataclass
class TinyModel:
    model: Qwen3ForCausalLM
    tokenizer: PreTrainedTokenizerFast
    final_loss: float


def tool_methods(instance: Any) -> list[Callable[..., Any]]:
    """The methods of an environment instance that TRL offers the model as tools: its class's
    public functions but `reset` and `get_reward`, as GRPOTrainer collects them."""
    return [
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in {"reset", "get_reward"}
    ]


def make_tokenizer(corpus: Sequence[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on `corpus`, with Qwen3's special tokens and TRL's
    bundled Qwen3 chat template."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in MARKUP])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=qwen3_chat_template,
        model_max_length=4096,
    )


def make_model(tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen3ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return Qwen3ForCausalLM(config)


def render(
    tokenizer: PreTrainedTokenizerFast,
    messages: list[dict[str, Any]],
    tools: Sequence[Callable[..., Any]],
    *,
    tokenize: bool = True,
    **kwargs: Any,
) -> Any:
    """What TRL generates from: `messages` with `tools`, through the chat template TRL uses
    for multi-turn tool calling (its training template when the bundled one is not
    prefix-preserving), ending with the assistant's generation prompt; token ids, or the
    text when not `tokenize`."""
    template = None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)
    rendered = tokenizer.apply_chat_template(
        messages, tools=list(tools), chat_template=template, add_generation_prompt=True, tokenize=tokenize, **kwargs
    )
    if tokenize and not isinstance(rendered, list):
        rendered = rendered["input_ids"]
    return rendered


def teach(
    model: Qwen3ForCausalLM,
    examples: Sequence[tuple[list[int], list[int]]],
    *,
    steps: int,
    seed: int,
    lr: float = 3e-3,
) -> float:
    """Supervised loop: each example is (prompt ids, answer ids); the loss is on the answer's
    tokens only. Full batch, Adam; the last loss."""
    torch.manual_seed(seed)
    width = max(len(p) + len(a) for p, a in examples)
    inputs = torch.zeros(len(examples), width, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    mask = torch.zeros(len(examples), width, dtype=torch.long)
    for row, (prompt, answer) in enumerate(examples):
        ids = prompt + answer
        inputs[row, : len(ids)] = torch.tensor(ids)
        labels[row, len(prompt) : len(ids)] = torch.tensor(answer)
        mask[row, : len(ids)] = 1
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = torch.tensor(float("nan"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only wait on each other
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            loss = model(input_ids=inputs, attention_mask=mask, labels=labels).loss
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return float(loss.detach())


def tiny_tool_caller(
    tools: Sequence[Callable[..., Any]],
    lessons: Sequence[tuple[str, ToolCall]],
    tool_replies: Sequence[str],
    *,
    seed: int = 0,
    steps: int = 150,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> TinyModel:
    """A tiny model that answers each lesson's user turn (the first user message as TRL
    renders it: dataset prompt plus reset observation) with the lesson's call, and each of
    `tool_replies` after that call with CLOSING. `tools` are the environment's tool methods
    (as TRL collects them from an instance); `chat_template_kwargs` as given to GRPOConfig."""
    kwargs = chat_template_kwargs or {}
    conversations = []
    for turn, call in lessons:
        first = [{"role": "user", "content": turn}]
        conversations.append((first, call.text()))
        for reply in tool_replies:
            conversations.append(
                ([*first, call.message(), {"role": "tool", "name": call.name, "content": reply}], CLOSING)
            )
    # Trained twice: the second time on the conversations as the template renders them (the
    # first tokenizer only renders), so the template's own text costs few tokens too.
    tokenizer = make_tokenizer([json.dumps(get_json_schema(tool)) for tool in tools])
    rendered = [render(tokenizer, messages, tools, tokenize=False, **kwargs) for messages, _ in conversations]
    tokenizer = make_tokenizer([text + answer for text, (_, answer) in zip(rendered, conversations, strict=True)] * 4)
    examples = [
        (
            render(tokenizer, messages, tools, **kwargs),
            tokenizer.encode(answer + "<|im_end|>", add_special_tokens=False),
        )
        for messages, answer in conversations
    ]
    model = make_model(tokenizer, seed)
    loss = teach(model, examples, steps=steps, seed=seed)
    return TinyModel(model=model, tokenizer=tokenizer, final_loss=loss)


def cpu_grpo_config(output_dir: str, *, steps: int, batch: int, generations: int) -> Any:
    """A GRPOConfig for a tiny model's training on CPU: a short tool-calling turn, every step
    logged, nothing saved or reported, seeded and in the dataset's order."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=batch,
        num_generations=generations,
        max_completion_length=64,
        max_tool_calling_iterations=2,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        seed=0,
        shuffle_dataset=False,
    )
