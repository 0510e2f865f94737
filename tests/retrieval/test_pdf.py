"""PDF files are read through pypdf; broken or encrypted ones are skipped with a reason, never a crash."""

from __future__ import annotations

import io

import pytest

from selfrag.retrieval.corpus import read_folder

pytest.importorskip("pypdf")


def make_pdf(text: str) -> bytes:
    """A minimal one-page PDF showing `text` in Helvetica."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def test_pdf_text_is_indexed_and_broken_pdfs_are_skipped(tmp_path):
    (tmp_path / "policy.pdf").write_bytes(make_pdf("Refunds are accepted within 30 days."))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf body")
    corpus = read_folder(tmp_path)
    assert [(d.doc_id, d.text) for d in corpus.documents] == [("policy.pdf", "Refunds are accepted within 30 days.")]
    assert [(s.path, s.reason.split(" (")[0]) for s in corpus.skipped] == [("broken.pdf", "unreadable PDF")]


def test_encrypted_and_oversized_pdfs_are_skipped_with_their_reason(tmp_path):
    from pypdf import PdfReader, PdfWriter

    from selfrag.retrieval.formats import MAX_PDF_PAGES

    locked = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf("Secret fee schedule."))))
    locked.encrypt(user_password="pw", owner_password="owner")
    locked.write(tmp_path / "locked.pdf")
    huge = PdfWriter()
    for _ in range(MAX_PDF_PAGES + 1):  # blank pages: a small file that declares one page over the cap
        huge.add_blank_page(width=72, height=72)
    huge.write(tmp_path / "huge.pdf")
    at_cap = PdfWriter()
    for _ in range(MAX_PDF_PAGES):
        at_cap.add_blank_page(width=72, height=72)
    at_cap.write(tmp_path / "at-cap.pdf")
    corpus = read_folder(tmp_path)
    reasons = {s.path: s.reason for s in corpus.skipped}
    assert reasons["locked.pdf"].startswith("encrypted PDF")
    assert reasons["huge.pdf"].startswith(f"PDF has more than {MAX_PDF_PAGES} pages")
    assert "at-cap.pdf" not in reasons  # at the cap it is read (blank pages: no text, so no document either)
