"""Reading documents for ``generate`` is linear and capped; a bad chunk file is one clear error (issue 39).

Hostile HTML (``"<!--" * 200_000`` ran past 300 s; ``"<a href='" * 20_000`` took 52 s), a 200 MB text
file (209 s, 1.65 GB) and a JSONL of 1,000,000 chunks (95 s, 1.77 GB) are read in linear time or refused
at a cap naming the file; a chunk file with a line nested 100,000 deep, bytes that are not UTF-8 or a
``start`` of ``"abc"`` gave tracebacks. The slow probes run in a fresh interpreter under a wall-clock
timeout and an address-space limit, far above what linear work needs on a loaded machine.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from ragmetrics.cli import main
from ragmetrics.errors import ConfigError
from ragmetrics.testset import Document, chunk_documents, generate_sync, load_documents, prepare
from ragmetrics.testset.limits import MAX_CHUNK_CHARS, MAX_FILE_BYTES, DocumentLimits
from tests.limited import PEAK_MB, run_limited
from tests.testset.docs import EIFFEL_HTML

PROBE_TIMEOUT_S = 120.0
MEMORY_LIMIT = 2 * 1024**3


def _probe(code: str, *args: str) -> str:
    proc = run_limited(["-c", textwrap.dedent(code), *args], memory=MEMORY_LIMIT, timeout=PROBE_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


HOSTILE_HTML = {
    "a_href_20k": "<a href='" * 20_000,
    "a_href_1_8MB": "<a href='" * 200_000,
    "comments_800KB": "<!--" * 200_000,
    "declarations": "<!" * 300_000,
    "processing": "<?" * 300_000,
    "end_tags": "</a" * 200_000,
    "cdata": "<![CDATA[" * 100_000,
    "open_script": "<script>" + "<script>" * 100_000,
    "tags_no_close": "<a b=c " * 100_000,
    "charrefs": "&#" * 300_000,
    "lone_lt": "<" * 600_000,
    "mixed": "<p>x</p><a href='" * 60_000,
}


def test_hostile_html_is_read_in_linear_time_as_a_browser_reads_it(tmp_path):
    folder = tmp_path / "html"
    folder.mkdir()
    for name, markup in HOSTILE_HTML.items():
        (folder / f"{name}.html").write_text("<h1>Title</h1><p>Intro text stays.</p>" + markup)
    out = _probe(
        """
        import sys, time
        from pathlib import Path
        from ragmetrics.errors import ConfigError
        from ragmetrics.testset import chunk_documents, load_documents

        for path in sorted(Path(sys.argv[1]).iterdir()):
            t = time.perf_counter()
            try:
                (doc,) = load_documents(path)
                chunk_documents([doc])
                ok = doc.text.startswith("# Title\\n\\nIntro text stays.")
                result = "text" if ok else repr(doc.text[:80])
            except ConfigError as exc:
                result = f"error {exc}"
            print(path.stem, result, f"{time.perf_counter() - t:.2f}", flush=True)
        """,
        str(folder),
    )
    lines = dict((line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in out.splitlines())
    assert set(lines) == set(HOSTILE_HTML), out
    for name, rest in lines.items():
        result, seconds = rest.rsplit(" ", 1)
        assert result == "text", (name, result)
        assert float(seconds) < 15, (name, seconds)  # linear: well under a second each when idle


def test_an_unterminated_construct_ends_the_page_as_in_a_browser(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<p>Shown &amp; kept.</p><!-- a note never closed <p>hidden</p>")
    assert load_documents(page)[0].text == "Shown & kept."
    page.write_text("<p>Shown.</p><a href='never closed>hidden</a>")
    assert load_documents(page)[0].text == "Shown."
    page.write_text("<p>Shown.</p><script>var x = '<p>hidden</p>'")
    assert load_documents(page)[0].text == "Shown."
    page.write_text("<p>Fish &amp; chips &#169</p> a < b &")
    assert load_documents(page)[0].text == "Fish & chips ©\n\na < b &"
    page.write_text(EIFFEL_HTML)  # an ordinary page reads as before
    text = load_documents(page)[0].text
    assert text.startswith("# Eiffel Tower\n\nThe Eiffel Tower is a wrought-iron lattice tower in Paris.")
    assert "World's Fair" in text and "## Height" in text


def test_headings_and_whitespace_runs_chunk_in_linear_time():
    _probe(
        """
        from ragmetrics.testset import Document, chunk_documents

        run = " " * 200_000
        texts = [
            "# x" + run + "y\\n\\nSome text here for the chunk.",   # a heading line with a long inner run
            "# h\\n\\nword word word word.\\n\\n" * 3_000,             # many sections
            "a" + run + "b. " + "\\n" + run + "c.",
        ]
        for i, text in enumerate(texts):
            chunks = chunk_documents([Document(id=f"d{i}", text=text)])
            assert all(text[c.start : c.end] == c.text for c in chunks)
        print("ok")
        """
    )


@pytest.mark.parametrize("suffix", [".txt", ".md", ".html", ".jsonl", ".pdf"])
def test_a_file_over_the_byte_cap_is_refused_before_it_is_read(tmp_path, suffix):
    big = tmp_path / f"big{suffix}"
    with big.open("wb") as fh:  # sparse: MAX_FILE_BYTES + 1 bytes that take no disk space
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ConfigError, match=r"big\S* .*33,554,433 bytes.*33,554,432.*MAX_FILE_BYTES"):
        load_documents(big)
    if suffix != ".jsonl":  # a folder's files too (a folder's .jsonl files are not read)
        with pytest.raises(ConfigError, match="MAX_FILE_BYTES"):
            load_documents(tmp_path)


def test_the_cli_refuses_a_200_mb_text_file_at_once_with_exit_2(tmp_path):
    big = tmp_path / "huge.txt"
    with big.open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)
    argv = ["-m", "ragmetrics.cli", "generate", str(big), "--out", str(tmp_path / "t.jsonl")]
    proc = run_limited(argv, memory=MEMORY_LIMIT, timeout=60, what="generate of a 200 MB file")
    assert proc.returncode == 2, proc.stderr
    assert "huge.txt" in proc.stderr and "MAX_FILE_BYTES" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_document_character_caps_name_the_document(tmp_path):
    (tmp_path / "a.txt").write_text("x" * 100)
    limits = DocumentLimits(document_chars=100, total_chars=150)
    assert load_documents(tmp_path / "a.txt", limits=limits)[0].text == "x" * 100
    (tmp_path / "b.txt").write_text("y" * 101)
    with pytest.raises(ConfigError, match=r"b\.txt: 101 characters.*100 per document.*MAX_DOCUMENT_CHARS"):
        load_documents(tmp_path / "b.txt", limits=limits)
    (tmp_path / "b.txt").write_text("y" * 60)
    with pytest.raises(ConfigError, match=r"b\.txt: .*160 characters.*150 per run.*MAX_TOTAL_CHARS"):
        load_documents(tmp_path, limits=limits)
    with pytest.raises(ConfigError, match=r"doc-9: .*MAX_DOCUMENT_CHARS"):  # Document objects as well
        load_documents([Document(id="doc-9", text="z" * 101)], limits=limits)
    with pytest.raises(ConfigError, match="DocumentLimits: chunks must be an integer >= 1"):
        DocumentLimits(chunks=0)


def test_chunk_caps_hold_for_cut_and_ready_chunks(tmp_path):
    doc = Document(id="long.md", text="One sentence here. " * 400)
    limits = DocumentLimits(chunks=5)
    with pytest.raises(ConfigError, match=r"long\.md: more than 5 chunks.*MAX_CHUNKS"):
        chunk_documents([doc], chunk_tokens=16, overlap_tokens=0, limits=limits)
    assert len(chunk_documents([doc], chunk_tokens=512, overlap_tokens=0, limits=limits)) == 4
    with pytest.raises(ConfigError, match="chunk_tokens.*8192"):
        chunk_documents([doc], chunk_tokens=MAX_CHUNK_CHARS // 4 + 1)
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": f"Chunk {i} has some text."}) + "\n" for i in range(6)))
    with pytest.raises(ConfigError, match=r"c\.jsonl:6: more than 5 chunks.*MAX_CHUNKS"):
        load_documents(path, limits=limits)
    path.write_text(json.dumps({"text": "x" * 101}) + "\n")
    with pytest.raises(ConfigError, match=r"c\.jsonl:1: a chunk of 101 characters.*MAX_CHUNK_CHARS"):
        load_documents(path, limits=DocumentLimits(chunk_chars=100))
    chunks = [c.model_copy(update={"id": f"c{i}"}) for i, c in enumerate(chunk_documents([doc]))]
    with pytest.raises(ConfigError, match="MAX_CHUNKS"):  # Chunk objects passed straight in
        prepare(chunks * 2, limits=DocumentLimits(chunks=len(chunks)))


def test_a_million_chunks_are_refused_at_the_cap_in_bounded_time_and_memory(tmp_path):
    path = tmp_path / "million.jsonl"
    line = b'{"text": "A fact."}\n'  # 19 MB in all: under the file cap, so the chunk cap stops it
    with path.open("wb") as fh:
        for _ in range(100):
            fh.write(line * 10_000)
    out = _probe(
        """
        import sys, time
        from ragmetrics.errors import ConfigError
        from ragmetrics.testset import load_documents
        t = time.perf_counter()
        try:
            load_documents(sys.argv[1])
        except ConfigError as exc:
            print(exc)
        print(f"{time.perf_counter() - t:.2f} {PEAK_MB}")
        """.replace("PEAK_MB", PEAK_MB),
        str(path),
    )
    message, numbers = out.strip().splitlines()
    assert "million.jsonl:20001: more than 20,000 chunks" in message and "MAX_CHUNKS" in message
    seconds, peak_mb = numbers.split()
    assert float(seconds) < 20 and int(peak_mb) < 600, numbers


BAD_LINES = {
    "deep": ("[" * 100_000 + "]" * 100_000, ":2: nested too deeply"),
    "start_text": (json.dumps({"text": "Some text.", "start": "abc"}), ":2: start must be an integer >= 0"),
    "start_negative": (json.dumps({"text": "Some text.", "start": -5}), ":2: start must be an integer >= 0"),
    "start_huge": ('{"text": "Some text.", "start": 1e999}', r":2: start must be an integer >= 0, got inf"),
    "start_nan": ('{"text": "Some text.", "start": NaN}', ":2: start must be an integer >= 0, got nan"),
    "start_bool": ('{"text": "Some text.", "start": true}', ":2: start must be an integer >= 0, got True"),
    "text_number": ('{"text": 5}', ":2: expected an object with a 'text' string"),
    "not_object": ("[1, 2]", ":2: expected an object with a 'text' string"),
    "doc_id_dict": ('{"text": "Some text.", "doc_id": {"a": 1}}', ":2: field 'doc_id' must be a string"),
    "id_list": ('{"text": "Some text.", "id": [1]}', ":2: field 'id' must be a string"),
    "heading_number": ('{"text": "Some text.", "heading": 3}', ":2: field 'heading' must be a string"),
    "surrogate": ('{"text": "Some \\ud800 text."}', r":2: field 'text' must be valid Unicode.*U\+D800"),
    "not_json": ("{nope", ":2: not JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_chunk_line_is_one_clear_error_naming_file_line_and_field(tmp_path, case):
    bad, expected = BAD_LINES[case]
    path = tmp_path / "chunks.jsonl"
    path.write_text(json.dumps({"text": "A good first chunk.", "id": 7, "start": 3}) + "\n" + bad + "\n")
    with pytest.raises(ConfigError, match=rf"chunks\.jsonl{expected}"):
        load_documents(path)


def test_bytes_that_are_not_utf8_name_the_line_and_the_byte_offset(tmp_path):
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match=r"chunks\.jsonl:2: byte e9 at byte offset 30 is not valid UTF-8"):
        load_documents(path)
    text = tmp_path / "latin.txt"
    text.write_bytes(b"caf\xe9 au lait")
    with pytest.raises(ConfigError, match=r"latin\.txt: byte e9 at byte offset 3 is not valid UTF-8"):
        load_documents(text)
    page = tmp_path / "x.html"
    page.write_bytes(b"\xef\xbb\xbf<p>BOM is fine.</p>")
    assert load_documents(page)[0].text == "BOM is fine."


def test_bad_chunk_files_are_exit_2_before_any_call(tmp_path, fake_llm_server, openai_spec, capsys):
    for case in ("deep", "start_text", "start_huge", "surrogate"):
        path = tmp_path / f"{case}.jsonl"
        path.write_text(json.dumps({"text": "A good chunk of text here."}) + "\n" + BAD_LINES[case][0] + "\n")
        code = main(["generate", str(path), "--out", str(tmp_path / "t.jsonl"), "--judge", openai_spec])
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"{case}.jsonl:2: " in err and "Traceback" not in err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\xfd not text")
    assert main(["generate", str(bad), "--out", str(tmp_path / "t.jsonl"), "--judge", openai_spec]) == 2
    assert "bad.txt: byte" in capsys.readouterr().err
    assert fake_llm_server.calls.total() == 0


def test_generate_takes_limits(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nAlpha is the first letter of the Greek alphabet.\n")
    with pytest.raises(ConfigError, match="MAX_DOCUMENT_CHARS"):
        generate_sync(tmp_path, size=1, llm="offline", limits=DocumentLimits(document_chars=10))
    assert generate_sync(tmp_path, size=1, llm="offline", limits=DocumentLimits()).report.written == 1
