"""Loading documents (files, folders, JSONL chunks, LangChain, LlamaIndex, PDF) and chunking them."""

from __future__ import annotations

import json

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.testset import Document, chunk_documents, load_documents
from tests.testset.docs import write_corpus, write_pdf


def test_a_folder_is_read_recursively_in_sorted_order_with_relative_ids(tmp_path):
    docs = load_documents(write_corpus(tmp_path / "docs"))
    assert [d.id for d in docs] == ["notes.txt", "python.md", "rust.md", "sub/eiffel.html"]
    html = docs[-1].text
    assert "# Eiffel Tower" in html and "## Height" in html  # headings kept, as Markdown lines
    assert "color" not in html and "var x" not in html and "<p>" not in html
    assert "World's Fair" in html  # entities decoded


def test_every_chunk_keeps_its_document_id_offsets_and_heading(tmp_path):
    docs = load_documents(write_corpus(tmp_path / "docs"))
    text = {d.id: d.text for d in docs}
    chunks = chunk_documents(docs, chunk_tokens=32, overlap_tokens=8)
    assert len(chunks) > len(docs)
    for c in chunks:
        assert text[c.doc_id][c.start : c.end] == c.text
        assert c.id.startswith(c.doc_id + "#")
        assert not c.text.rstrip().splitlines()[-1].lstrip().startswith("#"), (
            "a chunk never ends on a heading"
        )
    typing = [c for c in chunks if "dynamically typed" in c.text]
    assert typing and all(c.heading == "Typing" for c in typing)
    assert any(c.text.startswith("## Typing") for c in typing)  # the heading travels with its text


def test_chunks_overlap_and_stay_under_the_token_budget():
    body = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(120))
    doc = Document(id="long.md", text="# Long\n\n" + body)
    chunks = chunk_documents([doc], chunk_tokens=64, overlap_tokens=16)
    assert len(chunks) >= 10
    assert all(len(c.text) <= 64 * 4 for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end, "neighbouring chunks share their overlap"
        assert b.start > a.start
    assert chunks[-1].end == len(doc.text)


def test_the_last_paragraph_is_never_lost():
    doc = Document(
        id="a.md", text="# A\n\nFirst paragraph here.\n\n## B\n\nLast paragraph, then a newline.\n"
    )
    chunks = chunk_documents([doc])
    assert any("Last paragraph" in c.text for c in chunks)


def test_jsonl_chunks_are_kept_as_given(tmp_path):
    path = tmp_path / "chunks.jsonl"
    rows = [
        {"text": "Alpha is the first letter.", "doc_id": "greek", "id": "g1", "start": 10},
        {"page_content": "Beta follows alpha.", "source": "greek"},
        {"text": "Aleph is Hebrew.", "heading": "Hebrew"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    chunks = chunk_documents(load_documents(path), chunk_tokens=4, overlap_tokens=1)  # never re-cut
    assert [(c.id, c.doc_id, c.start, c.end) for c in chunks] == [
        ("g1", "greek", 10, 36),
        ("greek#1", "greek", 0, 19),
        ("chunks.jsonl:3#2", "chunks.jsonl:3", 0, 16),
    ]
    assert chunks[2].heading == "Hebrew"
    path.write_text('{"nope": 1}\n')
    with pytest.raises(ConfigError, match="chunks.jsonl:1"):
        load_documents(path)


def test_langchain_documents_and_llamaindex_nodes():
    from langchain_core.documents import Document as LCDocument
    from llama_index.core.schema import Document as LIDocument
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    lc = [LCDocument(page_content="Paris is the capital of France.", metadata={"source": "fr.txt"})]
    li_doc = LIDocument(text="Berlin is the capital of Germany.", metadata={"file_path": "de.txt"})
    nodes = []
    for i, text in enumerate(["Rome is in Italy.", "Milan is in Italy too."]):
        node = TextNode(text=text, id_=f"n{i}", start_char_idx=20 * i, end_char_idx=20 * i + len(text))
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="it-doc")
        nodes.append(node)
    docs = load_documents([*lc, li_doc, *nodes])
    assert [d.id for d in docs] == ["fr.txt", "de.txt", "it-doc"]
    chunks = chunk_documents(docs)
    assert [(c.doc_id, c.id, c.start) for c in chunks] == [
        ("fr.txt", "fr.txt#0", 0),
        ("de.txt", "de.txt#0", 0),
        ("it-doc", "n0", 0),
        ("it-doc", "n1", 20),
    ]


def test_pdf_text_through_pypdf(tmp_path):
    pytest.importorskip("pypdf")
    pdf = write_pdf(
        tmp_path / "report.pdf", ["Quarterly revenue rose by 12 percent.", "Costs fell in March."]
    )
    (doc,) = load_documents(pdf)
    assert doc.id == "report.pdf"
    assert "Quarterly revenue rose by 12 percent." in doc.text
    (tmp_path / "bad.pdf").write_bytes(b"not a pdf")
    with pytest.raises(ConfigError, match="bad.pdf"):
        load_documents(tmp_path / "bad.pdf")


def test_bad_inputs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_documents(tmp_path / "missing")
    (tmp_path / "a.docx").write_text("x")
    with pytest.raises(ConfigError, match="unsupported file type"):
        load_documents(tmp_path / "a.docx")
    with pytest.raises(ConfigError, match="expected a path"):
        load_documents([42])
    with pytest.raises(ConfigError, match="chunk_tokens"):
        chunk_documents([], chunk_tokens=10, overlap_tokens=10)
