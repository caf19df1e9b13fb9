"""Chapter 15's measurements ("Since 2017"): decoder-only translation with a masked prompt, a tiny scaling sweep,
and BERT fine-tuned.

``make since2017`` (``python -m transformer_lite.book.since2017``) trains every model on one CPU thread per run
(several runs at a time in a pool of :data:`WORKERS` processes) and writes the checkout's ``assets/since2017.json``;
the chapter reads the shipped numbers (:func:`since2017_results`).

* ``translation`` ("instruction tuning in miniature"): chapter 13's English -> Chinese grammar
  (:func:`.grammar_lab.size_split`: the same 500 held-out pairs for every size and seed) translated by a
  decoder-only :class:`~transformer_lite.language_models.LanguageModel` that reads one sequence
  ``<bos> English <sep> Chinese <eos>`` in one joint vocabulary (:func:`joint_vocab`). It is trained by next-token
  prediction with the labels of the prompt (everything up to and including ``<sep>``) set to
  :data:`~transformer_lite.language_models.IGNORE_INDEX`, so only the Chinese is scored (:func:`joint_examples`),
  and translates by greedy :func:`~transformer_lite.language_models.generate` from the prompt, cut at ``<eos>``
  (:func:`lm_translate`). It is compared with chapter 13's encoder-decoder Transformer
  (:func:`.capstone.train_model`) at about the same number of parameters (:data:`DECODER_ONLY`: chapter 13's layer,
  d_model 64, 4 heads, d_ff 128, stacked 5 deep; ``parameters`` stores both counts), the same steps and the same
  batch size (64 sentence pairs), by held-out exact match, on small training sets (:data:`TRANSLATION_SIZES`) where
  the models do not all reach 100 %. The ablation ``decoder_only_unmasked`` is the same model with the loss on the
  whole sequence (it also learns to predict the English).

  The learning recipe of the decoder-only model is the encoder-decoder's own, unchanged and untuned: the paper's
  Adam (beta2 0.98) with the recipe's warm-up schedule (d_model 64, 100 warm-up steps), label smoothing 0.1,
  dropout 0.1, and the same Post-LN ReLU layer. So the two models differ only in what the architecture is
  (one causal stack over one sequence vs an encoder, a decoder and cross-attention), plus what that brings
  (a joint vocabulary with a tied output layer, learned positions, GPT's N(0, 0.02) initialisation). Nothing was
  tuned for either model.

* ``scaling``: held-out loss (mean cross-entropy per token, nats) of a decoder-only LM of the grammar's English
  sentences (``<bos> English <eos>``; trained on all sentences but the 500 held-out ones of
  :func:`.grammar_lab.size_split`) against (a) model size (:data:`SCALING_WIDTHS` at depth :data:`SCALING_DEPTH`,
  :data:`SCALING_STEPS` steps: the same training tokens for every size) and (b) training steps
  (:data:`TOKEN_STEPS` at width :data:`TOKEN_WIDTH`). Every run: AdamW (lr :data:`SCALING_LR`, betas 0.9/0.95,
  weight decay 0.01), linear warm-up over the first 10 % of its steps, cosine decay to 10 % at its last step (the
  schedule fits the run's length, as in Chinchilla), batch :data:`SCALING_BATCH`, no dropout, GPT's Pre-LN / GELU.
  One learning rate for every size (not tuned per size). ``floor`` is the loss of a model that knows the grammar
  exactly: every English sentence equally likely, ln(number of sentences) per sentence, spread over its tokens;
  ``long_run`` is one larger model (:data:`LONG_RUN`) trained 15 times longer, for comparison with the floor.

* ``bert``: BERT fine-tuned. A tiny masked LM (:data:`BERT`, :func:`~transformer_lite.language_models.MaskedLM`) is
  pre-trained with BERT's corruption (:func:`~transformer_lite.language_models.mask_tokens`) on the grammar's English
  sentences (the test sentences left out); a [CLS]-style head (:class:`Classifier`: a Linear layer on the final
  hidden state at ``<bos>``) is then fine-tuned, every weight, on :data:`LABELLED` labelled sentences of a task
  derived from the grammar (:func:`tense_sentences`: the tense of an action sentence whose time words are removed,
  so the verb group alone tells it), against the same model fine-tuned from a fresh initialisation. Both use one
  recipe (AdamW, :data:`FINETUNE_STEPS` steps); the learning rate of each run is the best of :data:`FINETUNE_LRS`
  on a dev split of :data:`N_DEV` training sentences (``lr`` records the choice), never on the test.

* ``blocks``: today's block against the 2017 block (:data:`BLOCK_MODELS`), each as the decoder-only translator of
  ``translation`` on chapter 13b's real HSK pairs (:func:`real_joint_vocab`, :func:`block_model`: the same size within
  0.1 %, :func:`modern_ffn_width` sizing the SwiGLU), 3 seeds, scored by BLEU and chrF on the 425 test pairs; every
  test translation is stored, and :func:`block_bootstrap` compares the blocks seed by seed with the paired bootstrap
  over test sentences (:func:`~transformer_lite.metrics.paired_bootstrap`). ``make since2017 blocks`` runs it alone.

Every number is stored per seed (``per_seed``, in the order of :data:`SEEDS`) with its mean, min and max.
"""
from __future__ import annotations

import concurrent.futures
import copy
import json
import math
import multiprocessing
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence

import torch

from .._checks import check_instance, check_int, check_number, check_positive_int
from ..data import BOS, EOS, PAD, UNK, Vocab, all_translation_pairs, pad_batch, trim_padding
from ..language_models import IGNORE_INDEX, LanguageModel, MaskedLM, generate, mask_tokens
from ..masks import padding_mask
from ..metrics import characters, corpus_bleu, corpus_chrf, paired_bootstrap
from ..model import count_parameters
from ..modern import ModernLM
from ..training import History, label_smoothed_cross_entropy, optimization_step, paper_adam, warmup_scheduler
from . import grammar_lab, real_translator
from .capstone import new_model, train_model
from .i18n import N_
from .pretrained import ASSETS, RECIPE, _processor, output_path
from .runtime import num_threads

RESULTS = ASSETS / "since2017.json"

SEP = "<sep>"  # between the prompt (English) and the answer (Chinese)
SEEDS = (0, 1, 2)  # each seed draws its own training pairs and initialises its own models
WORKERS = 2  # runs at a time (one CPU thread each)

# -- experiment 1: decoder-only translation ---------------------------------------------------------
TRANSLATION_SIZES = (100, 200, 500)  # training pairs; chapter 13's curve: the Transformer is at 0.76 / 0.94 / ~0.98
TRANSLATION_STEPS = 300  # every model, every size (chapter 13's `longer` runs)
# Chapter 13's layer (d_model 64, 4 heads, d_ff 128, Post-LN, ReLU, dropout 0.1), stacked 5 deep: 180,672
# parameters against the encoder-decoder's 183,689 (2 + 2 layers, two vocabularies, cross-attention).
DECODER_ONLY = dict(d_model=64, nhead=4, num_layers=5, dim_feedforward=128, dropout=0.1, activation="relu",
                    norm_first=False, max_len=32)
PARAMETER_MARGIN = 0.05  # "about the same size": within 5 % of the encoder-decoder's count
TRANSLATION_MODELS = {"encoder_decoder": N_("encoder-decoder Transformer (chapter 13)"),   # display names: tr() them
                      "decoder_only": N_("decoder-only, loss on the Chinese only (prompt masked)"),
                      "decoder_only_unmasked": N_("decoder-only, loss on the whole sequence (English too)")}

# -- experiment 2: scaling --------------------------------------------------------------------------
SCALING_DEPTH = 2
SCALING_WIDTHS = (16, 24, 32, 48, 64)  # d_model; d_ff = 4 d_model; heads: d_model / 8
SCALING_STEPS = 200  # the size sweep's training steps (the same tokens for every size; at 400 the two largest
# widths are already within ~0.04 nats of the floor, so the size sweep trains for 200)
TOKEN_WIDTH = 32
TOKEN_STEPS = (50, 100, 200, 400, 800)
SCALING_BATCH = 32
SCALING_LR = 3e-3
LONG_RUN = dict(width=96, depth=3, steps=3000)  # one larger model trained long (seed 0): how close the floor is
# -- experiment 4: the 2017 block against today's, on real sentences --------------------------------------
# Chapter 13b's HSK pairs (real_translator.data_for(): the train split, its 425 test pairs, Chinese as characters),
# translated by a decoder-only model as in experiment 1. Both models: d_model 64, 4 heads, 4 layers, a tied output
# layer, N(0, 0.02) initialisation, no dropout (the modern block has none), and one recipe, 13b's: the paper's Adam
# and warm-up schedule (400 steps), label smoothing 0.1, batch 64, for BLOCK_STEPS steps, fixed before the first
# run and tuned for neither block (few steps: six runs on one shared CPU).
BLOCK_SIZE = dict(d_model=64, nhead=4, num_layers=4)
BLOCK_2017 = dict(dim_feedforward=256, dropout=0.0, activation="relu", norm_first=False, max_len=64)  # Post-LN,
# ReLU, learned positions (the paper's sinusoids have no weights; learned ones cost 64 x 64 parameters)
BLOCK_KV_HEADS = 2  # grouped-query attention: 4 query heads share 2 key/value heads
BLOCK_STEPS = 600
BLOCK_MODELS = {"block_2017": "the 2017 block: Post-LN LayerNorm, learned positions, ReLU FFN, multi-head attention",
                "modern": "today's block: Pre-RMSNorm, RoPE, SwiGLU FFN, grouped-query attention, no biases"}
BOOTSTRAP_DRAWS = 1000
EXPERIMENTS = ("translation", "scaling", "bert", "blocks")


# -- the joint sequences -------------------------------------------------------------------------

def joint_vocab() -> Vocab:
    """One vocabulary for both languages: the specials, ``<sep>`` (id 4), every English word, every Chinese word
    of the laboratory's grammar (the same words as :func:`.grammar_lab.size_split`'s vocabularies)."""
    pairs = all_translation_pairs(swaps=True)
    return Vocab([SEP] + [w for en, _ in pairs for w in en.split()] + [w for _, zh in pairs for w in zh.split()])


def _check_pairs(pairs):
    if isinstance(pairs, str) or not isinstance(pairs, (list, tuple)) or not pairs:
        raise TypeError(f"pairs must be a non-empty list of (English, Chinese) pairs, got {pairs!r:.60}")


def prompt_ids(sentence: str, vocab: Vocab) -> list[int]:
    """``<bos> English <sep>`` as ids: what the decoder-only translator reads before it writes the Chinese."""
    check_instance("sentence", sentence, str)
    check_instance("vocab", vocab, Vocab)
    if SEP not in vocab:
        raise ValueError(f"vocab must hold {SEP!r} (use joint_vocab()), got {vocab!r}")
    return [BOS, *vocab.encode(sentence), vocab.stoi[SEP]]


def joint_examples(pairs: Sequence[tuple[str, str]], vocab: Vocab, mask_prompt: bool = True):
    """Training sequences ``<bos> English <sep> Chinese <eos>`` and their labels.

    Returns ``(ids, labels)``, both (N, L), padded with PAD. ``labels`` is ``ids`` with :data:`IGNORE_INDEX` at the
    padding and at position 0 (``<bos>`` is never predicted), and, with ``mask_prompt``, at every position up to
    and including ``<sep>``: only the Chinese and ``<eos>`` are scored. A model predicts ``labels[:, 1:]`` from
    ``ids[:, :-1]`` (:func:`train_lm`).
    """
    _check_pairs(pairs)
    check_instance("vocab", vocab, Vocab)
    check_instance("mask_prompt", mask_prompt, bool)
    seqs, prompt_lengths = [], []
    for en, zh in pairs:
        p = prompt_ids(en, vocab)
        seqs.append(p + vocab.encode(zh) + [EOS])
        prompt_lengths.append(len(p))
    ids = pad_batch(seqs)  # (N, L)
    labels = ids.masked_fill(ids == PAD, IGNORE_INDEX)
    labels[:, 0] = IGNORE_INDEX
    if mask_prompt:
        positions = torch.arange(ids.shape[1])  # (L,)
        labels = labels.masked_fill(positions[None, :] < torch.tensor(prompt_lengths)[:, None], IGNORE_INDEX)
    return ids, labels


def sentence_examples(sentences: Sequence[str], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """``<bos> sentence <eos>`` (N, L) for the scaling sweep, and labels scoring every token after ``<bos>``."""
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not sentences:
        raise TypeError(f"sentences must be a non-empty list of str, got {sentences!r:.60}")
    check_instance("vocab", vocab, Vocab)
    ids = pad_batch([vocab.encode(s, add_bos_eos=True) for s in sentences])
    labels = ids.masked_fill(ids == PAD, IGNORE_INDEX)
    labels[:, 0] = IGNORE_INDEX
    return ids, labels


# -- training and translating -------------------------------------------------------------------------

def _check_lm(model):
    if not isinstance(model, (LanguageModel, ModernLM)):
        raise TypeError(f"model must be a LanguageModel or a modern.ModernLM, got {type(model).__name__}")


def train_lm(model: LanguageModel | ModernLM, ids: torch.Tensor, labels: torch.Tensor, *, steps: int, batch_size: int,
             optimizer: torch.optim.Optimizer, scheduler=None, smoothing: float = 0.0, seed: int = 0,
             clip_grad_norm: float | None = None) -> History:
    """Next-token prediction: ``steps`` updates on random mini-batches of ``batch_size`` rows of ``ids`` (N, L),
    scoring ``labels[:, 1:]`` (positions labelled :data:`IGNORE_INDEX` are not scored). Batches and dropout are
    seeded by ``seed`` (the caller's random state is left untouched), as in :func:`~transformer_lite.training.train`.
    """
    _check_lm(model)
    check_instance("ids", ids, torch.Tensor)
    check_instance("labels", labels, torch.Tensor)
    if ids.dim() != 2 or labels.shape != ids.shape:
        raise ValueError(f"ids and labels must both be (N, L) with the same shape, got {tuple(ids.shape)} and "
                         f"{tuple(labels.shape)}")
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    check_instance("optimizer", optimizer, torch.optim.Optimizer)
    check_int("seed", seed)
    history = History()
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        batches = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(steps):
            idx = torch.randint(0, ids.shape[0], (batch_size,), generator=batches)
            x = trim_padding(ids[idx], getattr(model, "pad_id", PAD), min_len=2)  # (B, L')
            y = labels[idx][:, :x.shape[1]]
            logits = model(x[:, :-1])  # (B, L'-1, V)
            loss = label_smoothed_cross_entropy(logits, y[:, 1:], smoothing, ignore_index=IGNORE_INDEX)
            optimization_step(model, loss, optimizer, scheduler, clip_grad_norm, history)
    history.seconds = time.perf_counter() - start
    return history


def new_decoder_only(vocab_size: int, seed: int = 0, **sizes) -> LanguageModel:
    """An untrained decoder-only translator (:data:`DECODER_ONLY`, overridden by ``sizes``), initialised with
    ``seed``."""
    check_positive_int("vocab_size", vocab_size)
    check_int("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LanguageModel(vocab_size, causal=True, **dict(DECODER_ONLY, **sizes))


def train_decoder_only(pairs: Sequence[tuple[str, str]], seed: int = 0, steps: int = TRANSLATION_STEPS,
                       mask_prompt: bool = True, **sizes) -> tuple[LanguageModel, Vocab, History]:
    """Train a decoder-only translator on ``pairs`` with the encoder-decoder's recipe (:data:`RECIPE`: the paper's
    Adam, its warm-up schedule, batch size 64, label smoothing); ``(model in eval mode, joint vocabulary, history)``."""
    _check_pairs(pairs)
    check_positive_int("steps", steps)
    vocab = joint_vocab()
    ids, labels = joint_examples(pairs, vocab, mask_prompt)
    model = new_decoder_only(len(vocab), seed, **sizes)
    optimizer = paper_adam(model.parameters())
    scheduler = warmup_scheduler(optimizer, RECIPE.model.d_model, RECIPE.warmup_steps, RECIPE.lr_factor)
    history = train_lm(model, ids, labels, steps=steps, batch_size=RECIPE.batch_size, optimizer=optimizer,
                       scheduler=scheduler, smoothing=RECIPE.smoothing, seed=seed)
    return model.eval(), vocab, history


def lm_translate(model: LanguageModel | ModernLM, vocab: Vocab, sentences: Sequence[str], max_new_tokens: int = 16,
                 use_cache: bool = True) -> list[str]:
    """Greedy translations by a decoder-only ``model``: each prompt ``<bos> English <sep>`` is extended token by
    token (:func:`~transformer_lite.language_models.generate`), and what follows ``<sep>`` up to ``<eos>`` is the
    translation. Prompts of one length run as one batch (no padding inside a prompt)."""
    _check_lm(model)
    check_instance("vocab", vocab, Vocab)
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise TypeError(f"sentences must be a list of English sentences, got {type(sentences).__name__}")
    check_positive_int("max_new_tokens", max_new_tokens)
    check_instance("use_cache", use_cache, bool)
    prompts = [prompt_ids(s, vocab) for s in sentences]
    out = [""] * len(prompts)
    for length in sorted({len(p) for p in prompts}):
        rows = [i for i, p in enumerate(prompts) if len(p) == length]
        ys = generate(model, torch.tensor([prompts[i] for i in rows]), max_new_tokens, eos_id=EOS,
                      use_cache=use_cache)
        for i, row in zip(rows, ys[:, length:].tolist()):
            out[i] = vocab.decode(row)  # stops at <eos>, skips padding
    return out


def parameter_counts(data=None) -> dict:
    """The two translators' parameters: the encoder-decoder's (chapter 13) and the decoder-only's
    (:data:`DECODER_ONLY`)."""
    data = grammar_lab.size_split(TRANSLATION_SIZES[0]) if data is None else data
    ed = count_parameters(new_model("transformer", data))
    do = count_parameters(new_decoder_only(len(joint_vocab())))
    return dict(encoder_decoder=ed, decoder_only=do, relative_difference=(do - ed) / ed)


# -- the two blocks on real sentences ------------------------------------------------------------------------

def real_joint_vocab(data=None) -> Vocab:
    """One vocabulary for 13b's pairs: the specials, ``<sep>`` (id 4), 13b's English words, its Chinese characters
    (each side's own vocabulary: a token seen fewer than twice in the train split reads as ``<unk>``)."""
    data = real_translator.data_for() if data is None else data
    return Vocab([SEP] + data.src_vocab.itos[4:] + data.tgt_vocab.itos[4:])


def modern_ffn_width(vocab_size: int) -> int:
    """The SwiGLU width that brings today's block to the 2017 model's parameter count (closest; :func:`block_model`)."""
    check_positive_int("vocab_size", vocab_size)
    target = count_parameters(block_model("block_2017", vocab_size))
    with torch.device("meta"):
        base = count_parameters(ModernLM(vocab_size, BLOCK_SIZE["d_model"], BLOCK_SIZE["nhead"], BLOCK_KV_HEADS,
                                         BLOCK_SIZE["num_layers"], 1, tie_embeddings=True))
    per_unit = 3 * BLOCK_SIZE["d_model"] * BLOCK_SIZE["num_layers"]  # three D x d_ff matrices per layer
    return 1 + round((target - base) / per_unit)


def block_model(kind: str, vocab_size: int, seed: int = 0):
    """An untrained decoder-only translator of ``kind`` (:data:`BLOCK_MODELS`): a :class:`LanguageModel` of the
    2017 block or a :class:`~transformer_lite.modern.ModernLM`, the same size, tied, N(0, 0.02) initialised."""
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, one of {list(BLOCK_MODELS)}, got {type(kind).__name__}")
    if kind not in BLOCK_MODELS:
        raise ValueError(f"kind must be one of {list(BLOCK_MODELS)}, got {kind!r}")
    check_positive_int("vocab_size", vocab_size)
    check_int("seed", seed)
    width = modern_ffn_width(vocab_size) if kind == "modern" else None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if kind == "block_2017":
            return LanguageModel(vocab_size, causal=True, **BLOCK_SIZE, **BLOCK_2017)
        model = ModernLM(vocab_size, BLOCK_SIZE["d_model"], BLOCK_SIZE["nhead"], BLOCK_KV_HEADS,
                         BLOCK_SIZE["num_layers"], width, tie_embeddings=True)
        for p in model.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.02)  # the same initialisation as LanguageModel's (GPT-2's)
        return model


def real_hypotheses(outputs: Sequence[str]) -> list[list[str]]:
    """Translations as 13b scores them: ``<unk>`` dropped, then cut into Chinese characters."""
    return [characters(" ".join(t for t in out.split() if t != "<unk>")) for out in outputs]


def block_bootstrap(runs: dict, refs: Sequence[Sequence[str]], draws: int = BOOTSTRAP_DRAWS) -> dict:
    """Today's block against the 2017 block, seed by seed: :func:`~transformer_lite.metrics.paired_bootstrap` over
    the test sentences of BLEU and chrF (seed i's modern model against seed i's 2017 model; draws seeded by i)."""
    out = {}
    for name, metric in (("bleu", corpus_bleu), ("chrf", corpus_chrf)):
        rows = []
        for i, (a, b) in enumerate(zip(runs["modern"], runs["block_2017"])):
            r = paired_bootstrap(metric, real_hypotheses(a), real_hypotheses(b), refs, n=draws, seed=i)
            rows.append({k: (100 * v if k != "a_wins" and isinstance(v, float) else
                             [100 * x for x in v] if isinstance(v, (list, tuple)) else v) for k, v in r.items()})
        out[name] = rows
    return out


# -- the scaling sweep's models --------------------------------------------------------------------------

def scaling_model(vocab_size: int, width: int, depth: int = SCALING_DEPTH, seed: int = 0) -> LanguageModel:
    """A GPT-style LM of the sweep: Pre-LN, GELU, no dropout, tied output, d_ff = 4 width, width / 8 heads."""
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("width", width, minimum=8)
    check_positive_int("depth", depth)
    check_int("seed", seed)
    if width % 8:
        raise ValueError(f"width must be a multiple of 8 (heads of 8 dimensions), got {width}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LanguageModel(vocab_size, width, width // 8, depth, 4 * width, causal=True, max_len=16)


def non_embedding_parameters(model: LanguageModel) -> int:
    """Parameters outside the token and position embeddings (Kaplan et al. 2020's N; the output layer is tied)."""
    check_instance("model", model, LanguageModel)
    embedding = {id(p) for m in (model.token_embedding, model.position) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedding and p.requires_grad)


@torch.no_grad()
def held_out_loss(model: LanguageModel, ids: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean cross-entropy (nats) per scored token of ``labels[:, 1:]`` given ``ids[:, :-1]``."""
    check_instance("model", model, LanguageModel)
    model.eval()
    logits = model(ids[:, :-1]).float()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                             ignore_index=IGNORE_INDEX).item()


def _cosine(optimizer, steps: int):
    warm = max(1, steps // 10)

    def factor(s):  # s = updates done so far
        if s < warm:
            return (s + 1) / warm
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def scaling_data():
    """``(vocab, train ids, train labels, test ids, test labels, floor)`` for the scaling sweep: the English side of
    :func:`.grammar_lab.size_split` (its 500 held-out sentences; every other sentence trains)."""
    pairs = all_translation_pairs()
    test = {en for en, _ in grammar_lab.size_split(1).test_pairs}
    vocab = Vocab(w for en, _ in all_translation_pairs(swaps=True) for w in en.split())
    train = [en for en, _ in pairs if en not in test]
    test_sentences = [en for en, _ in pairs if en in test]
    test_ids, test_labels = sentence_examples(test_sentences, vocab)
    n_tokens = int((test_labels != IGNORE_INDEX).sum())
    floor = len(test_sentences) * math.log(len(pairs)) / n_tokens  # uniform over the grammar's sentences
    return vocab, *sentence_examples(train, vocab), test_ids, test_labels, floor


# -- the runs (one process each, one thread) -----------------------------------------------------------

def _translation_run(kind: str, n: int, seed: int, steps: int = TRANSLATION_STEPS) -> dict:
    with num_threads(1):
        cpu = time.thread_time()
        data = grammar_lab.size_split(n, seed)
        if kind == "encoder_decoder":
            model, history = train_model("transformer", data, seed=seed, steps=steps)
            outputs = grammar_lab.translate(model, data)
        else:
            model, vocab, history = train_decoder_only(data.train_pairs, seed, steps, kind == "decoder_only")
            outputs = lm_translate(model, vocab, [en for en, _ in data.test_pairs])
            # the KV cache changes nothing: the first 100 translations again, re-reading the whole prefix every step
            cache_checked = outputs[:100] == lm_translate(model, vocab, [en for en, _ in data.test_pairs[:100]],
                                                          use_cache=False)
        right = [o == zh for o, (_, zh) in zip(outputs, data.test_pairs)]
        return dict(accuracy=sum(right) / len(right), parameters=count_parameters(model),
                    cache_equals_no_cache=None if kind == "encoder_decoder" else cache_checked,
                    final_loss=statistics.fmean(history.loss[-20:]), cpu_seconds=time.thread_time() - cpu,
                    examples=[[en, zh, o] for o, (en, zh) in zip(outputs, data.test_pairs)][:3])


def _scaling_run(width: int, steps: int, seed: int, depth: int = SCALING_DEPTH) -> dict:
    with num_threads(1):
        cpu = time.thread_time()
        vocab, ids, labels, test_ids, test_labels, _ = scaling_data()
        model = scaling_model(len(vocab), width, depth, seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=SCALING_LR, betas=(0.9, 0.95), weight_decay=0.01)
        train_lm(model, ids, labels, steps=steps, batch_size=SCALING_BATCH, optimizer=optimizer,
                 scheduler=_cosine(optimizer, steps), seed=seed)
        # tokens seen: the scored tokens of the batches drawn (the same generator as train_lm's)
        g = torch.Generator().manual_seed(seed)
        scored = (labels != IGNORE_INDEX).sum(dim=1)
        tokens = sum(int(scored[torch.randint(0, ids.shape[0], (SCALING_BATCH,), generator=g)].sum())
                     for _ in range(steps))
        return dict(loss=held_out_loss(model, test_ids, test_labels), tokens=tokens,
                    non_embedding_parameters=non_embedding_parameters(model), parameters=count_parameters(model),
                    cpu_seconds=time.thread_time() - cpu)


# -- experiment 3: BERT fine-tuned ----------------------------------------------------------------------
MASK = "<mask>"
BERT = dict(d_model=64, nhead=4, num_layers=2, max_len=16)  # MaskedLM: Pre-LN, GELU, no dropout, tied output
PRETRAIN_STEPS = 1500
PRETRAIN_LR = 1e-3
FINETUNE_STEPS = 200
FINETUNE_LRS = (1e-4, 3e-4, 1e-3)  # each model (pre-trained or fresh), k and seed takes the best on the dev split
N_DEV = 200  # labelled sentences, apart from the training ones, on which the fine-tuning learning rate is chosen
LABELLED = (8, 32, 128)  # labelled training sentences
N_CLASSIFY_TEST_PAIRS = 100  # swap pairs held out: 200 test sentences, half of each label
TENSES = (N_("past"), N_("present"), N_("future"))  # the classes; shown through tr()
TIME_WORDS = ("yesterday", "tomorrow", "today", "every day")
N_CLASSIFY_TEST = 300


def strip_time(sentence: str) -> str:
    """``sentence`` without its time words (:data:`TIME_WORDS`): "he ate rice yesterday" -> "he ate rice"."""
    check_instance("sentence", sentence, str)
    words, out, i = sentence.split(), [], 0
    while i < len(words):
        if words[i:i + 2] == ["every", "day"]:
            i += 2
            continue
        if words[i] not in TIME_WORDS:
            out.append(words[i])
        i += 1
    return " ".join(out)


def tense_sentences() -> list[tuple[str, int]]:
    """The classification task: the tense (index into :data:`TENSES`) of the grammar's action sentences with their time
    words removed (:func:`strip_time`), so the verb group alone tells it: "he ate rice at home" (past), "he will eat
    rice" (future), "he eats rice" (present). A few labelled sentences show only some of the past forms (ate, drank,
    wrote, bought, ...); which ones are past is what unlabelled text can teach (they occur with "yesterday").
    Sentences whose stripped form would have two tenses ("i read books") are left out. In the grammar's order."""
    labels = {}
    for en, _ in all_translation_pairs():
        words = en.split()
        if "have" in words or "has" in words or "is" in words:  # the have- and adjective-sentences: no tense
            continue
        tense = 0 if "yesterday" in words else 2 if "tomorrow" in words else 1
        labels.setdefault(strip_time(en), set()).add(tense)
    return [(s, next(iter(t))) for s, t in labels.items() if len(t) == 1]


def classification_split(seed: int = 0):
    """``(train, test)``: :data:`N_CLASSIFY_TEST` sentences of :func:`tense_sentences` held out (drawn with the fixed
    seed 0: the same test for every seed); ``train`` the others, shuffled with ``seed``."""
    check_int("seed", seed)
    sentences = tense_sentences()
    random.Random(0).shuffle(sentences)
    test, train = sentences[:N_CLASSIFY_TEST], sentences[N_CLASSIFY_TEST:]
    random.Random(seed).shuffle(train)
    return train, test


def bert_vocab() -> Vocab:
    """The masked LM's vocabulary: the specials, ``<mask>`` (id 4) and every English word (swaps included)."""
    return Vocab([MASK] + [w for en, _ in all_translation_pairs(swaps=True) for w in en.split()])


class Classifier(torch.nn.Module):
    """A [CLS]-style classifier: ``body`` (a :class:`LanguageModel` without its causal mask) reads
    ``<bos> sentence <eos>``; a Linear layer maps the final hidden state at ``<bos>`` (the [CLS] position) to
    ``num_classes`` logits. Shape: ids (B, L) -> logits (B, num_classes)."""

    def __init__(self, body: LanguageModel, num_classes: int = 2):
        super().__init__()
        check_instance("body", body, LanguageModel)
        check_positive_int("num_classes", num_classes, minimum=2)
        if body.causal:
            raise ValueError("body must be bidirectional (causal=False), got a causal LanguageModel")
        self.body = body
        self.head = torch.nn.Linear(body.d_model, num_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b = self.body
        x = b.position(b.token_embedding(ids))  # (B, L, D)
        h = b.layers(x, src_key_padding_mask=padding_mask(ids, b.pad_id))  # (B, L, D), no causal mask
        return self.head(h[:, 0])  # (B, D) -> (B, num_classes)


def pretrain_masked_lm(sentences: Sequence[str], seed: int = 0, steps: int = PRETRAIN_STEPS) -> LanguageModel:
    """A :func:`~transformer_lite.language_models.MaskedLM` (:data:`BERT`) trained with BERT's corruption
    (:func:`~transformer_lite.language_models.mask_tokens`) on ``sentences``: AdamW (lr :data:`PRETRAIN_LR`,
    10 % warm-up, cosine to 10 %), batch 64."""
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not sentences:
        raise TypeError(f"sentences must be a non-empty list of str, got {sentences!r:.60}")
    check_int("seed", seed)
    check_positive_int("steps", steps)
    vocab = bert_vocab()
    ids, _ = sentence_examples(list(sentences), vocab)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MaskedLM(len(vocab), **BERT)
    optimizer = torch.optim.AdamW(model.parameters(), lr=PRETRAIN_LR, betas=(0.9, 0.98), weight_decay=0.01)
    scheduler = _cosine(optimizer, steps)
    g = torch.Generator().manual_seed(seed)
    history = History()  # every step's loss and learning rate (not returned)
    model.train()
    for _ in range(steps):
        batch = trim_padding(ids[torch.randint(0, ids.shape[0], (64,), generator=g)])
        inputs, labels = mask_tokens(batch, mask_id=vocab.stoi[MASK], vocab_size=len(vocab),
                                     special_ids=(PAD, BOS, EOS, UNK), generator=g)
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE_INDEX)
        optimization_step(model, loss, optimizer, scheduler, None, history)
    return model.eval()


def fine_tune(body: LanguageModel, examples: Sequence[tuple[str, int]], seed: int = 0,
              steps: int = FINETUNE_STEPS, lr: float = 3e-4) -> Classifier:
    """A :class:`Classifier` on ``body`` (a copy; pre-trained or not), every weight trained on the labelled
    ``examples`` for ``steps`` steps: AdamW (``lr``, 10 % warm-up, cosine to 10 %), batches of
    up to 32, dropout none. The same recipe for a pre-trained body and a fresh one."""
    check_instance("body", body, LanguageModel)
    if isinstance(examples, str) or not isinstance(examples, (list, tuple)) or not examples:
        raise TypeError(f"examples must be a non-empty list of (sentence, label) pairs, got {examples!r:.60}")
    check_int("seed", seed)
    check_positive_int("steps", steps)
    check_number("lr", lr, positive=True)
    vocab = bert_vocab()
    ids, _ = sentence_examples([s for s, _ in examples], vocab)
    y = torch.tensor([label for _, label in examples])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Classifier(copy.deepcopy(body), len(TENSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    scheduler = _cosine(optimizer, steps)
    g = torch.Generator().manual_seed(seed)
    history = History()  # every step's loss and learning rate (not returned)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(examples), (min(32, len(examples)),), generator=g)
        loss = torch.nn.functional.cross_entropy(model(trim_padding(ids[idx])), y[idx])
        optimization_step(model, loss, optimizer, scheduler, None, history)
    return model.eval()


@torch.no_grad()
def accuracy(model: Classifier, examples: Sequence[tuple[str, int]]) -> float:
    """The share of ``examples`` (sentence, label) that ``model`` labels right."""
    check_instance("model", model, Classifier)
    ids, _ = sentence_examples([s for s, _ in examples], bert_vocab())
    pred = model.eval()(ids).argmax(-1)
    return (pred == torch.tensor([label for _, label in examples])).float().mean().item()


def _bert_run(seed: int, labelled=LABELLED, pretrain_steps: int = PRETRAIN_STEPS,
              finetune_steps: int = FINETUNE_STEPS) -> dict:
    with num_threads(1):
        cpu = time.thread_time()
        train, test = classification_split(seed)
        held_out = {s for s, _ in test}
        corpus = [en for en, _ in all_translation_pairs(swaps=True) if strip_time(en) not in held_out]  # unlabelled
        pretrained = pretrain_masked_lm(corpus, seed, pretrain_steps)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            fresh = MaskedLM(len(bert_vocab()), **BERT)
        out = dict(pretrain_cpu_seconds=time.thread_time() - cpu)
        dev, pool = train[:N_DEV], train[N_DEV:]
        for k in labelled:
            for name, body in (("pretrained", pretrained), ("scratch", fresh)):
                models = {lr: fine_tune(body, pool[:k], seed, finetune_steps, lr) for lr in FINETUNE_LRS}
                dev_acc = {lr: accuracy(m, dev) for lr, m in models.items()}
                best = max(FINETUNE_LRS, key=lambda lr: dev_acc[lr])  # ties: the smallest learning rate
                out[f"{name}_{k}"] = accuracy(models[best], test)
                out[f"{name}_{k}_lr"], out[f"{name}_{k}_dev"] = best, dev_acc[best]
        out["cpu_seconds"] = time.thread_time() - cpu
        return out


def run_bert(workers: int = WORKERS, log=print, seeds=SEEDS, labelled=LABELLED) -> dict:
    runs = _run_all([("bert", dict(seed=s, labelled=labelled)) for s in seeds], workers, log)
    train, test = classification_split(0)
    return dict(task="the tense (past, present, future) of an action sentence without its time words",
                tenses=list(TENSES), n_sentences=len(tense_sentences()),
                test_shares={t: sum(label == i for _, label in test) / len(test) for i, t in enumerate(TENSES)},
                n_test=len(test), labelled=list(labelled), model=BERT,
                pretrain=dict(steps=PRETRAIN_STEPS, lr=PRETRAIN_LR, batch_size=64,
                              corpus="the English sentences of the grammar (swaps too), minus every sentence whose "
                                     "time-stripped form is a test sentence"),
                finetune=dict(steps=FINETUNE_STEPS, lrs=list(FINETUNE_LRS), batch_size=32, n_dev=N_DEV,
                              note="the same recipe for the pre-trained and the fresh body; the learning rate of each "
                                   "run is the best of lrs on a dev split of the training sentences (not the test)"),
                results={name: {str(k): dict(accuracy=_stats([r[f"{name}_{k}"] for r in runs]),
                                             lr=[r[f"{name}_{k}_lr"] for r in runs],
                                             dev_accuracy=_stats([r[f"{name}_{k}_dev"] for r in runs]))
                                for k in labelled} for name in ("pretrained", "scratch")},
                cpu_seconds=_stats([r["cpu_seconds"] for r in runs]))


def _run_all(jobs: list, workers: int, log) -> list:
    """Every job's result, in the order of ``jobs``; ``workers`` processes at a time (1: here, one after another)."""
    def report(job, result):
        log(f"  {job[0]} {job[1]}: " + ", ".join(f"{k} {v:.4g}" for k, v in result.items()
                                                     if isinstance(v, (int, float))))
        return result

    if workers == 1:
        return [report(j, _call(j)) for j in jobs]
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds torch's thread pools
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = [pool.submit(_call, j) for j in jobs]
        return [report(j, f.result()) for j, f in zip(jobs, futures)]


def _stats(values: list) -> dict:
    return dict(per_seed=values, mean=statistics.fmean(values), min=min(values), max=max(values))


def run_translation(workers: int = WORKERS, log=print, sizes=TRANSLATION_SIZES, seeds=SEEDS,
                    steps: int = TRANSLATION_STEPS) -> dict:
    jobs = [("translation", dict(kind=k, n=n, seed=s, steps=steps))
            for n in sizes for k in TRANSLATION_MODELS for s in seeds]
    runs = iter(_run_all(jobs, workers, log))
    results = {}
    for n in sizes:
        for kind in TRANSLATION_MODELS:
            rs = [next(runs) for _ in seeds]
            results.setdefault(kind, {})[str(n)] = dict(
                accuracy=_stats([r["accuracy"] for r in rs]), final_loss=_stats([r["final_loss"] for r in rs]),
                cpu_seconds=_stats([r["cpu_seconds"] for r in rs]), examples=rs[0]["examples"])
            if kind != "encoder_decoder":
                results[kind][str(n)]["cache_equals_no_cache"] = [r["cache_equals_no_cache"] for r in rs]
            parameters = rs[0]["parameters"]
            results[kind]["parameters"] = parameters
    counts = {k: results[k]["parameters"] for k in TRANSLATION_MODELS}
    return dict(sizes=list(sizes), steps=steps, batch_size=RECIPE.batch_size, n_test=grammar_lab.N_CURVE_TEST,
                models=TRANSLATION_MODELS, decoder_only=DECODER_ONLY, joint_vocabulary=len(joint_vocab()),
                parameters=dict(counts, relative_difference=(counts["decoder_only"] - counts["encoder_decoder"])
                                / counts["encoder_decoder"], margin=PARAMETER_MARGIN),
                recipe="both models: the paper's Adam (0.9, 0.98, 1e-9), warm-up schedule (d_model 64, 100 steps), "
                       "label smoothing 0.1, dropout 0.1, batch 64; nothing tuned",
                results=results)


def run_scaling(workers: int = WORKERS, log=print, widths=SCALING_WIDTHS, token_steps=TOKEN_STEPS, seeds=SEEDS,
                steps: int = SCALING_STEPS, token_width: int = TOKEN_WIDTH, long_run: bool = True) -> dict:
    jobs = ([("scaling", dict(LONG_RUN, seed=SEEDS[0]))] if long_run else []) + (
            [("scaling", dict(width=w, steps=steps, seed=s)) for w in widths for s in seeds]
            + [("scaling", dict(width=token_width, steps=t, seed=s)) for t in token_steps for s in seeds])
    runs = iter(_run_all(jobs, workers, log))
    long = dict(LONG_RUN, **next(runs)) if long_run else None

    def rows(keys):
        out = {}
        for key in keys:
            rs = [next(runs) for _ in seeds]
            out[str(key)] = dict(loss=_stats([r["loss"] for r in rs]), tokens=_stats([r["tokens"] for r in rs]),
                                 non_embedding_parameters=rs[0]["non_embedding_parameters"],
                                 parameters=rs[0]["parameters"], cpu_seconds=_stats([r["cpu_seconds"] for r in rs]))
        return out
    size = rows(widths)
    tokens = rows(token_steps)
    *_, test_labels, floor = scaling_data()
    return dict(floor=floor, n_test_tokens=int((test_labels != IGNORE_INDEX).sum()),
                n_sentences=len(all_translation_pairs()), depth=SCALING_DEPTH, batch_size=SCALING_BATCH,
                lr=SCALING_LR, optimizer="AdamW (0.9, 0.95), weight decay 0.01, 10 % linear warm-up, cosine to 10 %",
                size=dict(widths=list(widths), steps=steps, results=size),
                tokens=dict(width=token_width, steps=list(token_steps), results=tokens), long_run=long)


def _blocks_run(kind: str, seed: int, steps: int = BLOCK_STEPS) -> dict:
    with num_threads(1):
        cpu = time.thread_time()
        data = real_translator.data_for()
        vocab = real_joint_vocab(data)
        ids, labels = joint_examples(data.train_pairs, vocab, mask_prompt=True)
        model = block_model(kind, len(vocab), seed)
        recipe = real_translator.REAL_RECIPE
        optimizer = paper_adam(model.parameters())
        scheduler = warmup_scheduler(optimizer, BLOCK_SIZE["d_model"], recipe.warmup_steps, recipe.lr_factor)
        history = train_lm(model, ids, labels, steps=steps, batch_size=recipe.batch_size, optimizer=optimizer,
                           scheduler=scheduler, smoothing=recipe.smoothing, seed=seed)
        model.eval()
        outputs = lm_translate(model, vocab, [en for en, _ in data.test_pairs],
                               max_new_tokens=2 * data.test_tgt.shape[1])
        hyps = real_hypotheses(outputs)
        refs = [characters(zh) for _, zh in data.test_pairs]
        return dict(bleu=100 * corpus_bleu(hyps, refs).score, chrf=100 * corpus_chrf(hyps, refs).score,
                    final_loss=statistics.fmean(history.loss[-50:]), first_loss=history.loss[0],
                    parameters=count_parameters(model), outputs=outputs, cpu_seconds=time.thread_time() - cpu)


# One run of each experiment, by the name a job carries (a worker process receives the name, not the function).
_RUNS = dict(translation=_translation_run, scaling=_scaling_run, bert=_bert_run, blocks=_blocks_run)


def _call(job):
    name, kwargs = job
    return _RUNS[name](**kwargs)


def run_blocks(workers: int = WORKERS, log=print, seeds=SEEDS, steps: int = BLOCK_STEPS) -> dict:
    jobs = [("blocks", dict(kind=k, seed=s, steps=steps)) for k in BLOCK_MODELS for s in seeds]
    runs = iter(_run_all(jobs, workers, log))
    return assemble_blocks({k: [next(runs) for _ in seeds] for k in BLOCK_MODELS}, steps)


def assemble_blocks(by_kind: dict, steps: int = BLOCK_STEPS) -> dict:
    """The ``blocks`` record from the runs (``{kind: [one _blocks_run result per seed]}``), with the bootstrap."""
    data = real_translator.data_for()
    refs = [characters(zh) for _, zh in data.test_pairs]
    vocab_size = len(real_joint_vocab(data))
    results = {k: dict(bleu=_stats([r["bleu"] for r in rs]), chrf=_stats([r["chrf"] for r in rs]),
                       final_loss=_stats([r["final_loss"] for r in rs]),
                       first_loss=_stats([r["first_loss"] for r in rs]),
                       cpu_seconds=_stats([r["cpu_seconds"] for r in rs]), parameters=rs[0]["parameters"],
                       translations=[r["outputs"] for r in rs])
               for k, rs in by_kind.items()}
    counts = {k: results[k]["parameters"] for k in BLOCK_MODELS}
    recipe = real_translator.REAL_RECIPE
    return dict(data="chapter 13b's HSK pairs: the train split, scored on the 425 test pairs (Chinese characters)",
                n_train=len(data.train_pairs), n_test=len(data.test_pairs), joint_vocabulary=vocab_size,
                steps=steps, batch_size=recipe.batch_size, warmup_steps=recipe.warmup_steps,
                smoothing=recipe.smoothing, models=BLOCK_MODELS, size=BLOCK_SIZE, block_2017=BLOCK_2017,
                kv_heads=BLOCK_KV_HEADS, modern_ffn=modern_ffn_width(vocab_size),
                parameters=dict(counts, relative_difference=(counts["modern"] - counts["block_2017"])
                                / counts["block_2017"]),
                recipe="both blocks: 13b's recipe (the paper's Adam, warm-up 400 steps, label smoothing 0.1, "
                       "batch 64), no dropout, N(0, 0.02) initialisation, a tied output layer; nothing tuned",
                results=results, bootstrap=block_bootstrap({k: results[k]["translations"] for k in BLOCK_MODELS},
                                                           refs))

def measure(workers: int = WORKERS, log=print, only: Sequence[str] | None = None, done=None) -> dict:
    """Every experiment (``only``: some of :data:`EXPERIMENTS`); ``done(results)`` after each one."""
    check_positive_int("workers", workers)
    if only is not None and not set(only) <= set(EXPERIMENTS):
        raise ValueError(f"only must name experiments among {list(EXPERIMENTS)}, got {list(only)}")
    results = {}
    for name, run in dict(translation=run_translation, scaling=run_scaling, bert=run_bert, blocks=run_blocks).items():
        if only is None or name in only:
            start = time.perf_counter()
            log(f"{name}:")
            results[name] = run(workers, log)
            results[name]["seconds"] = round(time.perf_counter() - start, 1)
            if done is not None:
                done(_describe(results, workers))
    return _describe(results, workers)


def _describe(results: dict, workers: int) -> dict:
    return dict(results, command="make since2017", seeds=list(SEEDS), threads=1, workers=workers,
                torch=torch.__version__, processor=_processor(), machine=platform.machine(),
                python=platform.python_version())


def since2017_results() -> dict:
    """The numbers ``make since2017`` measured, shipped with the package."""
    if not RESULTS.exists():
        raise FileNotFoundError(f"{RESULTS} is missing; run `make since2017` in the repository to create it")
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def write_results(workers: int = WORKERS, log=print, only: Sequence[str] | None = None, *, out) -> dict:
    """Measure the experiments and write them to ``out`` (what ``make since2017`` runs, with ``out`` the checkout's
    ``transformer_lite/book/assets/since2017.json``: :data:`RESULTS` is where the package reads it); with ``only``,
    the other experiments' results already in ``out`` are kept."""
    out = output_path("out", out)
    kept = {}
    if only is not None and out.exists():
        kept = {k: v for k, v in json.loads(out.read_text(encoding="utf-8")).items()
                if k in EXPERIMENTS and k not in only}

    def write(results):
        results = dict(kept, **results)
        results["total_seconds"] = round(sum(results[k]["seconds"] for k in EXPERIMENTS if k in results), 1)
        out.write_text(json.dumps(grammar_lab._round(results), indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")

    results = measure(workers, log, only, done=write)
    write(results)
    return json.loads(out.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    """``make since2017``: measure chapter 15's experiments (or only those named) and write them to ``--out``."""
    # through the imported module, not __main__: the worker processes then unpickle the same functions
    from transformer_lite.book import since2017
    from transformer_lite.book.pretrained import experiments_main

    return experiments_main(argv, prog="transformer_lite.book.since2017", target="since2017",
                            asset="since2017.json", experiments=EXPERIMENTS, write_results=since2017.write_results)


if __name__ == "__main__":  # make since2017
    sys.exit(main())
