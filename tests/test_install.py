"""The toolchain as `make` installs it: bertviz works without the ~200 MB it declares but never uses."""
import importlib.util

import torch


def test_bertviz_imports_without_its_declared_heavy_dependencies():
    for unused in ("transformers", "boto3", "sentencepiece"):
        assert importlib.util.find_spec(unused) is None, f"{unused} should not be installed"
    from bertviz import head_view, model_view  # noqa: F401  (needs only torch and IPython)
    from bertviz.util import format_attention

    layers = [torch.softmax(torch.randn(1, 2, 3, 3), dim=-1) for _ in range(2)]
    assert format_attention(layers).shape == (2, 2, 3, 3)  # (layers, heads, query, key)


def test_torch_is_the_pinned_cpu_build():
    assert torch.__version__.startswith("2.13.0")
    assert not torch.version.cuda  # the CPU build: no CUDA packages were pulled in


def test_num_threads_sets_and_restores():
    import pytest

    from transformer_lite.book.runtime import num_threads

    before = torch.get_num_threads()
    with num_threads(1) as used:
        assert used == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), num_threads(1):
        raise RuntimeError("restored even when the block fails")
    assert torch.get_num_threads() == before
    with num_threads(None) as used:
        assert used == before
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        with num_threads(0):
            pass


def test_the_bertviz_patches_name_the_release_the_toolchain_pins():
    """transformer_lite/book/viz.py's patches name the bertviz they were written for, which must be the pinned one."""
    import re
    from pathlib import Path

    from transformer_lite.book import viz

    pins = (Path(__file__).resolve().parent.parent / "requirements-nodeps.in").read_text(encoding="utf-8")
    assert re.search(rf"^bertviz=={re.escape(viz.BERTVIZ_WRITTEN_FOR)}\b", pins, re.M), viz.BERTVIZ_WRITTEN_FOR
