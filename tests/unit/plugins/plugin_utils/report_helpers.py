# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers shared by the report's tests: reading results.csv, compiling report.tex."""
import csv
import shutil
import subprocess

import pytest

TEX_ENGINES = ('pdflatex', 'lualatex')
TEX_DOCUMENT = ('\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage[T1]{fontenc}\n'
                '\\begin{document}\n\\input{report.tex}\n\\end{document}\n')
# The same without T1: article's default font encoding OT1, booktabs alone as report.tex asks.
TEX_DOCUMENT_OT1 = TEX_DOCUMENT.replace('\\usepackage[T1]{fontenc}\n', '')


def csv_rows(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def compile_tex(source, folder, timeout=300, document=TEX_DOCUMENT):
    """Compile report.tex (source) inside an article with booktabs alone (document: TEX_DOCUMENT in T1, or
    TEX_DOCUMENT_OT1), in folder; returns the log's text. Skips the test when no TeX engine is on PATH, fails it when
    the engine does."""
    engine = next((name for name in TEX_ENGINES if shutil.which(name)), None)
    if engine is None:
        pytest.skip('no TeX engine on PATH (%s): compiling report.tex is skipped' % ', '.join(TEX_ENGINES))
    shutil.copy(source, folder / 'report.tex')
    (folder / 'doc.tex').write_text(document)
    done = subprocess.run([engine, '-interaction=nonstopmode', '-halt-on-error', 'doc.tex'], cwd=folder,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    return (folder / 'doc.log').read_text(errors='replace')
