"""What the benchmark scripts share: the door of run.py and score.py (`selfrag bench ...` under the script's
name), a small index built with `selfrag index`, and a markdown table of figures."""

from __future__ import annotations

from pathlib import Path

from selfrag.cli import main


def run_cli(argv: list[str], *, prog: str) -> int:
    return main(["bench", *argv], prog=prog)


def index_of(folder: Path, docs: dict[str, str]) -> Path:
    """A BM25 index of `docs` (name -> text) built with `selfrag index` inside `folder`."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for name, text in docs.items():
        (corpus / name).write_text(text)
    index = folder / "index"
    main(["index", str(corpus), "--out", str(index), "--quiet"])
    return index


def print_table(title: str, rows: list[dict[str, object]]) -> None:
    """Rows of figures as a markdown table under a `# title` line."""
    keys = list(rows[0])
    print(f"# {title}")
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]).replace("|", "/") for k in keys) + " |")
