"""Test sets from the user's own documents: grounded questions, references verified claim by claim.

:func:`generate` (async) and :func:`generate_sync` load and chunk documents (:mod:`.loading`,
:mod:`.documents`, under the caps of :mod:`.limits`), set aside chunks holding instruction-like text
(:mod:`.instructions`), write candidate questions with an LLM or the offline extractive generator
(:mod:`.extractive`), verify every reference with the claim machinery (:mod:`.verify`), drop near
duplicates, and append the accepted items to a JSONL file that a rerun resumes (:mod:`.generator`).
"""

from __future__ import annotations

from ragmetrics.testset.budget import estimate_slots
from ragmetrics.testset.documents import Chunk, Document, chunk_documents
from ragmetrics.testset.generator import Testset, generate, generate_sync, prepare
from ragmetrics.testset.limits import DocumentLimits
from ragmetrics.testset.loading import load_chunks, load_documents
from ragmetrics.testset.records import KINDS, STYLES, GeneratedItem, ItemClaim, Reject, TestsetItem
from ragmetrics.testset.report import TestsetReport
from ragmetrics.testset.slots import DEFAULT_MIX, Slot, plan_slots

__all__ = [
    "DEFAULT_MIX",
    "KINDS",
    "STYLES",
    "Chunk",
    "Document",
    "DocumentLimits",
    "GeneratedItem",
    "ItemClaim",
    "Reject",
    "Slot",
    "Testset",
    "TestsetItem",
    "TestsetReport",
    "chunk_documents",
    "estimate_slots",
    "generate",
    "generate_sync",
    "load_chunks",
    "load_documents",
    "plan_slots",
    "prepare",
]
