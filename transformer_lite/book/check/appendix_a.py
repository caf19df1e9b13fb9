"""Checks of appendix A's exercises (Transformers for vision).

The checks compare the reader's code with ``transformer_lite.vision`` on random images they draw
themselves. Exercise A.5 is about models trained live in the notebook: its check asks only what
every run shows, with a margin (measured over seeds and CPU code paths, see the notes there).
"""
from __future__ import annotations

import torch

import transformer_lite as tl
from transformer_lite.vision import PatchEncoder, patchify, sinusoidal_positional_encoding_2d

from . import Wrong, call, close, exercise, number

# ---- A.1: how many tokens? ------------------------------------------------------------------------

_SIZE, _P, _C = 224, 14, 3


def _counts() -> tuple[int, int, int]:
    """(patches, encoder input length, numbers per patch), read off the package's own tensors."""
    with torch.random.fork_rng():  # a check must not move the notebook's random numbers
        model = PatchEncoder(_SIZE, _P, _C, num_classes=2, d_model=8, nhead=2, num_layers=1, dim_feedforward=8)
    images = torch.zeros(1, _C, _SIZE, _SIZE)
    patches = patchify(images, _P)  # (1, N, C*P*P)
    with torch.no_grad():
        z0 = model.tokens(images)  # (1, N + 1, D)
    return patches.shape[1], z0.shape[1], patches.shape[2]


@exercise("A.1", wrong=[lambda: (256, 256, 588),      # forgot the [class] token
                        lambda: (256, 257, 196),      # forgot the colour channels
                        lambda: (16, 17, 588),        # patches per row, not per image
                        lambda: (3584, 3585, 588)])   # H*W / P instead of H*W / P^2
def exercise_A_1(my_num_patches, my_sequence_length, my_patch_numbers):
    n, length, numbers = _counts()
    number(my_num_patches, n, "my_num_patches", abs_=0.5,
           hint="the image is cut into (H/P) rows × (W/P) columns of patches, so N = HW/P².")
    number(my_patch_numbers, numbers, "my_patch_numbers", abs_=0.5,
           hint="a patch is P × P pixels, and every pixel has C colour channels.")
    number(my_sequence_length, length, "my_sequence_length", abs_=0.5,
           hint="ViT puts one more token in front of the patches (equation 1): what the classifier reads.")
    return f"a {_SIZE}×{_SIZE} RGB image with P = {_P}: {n} patches of {numbers} numbers; the encoder reads {length} tokens."


# ---- A.2: patchify by hand ------------------------------------------------------------------------

def _naive_reshape(images, P):
    B, C, H, W = images.shape
    return images.reshape(B, (H // P) * (W // P), C * P * P)


def _channel_last(images, P):
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 3, 5, 1)  # each patch flattened (P, P, C)
    return x.reshape(B, (H // P) * (W // P), C * P * P)


def _column_major(images, P):
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).permute(0, 4, 2, 1, 3, 5)  # patches column by column
    return x.reshape(B, (H // P) * (W // P), C * P * P)


@exercise("A.2", wrong=[lambda: (_naive_reshape,), lambda: (_channel_last,), lambda: (_column_major,)])
def exercise_A_2(my_patchify):
    g = torch.Generator().manual_seed(0)
    for shape, P in (((2, 3, 32, 48), 8), ((1, 1, 16, 16), 4), ((3, 2, 8, 12), 4)):
        images = torch.randn(*shape, generator=g)
        expected = patchify(images, P)
        out = call(my_patchify, images.clone(), P, name=f"my_patchify(images, {P})")
        close(out, expected, f"my_patchify(images of shape {shape}, {P})", atol=0, rtol=0,
              hint="patch n sits at grid row n // (W/P), column n % (W/P) (reading order, row by row), and each patch "
                   "is flattened channel by channel, as a (C, P, P) block. A plain reshape of (B, C, H, W) mixes "
                   "pixels of different patches: split H and W first, then permute, then reshape.")
    return "your patches equal transformer_lite.vision.patchify on three image shapes (non-square, 1 to 3 channels)."


# ---- A.3: equation 1 by hand ----------------------------------------------------------------------

def _a3_model():
    with torch.random.fork_rng():  # a check must not move the notebook's random numbers
        torch.manual_seed(0)
        model = PatchEncoder(32, 8, 3, num_classes=4, d_model=16, nhead=2, num_layers=1, dim_feedforward=16,
                             positional="learned").eval()
        with torch.no_grad():
            model.cls_token.normal_()  # trained models have a non-zero [class] token; make the test see it
    return model


def _class_last(model, images):
    x = model.patch_embed(images)
    return torch.cat([x, model.cls_token.expand(len(x), -1, -1)], dim=1) + model.pos


def _class_without_position(model, images):
    x = model.patch_embed(images) + model.pos[:, 1:]
    return torch.cat([model.cls_token.expand(len(x), -1, -1), x], dim=1)


def _no_positions(model, images):
    x = model.patch_embed(images)
    return torch.cat([model.cls_token.expand(len(x), -1, -1), x], dim=1)


@exercise("A.3", wrong=[lambda: (_class_last,), lambda: (_class_without_position,), lambda: (_no_positions,)])
def exercise_A_3(my_tokens):
    model = _a3_model()
    images = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model.tokens(images)
        out = call(my_tokens, model, images, name="my_tokens(model, images)")
    close(out, expected, "my_tokens(model, images)", atol=1e-6,
          hint="z_0 = [x_class; x_p^1 E; …; x_p^N E] + E_pos: the [class] token goes FIRST, and E_pos has N + 1 rows, "
               "one for the [class] token too (with learned positions it is not zero). Use model.patch_embed, "
               "model.cls_token (1, 1, D) expanded to the batch, and model.pos (1, N + 1, D).")
    return "your z_0 equals PatchEncoder.tokens (learned positions, non-zero [class] token)."


# ---- A.4: 2-D positions by hand -------------------------------------------------------------------

def _column_first(rows, cols, d_model):
    pe = sinusoidal_positional_encoding_2d(rows, cols, d_model)
    return torch.cat([pe[:, d_model // 2:], pe[:, : d_model // 2]], dim=-1)


def _interleaved(rows, cols, d_model):
    pe = sinusoidal_positional_encoding_2d(rows, cols, d_model)
    return torch.stack([pe[:, : d_model // 2], pe[:, d_model // 2:]], dim=-1).flatten(1)


def _reading_order(rows, cols, d_model):
    return tl.sinusoidal_positional_encoding(rows * cols, d_model)


@exercise("A.4", wrong=[lambda: (_column_first,), lambda: (_interleaved,), lambda: (_reading_order,)])
def exercise_A_4(my_pe_2d):
    for rows, cols, d_model in ((3, 5, 16), (4, 4, 64), (2, 7, 8)):
        expected = sinusoidal_positional_encoding_2d(rows, cols, d_model)
        out = call(my_pe_2d, rows, cols, d_model, name=f"my_pe_2d({rows}, {cols}, {d_model})")
        close(out, expected, f"my_pe_2d({rows}, {cols}, {d_model})", atol=1e-6,
              hint="the first D/2 dimensions are the 1-D table (width D/2) of the patch's ROW, the last D/2 the "
                   "table of its COLUMN, side by side (torch.cat on the last dimension); patches in reading order, "
                   "so patch n is at row n // cols, column n % cols.")
    return "your 2-D table equals sinusoidal_positional_encoding_2d for three grids (square and not)."


# ---- A.5: how much do positions matter? (trained live) ---------------------------------------------
# Measured (150 steps of the appendix's loop, 1000 test images): without positions 0.23-0.27, with 1-D
# positions 0.61-0.78, with 2-D positions 0.92-0.99, over seeds 0-5 natively and 0-3 with
# ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE. A position-free model cannot beat guessing by much:
# swapping the two dots' patches flips the label and leaves its output unchanged. The margins below are wide.

def _accuracies(my_accuracy):
    try:
        acc = {key: float(my_accuracy[key]) for key in (None, "1d", "2d")}
    except KeyError as e:
        raise Wrong(f"my_accuracy should have the keys None, '1d' and '2d'; {e.args[0]!r} is missing.") from None
    except (TypeError, ValueError):
        raise Wrong(f"my_accuracy should be a dict {{None: …, '1d': …, '2d': …}} of accuracies, "
                    f"got {type(my_accuracy).__name__}.") from None
    if not all(0.0 <= a <= 1.0 for a in acc.values()):
        raise Wrong(f"accuracies are fractions between 0 and 1, got {acc}.",
                    hint="divide percentages by 100: 25% is 0.25.")
    return acc


@exercise("A.5", wrong=[lambda: ({None: 25.0, "1d": 66.0, "2d": 97.0},),     # percentages
                        lambda: ({None: 0.90, "1d": 0.66, "2d": 0.97},),      # a position-free model cannot see this
                        lambda: ({None: 0.25, "1d": 0.25, "2d": 0.25},)])     # nothing was trained
def exercise_A_5(my_accuracy):
    acc = _accuracies(my_accuracy)
    if acc[None] > 0.4:
        raise Wrong(f"a model without positions reached {acc[None]:.0%}: that cannot be (chance is 25%).",
                    hint="did you pass positional=None? Without positions, swapping the two dots' patches flips the "
                         "label but not the model's answer, so it is right on at most one image of each such pair.")
    if not acc["2d"] > acc[None] + 0.3:
        raise Wrong(f"the 2-D model should be far better than the one without positions after 150 steps "
                    f"(got {acc['2d']:.0%} and {acc[None]:.0%}).",
                    hint="use accuracy_at[150] of the appendix's run for '2d'; train the others with the same loop.")
    if not acc[None] < acc["1d"] < acc["2d"]:
        raise Wrong(f"expected no positions < 1-D < 2-D, got {acc}.",
                    hint="train both models with the same seed, batches and 150 steps as the appendix's run.")
    return (f"no positions {acc[None]:.0%} (chance: 25%), 1-D {acc['1d']:.0%}, 2-D {acc['2d']:.0%}: "
            f"the encoder needs to know where each patch is, and the grid helps a tiny model.")
