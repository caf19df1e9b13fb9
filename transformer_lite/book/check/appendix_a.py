"""Checks of appendix A's exercises (Transformers for vision).

The checks compare the reader's code with ``transformer_lite.vision`` on random images they draw
themselves. Exercise A.1 is a bug hunt on the trained model (its suspect is a class of
``transformer_lite.pitfalls``).
"""
from __future__ import annotations

import torch

import transformer_lite as tl
from transformer_lite.vision import PatchEncoder, patchify, sinusoidal_positional_encoding_2d

from ..i18n import tr
from . import Wrong, as_number, call, close, exercise, one_of

# ---- A.1: bug hunt, a model that forgets where -------------------------------------------------
# The suspect is pitfalls.PatchEncoderPositionsSlicedByBatch with the trained weights: on a batch of at least N + 1
# images it is exactly the model; on one image it adds the [class] token's (zero) position to every token, so it has
# no positions and the swap test (the two dots' patches exchanged) leaves its logits unchanged, up to rounding.

_PARTS = ("patch embedding", "positions", "class token", "classifier")  # i18n: data


@exercise("A.1", wrong=[lambda: ("patch embedding", 0.0),    # the patches are embedded right: both images differ
                        lambda: ("classifier", 0.0),
                        lambda: ("positions", 2.5),          # a change this large is the intact model's, or a batch's
                        lambda: ("class token", 0.0)])
def exercise_A_1(my_broken, my_largest_change):
    one_of(my_broken, _PARTS, "my_broken")
    change = as_number(my_largest_change, "my_largest_change")
    if change > 1e-4:
        raise Wrong(tr("a largest change of {change:.3g}: the suspect did see the swap in your test.", change=change),
                    hint=tr("run the suspect on one image at a time (a batch of 1), as a reader's single picture would "
                            "be; on a batch of 20 or 1000 the bug hides. Compare suspect(x) with suspect(x_swapped)."))
    if my_broken.strip().lower() != "positions":
        raise Wrong(tr("with {my_broken!r} broken, "
                       "swapping two patches would still move the dots' positions for the model.", my_broken=my_broken),
                    hint=tr("a model whose logits do not change when two patches trade places "
                            "cannot tell where a patch is."))
    return (tr("the suspect gives a swapped single image the same logits: it has no positions. Its tokens add "
               "self.pos[:, :x.shape[0]], sliced by the batch size instead of the sequence length."))


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
        close(out, expected, tr("my_patchify(images of shape {shape}, {P})", shape=shape, P=P), atol=0, rtol=0,
              hint=tr("patch n sits at grid row n // (W/P), column n % (W/P) (reading order, row by row), and each "
                      "patch "
                      "is flattened channel by channel, as a (C, P, P) block. A plain reshape of (B, C, H, W) mixes "
                      "pixels of different patches: split H and W first, then permute, then reshape."))
    return tr("your patches equal transformer_lite.vision.patchify on three image shapes (non-square, 1 to 3 "
              "channels).")


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
          hint=tr("z_0 = [x_class; x_p^1 E; …; x_p^N E] + E_pos: the [class] token goes FIRST, and E_pos has N + 1 "
                  "rows, "
                  "one for the [class] token too (with learned positions it is not zero). Use model.patch_embed, "
                  "model.cls_token (1, 1, D) expanded to the batch, and model.pos (1, N + 1, D)."))
    return tr("your z_0 equals PatchEncoder.tokens (learned positions, non-zero [class] token).")


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
              hint=tr("the first D/2 dimensions are the 1-D table (width D/2) of the patch's ROW, the last D/2 the "
                      "table of its COLUMN, side by side (torch.cat on the last dimension); patches in reading order, "
                      "so patch n is at row n // cols, column n % cols."))
    return tr("your 2-D table equals sinusoidal_positional_encoding_2d for three grids (square and not).")
