"""The same encoder for images: patches as tokens (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words").

    z_0 = [x_class; x_p^1 E; x_p^2 E; ...; x_p^N E] + E_pos        (ViT, eq. 1)

An image (C, H, W) is cut into N = (H/P) * (W/P) square patches of P x P pixels;
each patch, flattened to C*P*P numbers, is one token. A Linear layer E embeds
it into D dimensions (the same thing as a Conv2d with kernel P and stride P),
positions are added, and an ordinary :class:`~transformer_lite.Encoder` does the rest.

Shape letters: B batch, C colour channels, H x W image size, P patch size,
N number of patches, D model width.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ._checks import check_positive_int, check_tensor
from .embeddings import sinusoidal_positional_encoding
from .layers import Encoder, EncoderLayer
from .normalization import LayerNorm


def _check_images(images: torch.Tensor, patch_size: int) -> None:
    check_tensor("images", images, ndim=4)
    check_positive_int("patch_size", patch_size)
    H, W = images.shape[-2:]
    if H % patch_size or W % patch_size:
        raise ValueError(f"images' height and width must be multiples of patch_size ({patch_size}), "
                         f"got shape {tuple(images.shape)}")


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C*P*P): cut into P x P patches, row by row, each flattened channel-first.

    Patch n is at grid row ``n // (W/P)`` and column ``n % (W/P)`` (raster order).
    Flattening each patch as (C, P, P) makes the weight of the embedding's Linear
    reshape exactly into a Conv2d kernel of shape (D, C, P, P).
    """
    _check_images(images, patch_size)
    B, C, H, W = images.shape
    P = patch_size
    x = images.reshape(B, C, H // P, P, W // P, P)  # split H into (rows, P) and W into (cols, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, P, P)
    return x.reshape(B, (H // P) * (W // P), C * P * P)  # (B, N, C*P*P)


def unpatchify(patches: torch.Tensor, patch_size: int, channels: int, height: int, width: int) -> torch.Tensor:
    """(B, N, C*P*P) -> (B, C, H, W): the inverse of :func:`patchify`."""
    check_tensor("patches", patches, ndim=3)
    P, C = patch_size, channels
    B, N, F = patches.shape
    if F != C * P * P or N * P * P != height * width or height % P or width % P:
        raise ValueError(f"patches of shape {tuple(patches.shape)} do not tile a {C}x{height}x{width} image "
                         f"with patch_size {P}")
    x = patches.reshape(B, height // P, width // P, C, P, P).permute(0, 3, 1, 4, 2, 5)  # (B, C, rows, P, cols, P)
    return x.reshape(B, C, height, width)


class PatchEmbedding(nn.Module):
    """Each flattened patch times one matrix E (ViT eq. 1): (B, C, H, W) -> (B, N, D).

    ``self.proj`` is an ``nn.Linear(C*P*P, D)``; a ``nn.Conv2d(C, D, P, stride=P)``
    whose kernel is ``proj.weight.view(D, C, P, P)`` computes the same numbers.
    """

    def __init__(self, patch_size: int, in_channels: int, d_model: int):
        super().__init__()
        for name, value in (("patch_size", patch_size), ("in_channels", in_channels), ("d_model", d_model)):
            check_positive_int(name, value)
        self.patch_size, self.in_channels, self.d_model = patch_size, in_channels, d_model
        self.proj = nn.Linear(in_channels * patch_size * patch_size, d_model)  # E: C*P*P -> D

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() == 4 and images.shape[1] != self.in_channels:
            raise ValueError(f"images must have {self.in_channels} channels, got shape {tuple(images.shape)}")
        return self.proj(patchify(images, self.patch_size))  # (B, N, C*P*P) -> (B, N, D)


def sinusoidal_positional_encoding_2d(rows: int, cols: int, d_model: int) -> torch.Tensor:
    """2-D positions, shape (rows*cols, D): the first D/2 dimensions encode the row, the last D/2 the column.

    Each half is the paper's 1-D sinusoidal table (width D/2), so patches in the
    same row share the first half and patches in the same column the second.
    """
    for name, value in (("rows", rows), ("cols", cols), ("d_model", d_model)):
        check_positive_int(name, value)
    if d_model % 4:
        raise ValueError(f"d_model must be divisible by 4 (two sin/cos halves), got {d_model}")
    row_pe = sinusoidal_positional_encoding(rows, d_model // 2)  # (rows, D/2)
    col_pe = sinusoidal_positional_encoding(cols, d_model // 2)  # (cols, D/2)
    r = torch.arange(rows).repeat_interleave(cols)  # row of each patch in raster order
    c = torch.arange(cols).repeat(rows)  # column of each patch
    return torch.cat([row_pe[r], col_pe[c]], dim=-1)  # (N, D)


class PatchEncoder(nn.Module):
    """A tiny Vision Transformer: patch embedding, a [class] token, positions, an Encoder, a Linear classifier.

    Shape: images (B, C, H, W) -> logits (B, num_classes). ``positional`` is ``"2d"``
    (:func:`sinusoidal_positional_encoding_2d`), ``"1d"`` (the paper's table over the
    raster order), ``"learned"`` (ViT's choice) or ``None`` (no positions at all).
    """

    def __init__(self, image_size: int, patch_size: int, in_channels: int, num_classes: int, d_model: int = 64,
                 nhead: int = 4, num_layers: int = 2, dim_feedforward: int = 128, dropout: float = 0.0,
                 positional: str | None = "2d"):
        super().__init__()
        check_positive_int("image_size", image_size)
        check_positive_int("num_classes", num_classes)
        if image_size % patch_size:
            raise ValueError(f"image_size ({image_size}) must be a multiple of patch_size ({patch_size})")
        if positional not in ("2d", "1d", "learned", None):
            raise ValueError(f"positional must be '2d', '1d', 'learned' or None, got {positional!r}")
        self.grid = image_size // patch_size  # patches per row and per column
        N = self.grid * self.grid
        self.positional = positional
        self.patch_embed = PatchEmbedding(patch_size, in_channels, d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model))  # x_class: a learned "summary" token
        if positional == "learned":
            self.pos = nn.Parameter(torch.randn(1, N + 1, d_model) * 0.02)
        else:
            if positional == "2d":
                pe = sinusoidal_positional_encoding_2d(self.grid, self.grid, d_model)
            elif positional == "1d":
                pe = sinusoidal_positional_encoding(N, d_model)
            else:
                pe = torch.zeros(N, d_model)
            pe = torch.cat([torch.zeros(1, d_model), pe])  # the [class] token gets no position
            self.register_buffer("pos", pe.unsqueeze(0), persistent=False)  # (1, N+1, D)
        layer = EncoderLayer(d_model, nhead, dim_feedforward, dropout, norm_first=True)  # ViT is Pre-LN
        self.encoder = Encoder(layer, num_layers, norm=LayerNorm(d_model))
        self.head = nn.Linear(d_model, num_classes)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """The encoder's input z_0, (B, N+1, D): the [class] token, then one token per patch, plus positions."""
        x = self.patch_embed(images)  # (B, N, D)
        cls = self.cls_token.expand(x.shape[0], -1, -1)  # (B, 1, D)
        return torch.cat([cls, x], dim=1) + self.pos  # (B, N+1, D)

    def forward(self, images: torch.Tensor, return_attention: bool = False):
        z = self.tokens(images)  # (B, N+1, D)
        h, weights = self.encoder.forward_with_attention(z) if return_attention else (self.encoder(z), None)
        logits = self.head(h[:, 0])  # classify from the [class] token's output
        return (logits, weights) if return_attention else logits


RELATIONS = ("right of", "left of", "below", "above")


def two_dots_task(n: int, image_size: int = 64, patch_size: int = 16, noise: float = 0.1, seed: int = 0):
    """Images with a red and a blue dot, each inside one patch; the label is where red is relative to blue.

    Returns ``(images (n, 3, H, W) float in [0, 1], labels (n,) long)``; ``RELATIONS[label]``
    names the class. The two dots sit in different patches whose row and column
    offsets differ in size, and the label is the direction of the larger offset, so the
    answer depends only on the two patches' *positions*.
    """
    check_positive_int("n", n)
    check_positive_int("image_size", image_size)
    check_positive_int("patch_size", patch_size)
    if image_size % patch_size or image_size // patch_size < 2:
        raise ValueError(f"image_size ({image_size}) must be a multiple of patch_size ({patch_size}), "
                         f"with at least 2 patches per side")
    g = torch.Generator().manual_seed(seed)
    grid, P = image_size // patch_size, patch_size
    # Draw patch pairs (a, b) and keep those whose row and column offsets differ in size.
    pairs = torch.empty(0, 2, dtype=torch.long)
    while len(pairs) < n:
        cand = torch.randint(0, grid * grid, (2 * n, 2), generator=g)
        dr, dc = cand[:, 0] // grid - cand[:, 1] // grid, cand[:, 0] % grid - cand[:, 1] % grid
        pairs = torch.cat([pairs, cand[dr.abs() != dc.abs()]])
    a, b = pairs[:n, 0], pairs[:n, 1]  # patch of the red dot, of the blue dot
    dr, dc = a // grid - b // grid, a % grid - b % grid
    labels = torch.where(dc.abs() > dr.abs(), torch.where(dc > 0, 0, 1), torch.where(dr > 0, 2, 3))

    images = noise * torch.rand(n, 3, image_size, image_size, generator=g)
    radius = P / 5
    yy = torch.arange(image_size).view(1, -1, 1).float()  # pixel rows
    xx = torch.arange(image_size).view(1, 1, -1).float()  # pixel columns
    for patch, channel in ((a, 0), (b, 2)):  # red dot in patch a, blue dot in patch b
        centre = radius + torch.rand(n, 2, generator=g) * (P - 2 * radius)  # inside the patch, dot fully inside
        cy = (patch // grid * P).float() + centre[:, 0]
        cx = (patch % grid * P).float() + centre[:, 1]
        dot = ((yy - cy.view(-1, 1, 1)) ** 2 + (xx - cx.view(-1, 1, 1)) ** 2 <= radius ** 2).float()  # (n, H, W)
        images[:, channel] = torch.maximum(images[:, channel], dot)
    return images, labels


# ---- little data: a CNN's built-in assumptions against ViT's (appendix A) -------------------------

GLYPHS = {  # four 5 x 5 shapes, "#" = ink; the class is the shape, wherever it is drawn
    "plus": ("..#..", "..#..", "#####", "..#..", "..#.."),
    "cross": ("#...#", ".#.#.", "..#..", ".#.#.", "#...#"),
    "square": ("#####", "#...#", "#...#", "#...#", "#####"),
    "bars": ("#.#.#", "#.#.#", "#.#.#", "#.#.#", "#.#.#"),
}


def glyphs_task(n: int, image_size: int = 32, noise: float = 0.1, seed: int = 0):
    """Grey images of faint noise with one 5 x 5 shape of :data:`GLYPHS` at a random pixel position.

    Returns ``(images (n, 1, H, W) float in [0, 1], labels (n,) long)``; ``list(GLYPHS)[label]``
    names the shape. The label depends on *what* is drawn, not *where*: a model that assumes
    this (a convolution with pooling) needs few examples; one that must learn it from data needs more.
    """
    check_positive_int("n", n)
    check_positive_int("image_size", image_size)
    if image_size < 5:
        raise ValueError(f"image_size must be at least 5 (the shapes are 5 x 5 pixels), got {image_size}")
    if not 0 <= noise <= 1:
        raise ValueError(f"noise must be between 0 and 1, got {noise}")
    g = torch.Generator().manual_seed(seed)
    shapes = torch.tensor([[[ch == "#" for ch in row] for row in glyph] for glyph in GLYPHS.values()]).float()
    labels = torch.randint(0, len(GLYPHS), (n,), generator=g)
    images = noise * torch.rand(n, 1, image_size, image_size, generator=g)
    corner = torch.randint(0, image_size - 4, (n, 2), generator=g)  # top-left pixel of the shape
    rows = corner[:, 0].view(n, 1, 1) + torch.arange(5).view(1, 5, 1)  # (n, 5, 1)
    cols = corner[:, 1].view(n, 1, 1) + torch.arange(5).view(1, 1, 5)  # (n, 1, 5)
    idx = torch.arange(n).view(n, 1, 1)
    images[idx, 0, rows, cols] = torch.maximum(images[idx, 0, rows, cols], shapes[labels])
    return images, labels


class TinyCNN(nn.Module):
    """Two 3 x 3 convolutions, a max-pool in between, then the maximum over all positions and a Linear layer.

    Its assumptions are built in: a kernel sees a small neighbourhood (locality), the same kernel is used at
    every position (weight sharing), and the maximum over positions forgets *where* a feature was.
    """

    def __init__(self, in_channels: int, num_classes: int, channels: int = 16):
        super().__init__()
        for name, value in (("in_channels", in_channels), ("num_classes", num_classes), ("channels", channels)):
            check_positive_int(name, value)
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(images))  # (B, channels, H, W)
        x = nn.functional.max_pool2d(x, 2)  # (B, channels, H/2, W/2)
        x = torch.relu(self.conv2(x))
        return self.head(x.amax(dim=(2, 3)))  # max over positions: (B, channels) -> (B, num_classes)
