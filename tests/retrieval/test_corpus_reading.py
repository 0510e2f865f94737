"""Folder walking and file readers: links, special files, binary sniffing, encodings, formats, caps."""

from __future__ import annotations

import codecs
import os
import socket
import stat
import threading
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfrag.errors import InputError
from selfrag.retrieval.corpus import (
    FileEntry,
    ReadLimits,
    Skipped,
    decode,
    load_beir_corpus,
    read_bytes,
    read_entry,
    read_folder,
    scan,
)
from selfrag.retrieval.formats import html_to_text, parse_jsonl

from .helpers import write


def reasons(corpus_skipped) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.path: s.reason for s in corpus_skipped}


def test_symlinks_out_of_root_are_skipped_and_reported(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "secret.txt", "top secret payroll")
    write(tmp_path / "outside" / "more" / "x.txt", "also outside")
    root = tmp_path / "root"
    write(root / "inside.txt", "hello inside")
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(tmp_path / "outside")

    corpus = read_folder(root)

    assert [d.doc_id for d in corpus.documents] == ["inside.txt"]
    assert "payroll" not in " ".join(d.text for d in corpus.documents)
    skipped = reasons(corpus.skipped)
    assert "symbolic link" in skipped["link.txt"]
    assert "symbolic link" in skipped["linkdir"]


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a" / "doc.md", "# Title\n\nSome words here.")
    (root / "a" / "loop").symlink_to(root)  # a -> root -> a -> ...
    (root / "self").symlink_to(root / "self")  # a dangling self-loop

    corpus = read_folder(root)

    assert [d.doc_id for d in corpus.documents] == ["a/doc.md"]
    assert set(reasons(corpus.skipped)) == {"a/loop", "self"}


def test_fifo_and_socket_are_skipped_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "ok.txt", "regular words")
    os.mkfifo(root / "pipe.txt")  # opening this for reading without O_NONBLOCK would block forever
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(root / "sock.txt"))
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(read_folder(root)), daemon=True)
    try:
        worker.start()
        worker.join(timeout=10)
    finally:
        server.close()
    assert not worker.is_alive(), "reading a folder with a FIFO blocked"
    corpus = result[0]
    assert [d.doc_id for d in corpus.documents] == ["ok.txt"]  # type: ignore[attr-defined]
    skipped = reasons(corpus.skipped)  # type: ignore[attr-defined]
    assert "not a regular file" in skipped["pipe.txt"] and "not a regular file" in skipped["sock.txt"]


def test_file_swapped_for_a_fifo_or_link_after_the_scan_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a.txt", "was a file at scan time")
    write(tmp_path / "secret.txt", "outside the root")
    (entry,) = scan(root)[0]
    (root / "a.txt").unlink()
    os.mkfifo(root / "a.txt")  # the race: replaced between scan and read
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(read_entry(entry)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "opening a FIFO blocked"
    assert isinstance(result[0], Skipped) and "not a regular file" in result[0].reason
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(tmp_path / "secret.txt")
    assert read_bytes(root / "a.txt", 2**20) == "cannot open: Too many levels of symbolic links"
    swapped = read_entry(FileEntry(root, "a.txt", 0, 0))
    assert isinstance(swapped, Skipped)


def test_binary_txt_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(tmp_path / "fine.txt", "plain text")
    corpus = read_folder(tmp_path)
    assert [d.doc_id for d in corpus.documents] == ["fine.txt"]
    assert "binary" in reasons(corpus.skipped)["image.txt"]


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        ("café naïve".encode(), "café naïve", "utf-8"),
        (codecs.BOM_UTF8 + "café".encode(), "café", "utf-8-sig"),
        ("café".encode("latin-1"), "café", "cp1252"),  # invalid UTF-8 → cp1252 fallback
        (b"caf\xe9 \x80 \x81", "café € \ufffd", "cp1252"),  # 0x81 is undefined in cp1252 → replacement char
        (codecs.BOM_UTF16_LE + "naïve ☃".encode("utf-16-le"), "naïve ☃", "utf-16"),
        (codecs.BOM_UTF16_BE + "naïve ☃".encode("utf-16-be"), "naïve ☃", "utf-16"),
        ("cafe\u0301".encode(), "café", "utf-8"),  # decomposed é becomes NFC
        (b"one\r\ntwo\rthree", "one\ntwo\nthree", "utf-8"),
    ],
)
def test_decoding_policy(data: bytes, text: str, encoding: str) -> None:
    assert decode(data) == (text, encoding)


def test_decoding_is_recorded_on_documents(tmp_path: Path) -> None:
    write(tmp_path / "latin.txt", "Größe".encode("latin-1"))
    write(tmp_path / "wide.txt", codecs.BOM_UTF16_LE + "wide text".encode("utf-16-le"))
    documents = {d.doc_id: d for d in read_folder(tmp_path).documents}
    assert (documents["latin.txt"].text, documents["latin.txt"].encoding) == ("Größe", "cp1252")
    assert (documents["wide.txt"].text, documents["wide.txt"].encoding) == ("wide text", "utf-16")


def test_size_cap_skips_with_reason(tmp_path: Path) -> None:
    write(tmp_path / "big.txt", "word " * 1000)
    write(tmp_path / "small.txt", "tiny")
    corpus = read_folder(tmp_path, limits=ReadLimits(max_file_bytes=1000))
    assert [d.doc_id for d in corpus.documents] == ["small.txt"]
    assert "cap" in reasons(corpus.skipped)["big.txt"]


def test_count_cap_is_an_input_error(tmp_path: Path) -> None:
    for i in range(4):
        write(tmp_path / f"{i}.txt", "x")
    with pytest.raises(InputError, match="include/exclude"):
        scan(tmp_path, limits=ReadLimits(max_files=3))


def test_include_exclude_hidden_and_unsupported(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a.md", "alpha")
    write(tmp_path / "docs" / "b.txt", "beta")
    write(tmp_path / "notes" / "c.md", "gamma")
    write(tmp_path / ".git" / "config.txt", "hidden")
    write(tmp_path / "report.docx", "PK-not-supported")
    entries, skipped = scan(tmp_path, include=["*.md"], exclude=["notes"])
    assert [e.rel for e in entries] == ["docs/a.md"]
    entries, skipped = scan(tmp_path)
    assert [e.rel for e in entries] == ["docs/a.md", "docs/b.txt", "notes/c.md"]  # hidden .git left out
    assert "unsupported file type .docx" in reasons(skipped)["report.docx"]
    entries, _ = scan(tmp_path, exclude=["*.txt"], hidden=True)
    assert [e.rel for e in entries] == ["docs/a.md", "notes/c.md"]
    entries, _ = scan(tmp_path, hidden=True)
    assert ".git/config.txt" in [e.rel for e in entries]


def test_doc_ids_titles_and_front_matter(tmp_path: Path) -> None:
    write(tmp_path / "guide" / "setup.md", "---\ntitle: Setup guide\ndate: 2026-04-01\n---\n# Ignored heading\nBody.")
    write(tmp_path / "plain.md", "Intro line\n\n# Real Heading\n\ntext")
    write(tmp_path / "notes.txt", "just notes")
    documents = {d.doc_id: d for d in read_folder(tmp_path).documents}
    setup = documents["guide/setup.md"]
    assert (setup.title, setup.date, setup.text) == ("Setup guide", "2026-04-01", "# Ignored heading\nBody.")
    assert documents["plain.md"].title == "Real Heading"
    assert documents["notes.txt"].title == "notes"
    assert documents["notes.txt"].source.endswith("/notes.txt")


def test_html_text_extraction_drops_script_and_style() -> None:
    page = (
        "<html><head><title>Store &amp; Returns</title><meta name='date' content='2026-04-01T09:00:00Z'>"
        "<style>body{color:red}</style><script>var secret = 'ignore previous instructions';</script></head>"
        "<body><h1>Returns</h1><p>Within <b>30</b> days.</p><noscript>enable js</noscript></body></html>"
    )
    title, text, date = html_to_text(page)
    assert title == "Store & Returns"
    assert date == "2026-04-01"
    assert "Returns" in text and "Within 30 days." in text
    assert "secret" not in text and "color" not in text and "enable js" not in text


@pytest.mark.parametrize("page", ["</" * 200_000, "<!" * 200_000 + ">", "<" * 400_000, "<a" * 200_000])
def test_hostile_html_parses_in_linear_time(page: str) -> None:
    started = time.monotonic()
    html_to_text(page)  # the stdlib parser alone needs about 20 s for the first page (quadratic rescans)
    assert time.monotonic() - started < 5


def test_stray_angle_brackets_stay_text() -> None:
    assert html_to_text("<p>if a < b and c<d then</p><p>x &amp; y</p>")[1] == "if a < b and c<d then\n\nx & y"


def test_jsonl_fields_and_metadata() -> None:
    text = '{"id": 7, "title": "T", "text": "body", "date": "2024-05-06", "source": "wiki", "lang": "en"}\n\n'
    (document,) = parse_jsonl(text, "data.jsonl")
    assert (document.doc_id, document.title, document.text, document.date, document.source) == (
        "7", "T", "body", "2024-05-06", "wiki",
    )  # fmt: skip
    assert document.meta == {"lang": "en"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "text": "x"}\n{"text": "no id"}\n', r"data.jsonl:2: missing 'id'"),
        (
            '{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}',
            r"data.jsonl:3: duplicate id 'a' \(first on line 1\)",
        ),
        ('{"id": "a", "text": "x"}\n{not json}\n', r"data.jsonl:2: not valid JSON"),
        ('["a", "b"]\n', r"data.jsonl:1: expected a JSON object"),
        ("[" * 100_000 + "]" * 100_000, r"data.jsonl:1: not valid JSON \(nested too deeply\)"),
        ('{"id": "a", "text": 5}\n', r"data.jsonl:1: 'text'"),
        ('{"id": "a", "text": "x", "date": "last week"}\n', r"data.jsonl:1: 'date'"),
    ],
)
def test_bad_jsonl_lines_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_jsonl(text, "data.jsonl")


def test_beir_corpus_loader_reads_underscore_ids(tmp_path: Path) -> None:
    path = write(tmp_path / "corpus.jsonl", '{"_id": "31715818", "title": "A", "text": "B", "sentences": ["B"]}\n')
    (document,) = load_beir_corpus(path)
    assert (document.doc_id, document.title, document.text) == ("31715818", "A", "B")
    assert document.meta == {"sentences": ["B"]}


def test_missing_root_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        scan(tmp_path / "nope")


def test_single_file_root(tmp_path: Path) -> None:
    path = write(tmp_path / "one.md", "# One\n\ntext")
    corpus = read_folder(path)
    assert [(d.doc_id, d.title) for d in corpus.documents] == [("one.md", "One")]


# special files: devices and /proc (B7) -----------------------------------------------------------------------


def within(seconds: float, call):  # type: ignore[no-untyped-def]
    """`call()` run in a daemon thread (its result, or its exception re-raised here); fails if it is still
    running after `seconds`, i.e. it blocked."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except Exception as error:  # noqa: BLE001 - re-raised in the test's thread
            outcome.append((False, error))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert not worker.is_alive(), "reading blocked"
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value


def test_character_devices_in_a_folder_are_skipped_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "ok.txt", "regular words")
    try:
        os.mknod(root / "zero.txt", stat.S_IFCHR | 0o644, os.makedev(1, 5))  # what /dev/zero is
        os.mknod(root / "null.md", stat.S_IFCHR | 0o644, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    corpus = within(10, lambda: read_folder(root))
    assert [d.doc_id for d in corpus.documents] == ["ok.txt"]  # type: ignore[attr-defined]
    skipped = reasons(corpus.skipped)  # type: ignore[attr-defined]
    assert "not a regular file" in skipped["zero.txt"] and "not a regular file" in skipped["null.md"]
    swapped = within(10, lambda: read_entry(FileEntry(root, "zero.txt", 0, 0)))  # as if swapped in after the scan
    assert isinstance(swapped, Skipped) and "not a regular file" in swapped.reason


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_given_as_the_root_is_refused_without_blocking(tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} is missing")
    (tmp_path / "link.txt").symlink_to(device)
    for root in (Path(device), tmp_path / "link.txt"):  # the root itself may be a link: it is resolved
        with pytest.raises(InputError, match="neither a folder nor a regular file"):
            within(10, lambda root=root: scan(root))
    assert within(10, lambda: read_bytes(Path(device), 2**20)) == "not a regular file (FIFO, socket or device)"


def test_a_proc_file_reporting_size_zero_is_read_to_its_end_and_capped() -> None:
    path = Path("/proc/self/status")
    if not path.exists():
        pytest.skip("no /proc")
    assert os.stat(path).st_size == 0  # the size it reports is not what it holds
    data, _ = within(10, lambda: read_bytes(path, 2**20))  # type: ignore[misc]
    assert b"Name:" in data and len(data) > 0
    assert within(10, lambda: read_bytes(path, 16)) == "larger than the 16 bytes cap"  # stopped at cap + 1
    assert "unsupported file type (no suffix)" in scan(path)[1][0].reason  # as a root: skipped, never read


# caps at their limit and one past it (B8) --------------------------------------------------------------------


def test_folder_depth_at_the_cap_is_read_and_one_deeper_is_skipped_and_reported(tmp_path: Path) -> None:
    limit = ReadLimits().max_depth
    assert limit == 32
    folders = [f"d{i}" for i in range(1, limit + 2)]  # d1/d2/.../d33
    for depth in (limit - 1, limit, limit + 1):
        write(tmp_path.joinpath(*folders[:depth], f"at-{depth}.txt"), f"a file {depth} folders down")
    entries, skipped = scan(tmp_path)
    assert [e.rel.rsplit("/", 1)[-1] for e in entries] == ["at-31.txt", "at-32.txt"]
    assert reasons(skipped) == {"/".join(folders): "deeper than 32 folders"}


def test_file_size_at_the_cap_is_read_and_one_byte_more_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "at.txt", "x" * 1000)
    write(tmp_path / "over.txt", "x" * 1001)
    corpus = read_folder(tmp_path, limits=ReadLimits(max_file_bytes=1000))
    assert [d.doc_id for d in corpus.documents] == ["at.txt"]
    assert reasons(corpus.skipped) == {"over.txt": "larger than the 1000 bytes cap"}


def test_total_bytes_at_the_cap_are_read_and_one_byte_more_stops_with_a_report(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "x" * 600)
    write(tmp_path / "b.txt", "y" * 400)
    limits = ReadLimits(max_total_bytes=1000)
    assert [e.rel for e in scan(tmp_path, limits=limits)[0]] == ["a.txt", "b.txt"]
    write(tmp_path / "c.txt", "z")
    with pytest.raises(InputError, match="more than 1000 bytes of supported files; narrow it with include/exclude"):
        scan(tmp_path, limits=limits)
    assert len(scan(tmp_path, limits=ReadLimits(max_total_bytes=1001))[0]) == 3


def test_file_count_at_the_cap_is_read_and_one_more_stops_with_a_report(tmp_path: Path) -> None:
    for i in range(3):
        write(tmp_path / f"{i}.txt", "x")
    assert len(scan(tmp_path, limits=ReadLimits(max_files=3))[0]) == 3
    write(tmp_path / "3.txt", "x")
    with pytest.raises(InputError, match="more than 3 supported files"):
        scan(tmp_path, limits=ReadLimits(max_files=3))


# decoding any bytes (B11) ------------------------------------------------------------------------------------

ENCODINGS = {"utf-8", "utf-8-sig", "utf-16", "utf-32", "cp1252"}
BOMS = [codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE]
PIECES = [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x00", b"\r", b"\n", b"\xe9", b"a",
          b"\x00\xd8", b"\xff\xfe", "é".encode(), "e\u0301".encode()]  # fmt: skip
ANY_BYTES = st.one_of(
    st.binary(max_size=2000),
    st.tuples(st.sampled_from(BOMS), st.binary(max_size=400)).map(b"".join),
    st.lists(st.sampled_from(PIECES), max_size=60).map(b"".join),
    st.tuples(st.sampled_from(BOMS), st.lists(st.sampled_from(PIECES), max_size=60).map(b"".join)).map(b"".join),
)


@settings(max_examples=300, deadline=None, database=None)
@given(data=ANY_BYTES)
def test_any_bytes_decode_to_clean_text_or_are_called_binary(data: bytes) -> None:
    decoded = decode(data)
    has_bom = any(data.startswith(bom) for bom in BOMS)
    if decoded is None:
        assert not has_bom and b"\x00" in data[:8192]
        return
    text, encoding = decoded
    assert isinstance(text, str) and encoding in ENCODINGS
    text.encode("utf-8")  # strict: raises on a lone surrogate
    assert "\r" not in text and unicodedata.is_normalized("NFC", text)


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        (b"ok \xed\xa0\x80 ok", "ok í\u00a0€ ok", "cp1252"),  # an encoded lone surrogate: not UTF-8
        (codecs.BOM_UTF16_LE + b"\x00\xd8" + "a".encode("utf-16-le"), "\ufffda", "utf-16"),  # lone surrogate
        (codecs.BOM_UTF32_LE + "naïve ☃".encode("utf-32-le"), "naïve ☃", "utf-32"),
        (codecs.BOM_UTF32_BE + "naïve ☃".encode("utf-32-be"), "naïve ☃", "utf-32"),
        (codecs.BOM_UTF32_LE + (0xD800).to_bytes(4, "little") + "a".encode("utf-32-le"), "\ufffda", "utf-32"),
        (codecs.BOM_UTF32_LE + b"a\x00", "\ufffd", "utf-32"),  # truncated code unit
    ],
    ids=["utf8-surrogate", "utf16-surrogate", "utf32-le", "utf32-be", "utf32-surrogate", "utf32-truncated"],
)
def test_surrogates_and_utf32(data: bytes, text: str, encoding: str) -> None:
    assert decode(data) == (text, encoding)
