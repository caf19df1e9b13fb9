"""The Chinese edition's translation tooling, one concern per module; `python -m bookbuild.i18n ...` is its command.

    paths            where the sources, catalogs and generated notebooks live
    sphinx_catalogs  the prose catalogs: extracted by Sphinx's gettext builder, merged by sphinx-intl
    messages         a message's markup and what is wrong with one translation
    terminology      the glossary's terms and terminology.yml
    style            STYLE.md's punctuation, units and wording: checked, and fixed where it is mechanical
    checks           the check of every catalog (`bookbuild/i18n.py check`)
    code_cells       the code cells' comments and figure strings (locales/zh_CN/code/)
    markdown         MyST's parser and a cell's lines
    anchors          section links in JupyterLab
    notebooks        notebooks/zh/, generated
    edition          the Chinese site, built by Sphinx
    search           Chinese words in the search index
    landing_maps     the landing page's map in both languages
    package_catalog  the package's own catalog (transformer_lite/book/locale/zh_CN.po), extracted by Babel
"""
