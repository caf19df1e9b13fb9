"""Draw the book's logo (book/logo.svg) and favicon (book/favicon.ico) from one geometry.

    python book/make_logo.py        # rewrites the three files (tests/test_site_assets.py checks logo.svg is current)

The picture is a causal attention matrix: 4 queries x 4 keys, each row's weights summing to 1,
the cells above the diagonal masked (faint). White cells on an indigo badge read on light and
dark pages alike. The favicon is the same drawing rasterised with Pillow (16, 32, 48 and 64 px); book/social.png,
the preview of a shared link, the same drawing large.
"""
from __future__ import annotations

import io
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZE = 64                      # the drawing's coordinate system (SVG viewBox)
RADIUS = 14                    # the badge's corner radius
BADGE = (0x27, 0x3e, 0x9c)     # indigo
CELL, GAP = 10, 3
# attention weights of a causal 4 x 4 map: row q attends to keys 0..q; each row sums to 1
WEIGHTS = [[1.0],
           [0.35, 0.65],
           [0.2, 0.3, 0.5],
           [0.1, 0.2, 0.25, 0.45]]
MASKED = 0.1                   # opacity of a masked (future) cell


def cells():
    """(x, y, opacity) of every cell, row by row."""
    n = len(WEIGHTS)
    origin = (SIZE - (n * CELL + (n - 1) * GAP)) / 2
    out = []
    for q in range(n):
        for k in range(n):
            opacity = 0.45 + 0.55 * WEIGHTS[q][k] if k <= q else MASKED
            out.append((origin + k * (CELL + GAP), origin + q * (CELL + GAP), round(opacity, 3)))
    return out


def svg() -> str:
    rects = "\n".join(f'  <rect x="{x:g}" y="{y:g}" width="{CELL}" height="{CELL}" rx="2" fill="#fff" '
                      f'fill-opacity="{o:g}"/>' for x, y, o in cells())
    badge = "#%02x%02x%02x" % BADGE
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" height="{SIZE}" '
            f'role="img" aria-label="Transformer, Step by Step">\n'
            f'  <title>Transformer, Step by Step</title>\n'
            f'  <rect width="{SIZE}" height="{SIZE}" rx="{RADIUS}" fill="{badge}"/>\n{rects}\n</svg>\n')


def ico() -> bytes:
    from PIL import Image, ImageDraw

    scale = 16  # draw at 1024 px, then let Pillow downsample each icon size (antialiased)
    big = Image.new("RGBA", (SIZE * scale, SIZE * scale), (0, 0, 0, 0))
    ImageDraw.Draw(big).rounded_rectangle((0, 0, SIZE * scale - 1, SIZE * scale - 1), RADIUS * scale,
                                          fill=BADGE + (255,))
    for x, y, o in cells():
        layer = Image.new("RGBA", big.size, (0, 0, 0, 0))
        box = (round(x * scale), round(y * scale), round((x + CELL) * scale) - 1, round((y + CELL) * scale) - 1)
        ImageDraw.Draw(layer).rounded_rectangle(box, 2 * scale, fill=(255, 255, 255, round(255 * o)))
        big = Image.alpha_composite(big, layer)
    out = io.BytesIO()
    big.resize((256, 256), Image.Resampling.LANCZOS).save(out, "ICO", sizes=[(16, 16), (32, 32), (48, 48), (64, 64)])
    return out.getvalue()


SOCIAL = (1200, 630)  # the preview image of a shared link (OpenGraph og:image; bookbuild/sphinx_ext/published.py)


def social() -> bytes:
    """book/social.png: the logo's attention map, large, on the badge's indigo, at the size chat apps and
    social sites show a link's preview (1200 x 630, their common 1.91:1)."""
    from PIL import Image, ImageDraw

    scale = 9
    image = Image.new("RGBA", SOCIAL, BADGE + (255,))
    left, top = (SOCIAL[0] - SIZE * scale) / 2, (SOCIAL[1] - SIZE * scale) / 2
    for x, y, o in cells():
        layer = Image.new("RGBA", SOCIAL, (0, 0, 0, 0))
        box = (round(left + x * scale), round(top + y * scale), round(left + (x + CELL) * scale) - 1,
               round(top + (y + CELL) * scale) - 1)
        ImageDraw.Draw(layer).rounded_rectangle(box, 2 * scale, fill=(255, 255, 255, round(255 * o)))
        image = Image.alpha_composite(image, layer)
    out = io.BytesIO()
    image.convert("RGB").save(out, "PNG", optimize=True)
    return out.getvalue()


def main() -> None:
    (HERE / "logo.svg").write_text(svg(), encoding="utf-8")
    (HERE / "favicon.ico").write_bytes(ico())
    (HERE / "social.png").write_bytes(social())


if __name__ == "__main__":
    main()
