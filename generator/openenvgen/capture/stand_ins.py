"""What some upstream envs need around them to start here: stand-in data, env vars, a cwd.

Some envs download data when they start (a word list, a tokenizer, a dataset from the
Hugging Face Hub); where a small stand-in makes them run offline it is made here, in a
scratch folder, and the capture's `source.json` says so (each `Setup.note`). The schema
an env serves does not depend on the data, so its snapshot is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Common English five-letter nouns: the stand-in word list TextArena's Wordle draws its
# secret word from (real Wordle uses NLTK's `words` corpus, downloaded at start).
_STUB_WORDS = (
    "apple", "beach", "bread", "brick", "chair", "chalk", "cloud", "crane", "dream", "earth",
    "field", "flame", "fruit", "glass", "grape", "heart", "horse", "house", "juice", "knife",
    "lemon", "light", "money", "mouse", "music", "night", "ocean", "paper", "piano", "plant",
    "river", "salad", "sheep", "slate", "smile", "snake", "stone", "storm", "table", "tiger",
    "toast", "train", "water", "whale", "world",
)  # fmt: skip


def _stub_nltk_data(root: Path) -> dict[str, str]:
    """Write the two NLTK resources TextArena loads (the `words` corpus and the English
    perceptron tagger) as small stand-ins: the word list above, and a tagger with no
    weights whose only class is `NN`, so every word counts as a noun."""
    words = root / "corpora" / "words"
    words.mkdir(parents=True, exist_ok=True)
    for name in ("en", "en-basic"):
        (words / name).write_text("\n".join(_STUB_WORDS) + "\n", "ascii")
    tagger = root / "taggers" / "averaged_perceptron_tagger_eng"
    tagger.mkdir(parents=True, exist_ok=True)
    for suffix, value in (("weights", {}), ("tagdict", {}), ("classes", ["NN"])):
        (tagger / f"averaged_perceptron_tagger_eng.{suffix}.json").write_text(json.dumps(value), "utf-8")
    # TEXTARENA_DOWNLOAD_NLTK=0 skips the env's own download call; NLTK_DATA points NLTK
    # at the stand-ins (textarena itself still tries `nltk.download`, which fails offline
    # and falls back to what is there).
    return {"NLTK_DATA": str(root), "TEXTARENA_DOWNLOAD_NLTK": "0"}


def _stub_tokenizer(root: Path) -> dict[str, str]:
    """A word-level tokenizer over the word list above, saved as a local Hugging Face
    tokenizer: chat_env loads `TOKENIZER_NAME` (default gpt2, downloaded from the Hub)."""
    root.mkdir(parents=True, exist_ok=True)
    vocab = {"[UNK]": 0, **{word: i for i, word in enumerate(_STUB_WORDS, start=1)}}
    unknown = {
        "id": 0, "content": "[UNK]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
        "special": True,
    }  # fmt: skip
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [unknown],
        "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
        "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }  # fmt: skip
    (root / "tokenizer.json").write_text(json.dumps(tokenizer), "utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 4096}
    (root / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    return {"TOKENIZER_NAME": str(root), "HF_HUB_OFFLINE": "1"}


def _stub_finqa_data(root: Path) -> dict[str, str]:
    """A one-question stand-in for the FinQA data (SEC 10-K tables and questions that
    upstream downloads from the Hugging Face Hub): one company with one table."""
    questions = root / "benchmark_questions"
    questions.mkdir(parents=True, exist_ok=True)
    (questions / "finqa.csv").write_text(
        "id,user_query,company,question,answer,question_type,explanation\n"
        'q1,"What was example_corp\'s revenue in 2023, in millions of dollars?",example_corp,'
        "What was the revenue in 2023?,$420 million,lookup,From the income statement.\n",
        "utf-8",
    )
    company = root / "input_companies" / "example_corp"
    company.mkdir(parents=True, exist_ok=True)
    table = [{"item": "revenue", "2022": "380", "2023": "420"}, {"item": "net income", "2022": "40", "2023": "52"}]
    (company / "income_statement.json").write_text(json.dumps(table), "utf-8")
    statement = {"description": "Income statement, millions of dollars", "table": json.dumps(table)}
    cleaned = {"example_corp/income_statement": statement}
    (root / "input_companies" / "tables_cleaned_all_companies.json").write_text(json.dumps(cleaned), "utf-8")
    return {"FINQA_DATA_PATH": str(root)}


@dataclass(frozen=True)
class Setup:
    """What an env needs around it to start here."""

    env_vars: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path], dict[str, str]] | None = None
    """Makes stand-in data in a scratch folder; returns the env vars pointing at it."""
    note: str = ""
    run_in_env_dir: bool = False
    """Start from inside the env folder: apps doing `from models import ...` (a top-level
    import of the env's own module) only import there (uvicorn puts the cwd on sys.path)."""


_SETUPS: dict[str, Setup] = {
    "atari_env": Setup(
        env_vars={"ATARI_OBS_TYPE": "ram"},
        note="ATARI_OBS_TYPE=ram: 128-byte RAM observations instead of 100,800-value RGB frames, "
        "to keep the recording small; the schema is the same",
    ),
    "snake_env": Setup(
        run_in_env_dir=True,
        note="started from inside envs/snake_env: its app falls back to `from models import ...`, "
        "which imports only there",
    ),
    "websearch_env": Setup(
        run_in_env_dir=True,
        note="started from inside envs/websearch_env: its app does `from models import ...`, which imports only there",
    ),
    "finqa_env": Setup(
        prepare=_stub_finqa_data,
        note="stand-in data (one question, one company, one table) instead of the FinQA dataset from the Hub",
    ),
    "chat_env": Setup(
        prepare=_stub_tokenizer,
        note="stand-in tokenizer (word level, a small vocabulary) instead of gpt2 from the Hub: token ids differ",
    ),
    "textarena_env": Setup(
        prepare=_stub_nltk_data,
        note="stand-in NLTK data (a small word list and a tagger that tags every word NN): "
        "secret words differ from real Wordle; the schema is real",
    ),
}


def setup_for(env_folder: str) -> Setup:
    """What the upstream env folder `env_folder` needs to start here (nothing, for most)."""
    return _SETUPS.get(env_folder, Setup())
